/* mean.c — Out = (1/n) * sum of all n elements of X, a tensor of shape [1]
 * (what a loss is reduced to). Backward spreads the gradient evenly:
 * dX[i] = dOut[0] / n. The sum is accumulated in double for both dtypes. */
#include "mean.h"

#include <math.h>

#include "base/tmpl.h"
#include "core/op.h"

static const pd_slot_def inputs[] = {[X] = {"X", "input tensor of any shape", 0}};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "the mean of all elements of X, shape [1]", 0}};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, 1, (int64_t[]){1});
}

#define T float
#include "mean_t.h"
#undef T
#define T double
#include "mean_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_mean_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_mean_bwd),
#endif
};

const pd_op_def pd_op_mean = {
    .type = "mean",
    .comment = "Out = mean of all elements of X, shape [1].",
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
