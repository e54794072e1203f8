/* mean.c — Out = (1/n) * sum of all n elements of X, a tensor of shape [1]
 * (what a loss is reduced to). Backward spreads the gradient evenly:
 * dX[i] = dOut[0] / n. The sum is accumulated in double for both dtypes. */
#include <math.h>

#include "gpu_ops.h"
#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };

static const pd_slot_def inputs[] = {{"X", "input tensor of any shape", 0}};
static const pd_slot_def outputs[] = {{"Out", "the mean of all elements of X, shape [1]", 0}};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, 1, (int64_t[]){1});
}

/* An empty X has no mean: Out is NaN, as in NumPy. */
#define MEAN_FORWARD(T)                                           \
  static pd_status forward_##T(pd_ctx *c) {                       \
    pd_tensor *x = pd_in(c, X);                                   \
    const T *xs = PD_DATA(x, T);                                  \
    int64_t n = pd_tensor_numel(x);                               \
    double s = 0;                                                 \
    for (int64_t i = 0; i < n; i++) s += xs[i];                   \
    PD_DATA(pd_out(c, OUT), T)[0] = (T)(n ? s / (double)n : NAN); \
    return PD_OK;                                                 \
  }
MEAN_FORWARD(float)
MEAN_FORWARD(double)

/* Grad op slots (see op.h): inputs X Out dOut, output dX. */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT) };

#define MEAN_BACKWARD(T)                                                          \
  static pd_status backward_##T(pd_ctx *c) {                                      \
    pd_tensor *dx = pd_out(c, X);                                                 \
    if (!dx) return PD_OK;                                                        \
    int64_t n = pd_tensor_numel(dx);                                              \
    T g = (T)(PD_DATA(pd_in(c, G_DOUT), T)[0] / (double)n), *gx = PD_DATA(dx, T); \
    for (int64_t i = 0; i < n; i++) gx[i] = g;                                    \
    return PD_OK;                                                                 \
  }
MEAN_BACKWARD(float)
MEAN_BACKWARD(double)

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
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
