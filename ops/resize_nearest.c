/* resize_nearest.c — nearest-neighbour resize of the two spatial dims of
 * X [N, C, H, W] by `scales` (ONNX Resize with mode nearest, asymmetric
 * coordinates and nearest_mode floor: what torch.nn.Upsample(mode="nearest")
 * and F.interpolate export): Out [N, C, floor(H sh), floor(W sw)], each
 * element the input at min(floor(o / s), n - 1) per dim. Backward: dX sums
 * dOut over the outputs that read the element (a gather, resize_nearest.h).
 * The kernels are written once, for any element type, in
 * resize_nearest_t.h. */
#include "resize_nearest.h"

#include "base/tmpl.h"
#include "core/op.h"
#include "cpu/parallel.h"

static const pd_slot_def inputs[] = {[X] = {"X", "images [N, C, H, W], float32 or float64", 0}};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "[N, C, floor(H * sh), floor(W * sw)]", 0}};
static const pd_attr_def attrs[] = {
    [A_SCALES] = {"scales", "the factors [sh, sw] of the height and the width, each > 0", PD_ATTR_FLOATS,
                  .required = true, .min_kind = PD_GT, .min = 0},
};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  const pd_attr *s = pd_attr_at(c, A_SCALES);
  char xs[128];
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  if (x->ndim != 4)
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be 4-D [N, C, H, W], got shape %s",
                       pd_dims_str(x->ndim, x->dims, xs, sizeof xs));
  if (s->n != 2) return pd_ctx_fail(c, PD_ERR_INPUT, "attribute \"scales\" must hold 2 values [sh, sw], got %d", s->n);
  for (int i = 0; i < 2; i++)
    if (!isfinite(s->floats[i]))
      return pd_ctx_fail(c, PD_ERR_INPUT, "attribute \"scales\" must be finite, got %g", s->floats[i]);
  int64_t dims[4] = {x->dims[0], x->dims[1], -1, -1};
  for (int i = 0; i < 2; i++) {
    int64_t n = x->dims[2 + i];
    if (n < 0) continue;
    dims[2 + i] = pd_rn_size(n, s->floats[i]);
    if (n > 0 && dims[2 + i] == 0)
      return pd_ctx_fail(c, PD_ERR_INPUT, "scale %g leaves nothing of dim %d of X (shape %s): floor(%lld * %g) = 0",
                         s->floats[i], 2 + i, pd_dims_str(x->ndim, x->dims, xs, sizeof xs), (long long)n, s->floats[i]);
  }
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, 4, dims);
}

typedef struct job {
  const pd_rn_geom *g;
  const void *x; /* X forward, dOut backward */
  void *y;       /* Out forward, dX backward */
} job;

#define T float
#include "resize_nearest_t.h"
#undef T
#define T double
#include "resize_nearest_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_resize_nearest_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_resize_nearest_bwd),
#endif
};

const pd_op_def pd_op_resize_nearest = {
    .type = "resize_nearest",
    .comment = "Nearest-neighbour resize of X [N, C, H, W] by scales [sh, sw]: Out [N, C, floor(H * sh), floor(W * "
               "sw)], element (i, j) read from X at (min(floor(i / sh), H - 1), min(floor(j / sw), W - 1)) (ONNX "
               "Resize nearest with asymmetric coordinates and floor, as torch.nn.Upsample(mode=\"nearest\") "
               "exports). The gradient sums into the source cells.",
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
