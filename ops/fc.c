/* fc.c — fully connected layer: Out = act(X · W + B), with X flattened to
 * [N, K] (every dim after the first is a feature). The weight [K, size] and
 * bias [size] are parameters whose shapes fc infers from X and `size`.
 * The kernels are written once, for any element type, in fc_t.h. */
#include "fc.h"

#include "act.h"
#include "base/tmpl.h"
#include "core/op.h"
#include "cpu/blas.h"
#include "cpu/parallel.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "input [N, ...]; all dims after the first are features (K in total)", 0},
    [W] = {"W", "weight [K, size]", PD_SLOT_PARAM},
    [B] = {"B", "bias [size]; leave out for none", PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "act(X W + B), [N, size]", 0}};
static const pd_attr_def attrs[] = {
    [A_SIZE] = {"size", "number of output features", PD_ATTR_INT, .required = true, .min_kind = PD_GT, .min = 0},
    [A_ACT] = {"act", "activation fused after the product", PD_ATTR_STRING, .def = "s: \"none\"",
               .one_of = pd_act_names},
};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  int64_t n, k, size = pd_attr_i(c, A_SIZE);
  if (x->ndim < 2) return pd_ctx_fail(c, PD_ERR_INPUT, "input X must have at least 2 dims [N, K], got %d", x->ndim);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  pd_fc_flat(x, &n, &k);
  if (k < 0) return pd_ctx_fail(c, PD_ERR_INPUT, "only the first dim of X may be the batch (-1)");
  pd_status st = pd_ctx_param_shape(c, W, x->dtype, 2, (int64_t[]){k, size});
  if (!st && pd_in(c, B)) st = pd_ctx_param_shape(c, B, x->dtype, 1, &size);
  if (st) return st;
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, 2, (int64_t[]){n, size});
}

static double flops(pd_ctx *c) {
  int64_t n, k;
  pd_fc_flat(pd_in(c, X), &n, &k);
  return 2.0 * (double)n * (double)k * (double)pd_attr_i(c, A_SIZE);
}

/* Backward: a product for dW and one for dX, each when wanted. */
static double grad_flops(pd_ctx *c) {
  int64_t n, k;
  pd_fc_flat(pd_in(c, G_X), &n, &k);
  double one = 2.0 * (double)n * (double)k * (double)pd_attr_i(c, A_SIZE);
  return one * ((pd_out(c, W) != NULL) + (pd_out(c, X) != NULL));
}

#define FC_GRAD_GRAIN ((int64_t)1 << 15) /* elements of dPre a part at least */
#define T float
#include "fc_t.h"
#undef T
#define T double
#include "fc_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_fc_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_fc_bwd),
#endif
};

/* left out: "<out>.w", "<out>.b" (docs/netdesc.md, "Left out") */
static const char *const fill_in[] = {[W] = "w", [B] = "b"};
const pd_op_def pd_op_fc = {
    .type = "fc",
    .fill_in = fill_in,
    .comment = "Fully connected layer: Out = act(X W + B). W and B are parameters; their shapes "
               "follow from X and `size`, so they need not be declared.",
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
    .flags = PD_OP_STACKS_ROWS, /* a row of X per row of Out; dW and dB sum over the rows */
};
