/* pad.c — pads X with `pads` elements before and after each dim (ONNX Pad,
 * PyTorch's F.pad): the constant `value`, the mirror image about the edge
 * element (reflect) or the edge element repeated (edge). The batch dim is
 * not padded. Backward: dX gathers dOut of every output that read the
 * element (pad.h). The kernels are written once, for any element type, in
 * pad_t.h. */
#include "pad.h"

#include "base/tmpl.h"
#include "core/op.h"
#include "cpu/parallel.h"

static const pd_slot_def inputs[] = {[X] = {"X", "input tensor, float32 or float64", 0}};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "X padded: dim d of size X.shape[d] + begin_d + end_d", 0}};
static const pd_attr_def attrs[] = {
    [A_PADS] = {"pads",
                "the pads, ONNX's order: [d0_begin, d1_begin, ..., d0_end, d1_end, ...], one pair per dim of X; the "
                "batch dim's must be 0",
                PD_ATTR_INTS, .required = true, .min_kind = PD_GE, .min = 0},
    [A_MODE] = {"mode",
                "\"constant\": value; \"reflect\": the mirror image about the edge element (pads < the dim's size); "
                "\"edge\": the edge element repeated",
                PD_ATTR_STRING, .def = "s: \"constant\"", .one_of = pd_pad_modes},
    [A_VALUE] = {"value", "the value padded with in constant mode", PD_ATTR_FLOAT, .def = "f: 0"},
};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  const pd_attr *pads = pd_attr_at(c, A_PADS);
  char xs[128];
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  if (pads->n != 2 * x->ndim)
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "attribute \"pads\" has %d values; X of shape %s (rank %d) needs %d: [d0_begin, ..., "
                       "d0_end, ...]",
                       pads->n, pd_dims_str(x->ndim, x->dims, xs, sizeof xs), x->ndim, 2 * x->ndim);
  if (x->ndim > 0 && (pads->ints[0] != 0 || pads->ints[x->ndim] != 0))
    return pd_ctx_fail(c, PD_ERR_INPUT, "the batch dim (dim 0) must not be padded, got pads %lld before and %lld after",
                       (long long)pads->ints[0], (long long)pads->ints[x->ndim]);
  pd_pad_geom g = pd_pad_geom_of(c, x);
  int64_t dims[PD_MAX_DIMS];
  for (int d = 0; d < x->ndim; d++) {
    int64_t n = x->dims[d], before = g.pb[d], after = g.pe[d];
    dims[d] = n < 0 ? -1 : g.out[d];
    if (n < 0 || (before == 0 && after == 0)) continue;
    if (g.mode == PD_PAD_REFLECT && (before >= n || after >= n))
      return pd_ctx_fail(c, PD_ERR_INPUT,
                         "mode \"reflect\" needs pads smaller than the dim: dim %d of X (shape %s) is %lld, pads "
                         "%lld before and %lld after",
                         d, pd_dims_str(x->ndim, x->dims, xs, sizeof xs), (long long)n, (long long)before,
                         (long long)after);
    if (g.mode == PD_PAD_EDGE && n == 0)
      return pd_ctx_fail(c, PD_ERR_INPUT, "mode \"edge\" cannot pad dim %d of X (shape %s): it is empty", d,
                         pd_dims_str(x->ndim, x->dims, xs, sizeof xs));
  }
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim, dims);
}

typedef struct job {
  const pd_pad_geom *g;
  const void *x; /* X forward, dOut backward */
  void *y;       /* Out forward, dX backward */
  double value;
} job;

#define T float
#include "pad_t.h"
#undef T
#define T double
#include "pad_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_pad_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_pad_bwd),
#endif
};

const pd_op_def pd_op_pad = {
    .type = "pad",
    .comment = "Pads X with pads[d] elements before and pads[rank + d] after each dim d (ONNX Pad's order): the "
               "constant value, the mirror image about the edge element (reflect; pads smaller than the dim) or the "
               "edge element repeated (edge, PyTorch's replicate). The batch dim is not padded.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
