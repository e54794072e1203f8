/* layer_norm.c — layer normalisation over the trailing dims of X from
 * `axis` on (ONNX LayerNormalization, PyTorch's layer_norm): each row of
 * those dims becomes (X - mean) / sqrt(var + epsilon) * Scale + Bias, with
 * the row's mean and biased variance. Scale and Bias (shape X.shape[axis:])
 * may each be left out. The backward pass recomputes the row statistics
 * from X (as batch_norm does), so the op has no saved-statistics output.
 * The kernels are written once, for any element type, in layer_norm_t.h;
 * sums in double. */
#include "layer_norm.h"

#include <math.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "cpu/parallel.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "input tensor, float32 or float64", 0},
    [SCALE] = {"Scale", "scale (gamma), shape X.shape[axis:]; starts at 1; leave out for none",
               PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
    [BIAS] = {"Bias", "shift (beta), shape X.shape[axis:]; starts at 0; leave out for none",
              PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
};
static const pd_slot_def outputs[] = {
    [Y] = {"Y", "(X - mean) / sqrt(var + epsilon) * Scale + Bias, X's shape", 0},
};
static const pd_attr_def attrs[] = {
    [A_AXIS] = {"axis",
                "the first normalised dim; the dims from it to the last are normalised together "
                "(negative: counted from the end, -1 the last)",
                PD_ATTR_INT, .def = "i: -1"},
    [A_EPSILON] = {"epsilon", "added to the variance before the square root", PD_ATTR_FLOAT, .def = "f: 1e-5",
                   .min_kind = PD_GT, .min = 0},
};
static const double param_init[] = {NAN, 1, 0};

/* The axis as a dim index, -1 when out of range. */
static int axis_of(pd_ctx *c, int ndim) {
  int64_t a = pd_attr_i(c, A_AXIS);
  if (a < 0) a += ndim;
  return a >= 0 && a < ndim ? (int)a : -1;
}

static pd_ln_dims dims_of(pd_ctx *c, const pd_tensor *x) {
  int a = axis_of(c, x->ndim);
  pd_ln_dims r = {1, 1};
  for (int i = 0; i < x->ndim; i++) *(i < a ? &r.rows : &r.d) *= x->dims[i];
  return r;
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  char xs[128];
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  int a = axis_of(c, x->ndim);
  if (a < 0)
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "attribute \"axis\" is %lld, out of range for X of shape %s (rank %d: "
                       "-%d to %d)",
                       (long long)pd_attr_i(c, A_AXIS), pd_dims_str(x->ndim, x->dims, xs, sizeof xs), x->ndim, x->ndim,
                       x->ndim - 1);
  pd_status st = PD_OK;
  for (int s = SCALE; s <= BIAS && !st; s++) {
    if (!pd_in(c, s)) continue;
    for (int i = a; i < x->ndim; i++)
      if (x->dims[i] < 0)
        return pd_ctx_fail(c, PD_ERR_INPUT,
                           "input %s needs the normalised dims of X (from axis %d) known, got X of shape %s",
                           c->op->def->inputs[s].name, a, pd_dims_str(x->ndim, x->dims, xs, sizeof xs));
    st = pd_ctx_param_shape(c, s, x->dtype, x->ndim - a, x->dims + a);
  }
  if (!st) st = pd_ctx_set_shape(c, pd_out(c, Y), x->dtype, x->ndim, x->dims);
  return st;
}

/* About 8 operations per element forward (two statistics passes, the
 * affine map) and 12 backward. */
static double flops(pd_ctx *c) { return 8.0 * (double)pd_tensor_numel(pd_in(c, X)); }
static double grad_flops(pd_ctx *c) { return 12.0 * (double)pd_tensor_numel(pd_in(c, G_X)); }

/* The op's work tensor as n doubles (the backward's row statistics). */
static double *scratch(pd_ctx *c, int64_t n, pd_status *st) {
  pd_tensor *t = &c->op->work[0];
  t->dtype = PD_F64;
  *st = pd_tensor_set_dims(t, 1, &n, c->err);
  if (!*st) *st = pd_ctx_alloc(c, t);
  return *st ? NULL : pd_tensor_data(t);
}

/* Rows (forward, dX) or column ranges (dScale, dBias) split among threads. */
typedef struct job {
  pd_ln_dims n;
  double eps;
  const void *x, *scale, *bias, *dy;
  void *y, *dscale, *dbias; /* y: Y forward, dX backward */
  double *stats;            /* backward: mean and inv per row */
} job;

#define T float
#include "layer_norm_t.h"
#undef T
#define T double
#include "layer_norm_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_layer_norm_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_layer_norm_bwd),
#endif
};

const pd_op_def pd_op_layer_norm = {
    .type = "layer_norm",
    .comment = "Layer normalisation: each row of the dims of X from axis to the last becomes (X - mean) / sqrt(var + "
               "epsilon) * Scale + Bias, with the row's mean and biased variance (ONNX LayerNormalization, "
               "PyTorch's layer_norm). Scale and Bias have shape X.shape[axis:], are parameters starting at 1 and "
               "0, and may each be left out.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .flops = flops,
    .grad_flops = grad_flops,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
    .param_init = param_init,
};
