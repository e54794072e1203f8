/* square_error.c — elementwise squared difference: Out = (X - Y)^2, X and Y of
 * one shape. Backward: dX = 2 (X - Y) dOut, dY = -dX. A regression loss per
 * element; mse is its mean in one op. */
#include "square_error.h"

#include "base/tmpl.h"
#include "core/op.h"
#include "kmath.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "prediction, any shape", 0},
    [Y] = {"Y", "target, the shape of X", 0},
};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "(X - Y)^2, the shape of X", 0}};

/* Dims agree unless both are known and differ (-1: the batch, not known yet). */

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y);
  char xs[128], ys[128];
  if (!pd_dtype_is_float(x->dtype) || y->dtype != x->dtype)
    return pd_ctx_fail(c, PD_ERR_INPUT, "X and Y must both be float32 or both float64, got %s and %s",
                       pd_dtype_name(x->dtype), pd_dtype_name(y->dtype));
  bool same = x->ndim == y->ndim;
  for (int i = 0; same && i < x->ndim; i++) same = pd_dim_fits(x->dims[i], y->dims[i]);
  if (!same)
    return pd_ctx_fail(c, PD_ERR_INPUT, "X and Y must have the same shape, got %s and %s",
                       pd_dims_str(x->ndim, x->dims, xs, sizeof xs), pd_dims_str(y->ndim, y->dims, ys, sizeof ys));
  int64_t dims[PD_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++) dims[i] = x->dims[i] >= 0 ? x->dims[i] : y->dims[i];
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim, dims);
}

#define T float
#include "square_error_t.h"
#undef T
#define T double
#include "square_error_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_square_error_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_square_error_bwd),
#endif
};

const pd_op_def pd_op_square_error = {
    .type = "square_error",
    .comment = "Elementwise squared error Out = (X - Y)^2, X and Y of one shape; gradients flow to both.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
