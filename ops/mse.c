/* mse.c — mean squared error: Out [1] = mean((X - Y)^2) over all n elements,
 * X and Y of one shape, summed in double in a fixed order. Backward:
 * dX = 2 (X - Y) dOut / n, dY = -dX. An empty X gives 0. */
#include "mse.h"

#include "base/tmpl.h"
#include "core/op.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "prediction, any shape", 0},
    [Y] = {"Y", "target, the shape of X", 0},
};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "mean of (X - Y)^2 over every element, [1]", 0}};

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
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, 1, (int64_t[]){1});
}

#define T float
#include "mse_t.h"
#undef T
#define T double
#include "mse_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_mse_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_mse_bwd),
#endif
};

const pd_op_def pd_op_mse = {
    .type = "mse",
    .comment = "Mean squared error Out [1] = mean((X - Y)^2) over every element; X and Y have the same "
               "shape. Gradients flow to both.",
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
