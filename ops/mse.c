/* mse.c — mean squared error: Out [1] = mean((X - Y)^2) over all n elements,
 * X and Y of one shape, summed in double in a fixed order. Backward:
 * dX = 2 (X - Y) dOut / n, dY = -dX. An empty X gives 0. */
#include "gpu_ops.h"
#include "core/op.h"

enum { X, Y, N_IN };
enum { OUT, N_OUT };

static const pd_slot_def inputs[] = {
    {"X", "prediction, any shape", 0},
    {"Y", "target, the shape of X", 0},
};
static const pd_slot_def outputs[] = {{"Out", "mean of (X - Y)^2 over every element, [1]", 0}};

/* Dims agree unless both are known and differ (-1: the batch, not known yet). */
static bool dim_fits(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y);
  char xs[128], ys[128];
  if (!pd_dtype_is_float(x->dtype) || y->dtype != x->dtype)
    return pd_ctx_fail(c, PD_ERR_INPUT, "X and Y must both be float32 or both float64, got %s and %s",
                       pd_dtype_name(x->dtype), pd_dtype_name(y->dtype));
  bool same = x->ndim == y->ndim;
  for (int i = 0; same && i < x->ndim; i++) same = dim_fits(x->dims[i], y->dims[i]);
  if (!same)
    return pd_ctx_fail(c, PD_ERR_INPUT, "X and Y must have the same shape, got %s and %s",
                       pd_dims_str(x->ndim, x->dims, xs, sizeof xs), pd_dims_str(y->ndim, y->dims, ys, sizeof ys));
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, 1, (int64_t[]){1});
}

#define MSE_FORWARD(T)                                                  \
  static pd_status forward_##T(pd_ctx *c) {                             \
    int64_t n = pd_tensor_numel(pd_in(c, X));                           \
    const T *x = PD_DATA(pd_in(c, X), T), *y = PD_DATA(pd_in(c, Y), T); \
    double sum = 0;                                                     \
    for (int64_t i = 0; i < n; i++) {                                   \
      double d = (double)x[i] - (double)y[i];                           \
      sum += d * d;                                                     \
    }                                                                   \
    PD_DATA(pd_out(c, OUT), T)[0] = (T)(n > 0 ? sum / (double)n : 0);   \
    return PD_OK;                                                       \
  }
MSE_FORWARD(float)
MSE_FORWARD(double)

/* Grad op slots (see op.h): inputs X Y Out dOut, outputs dX dY. */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X), G_DY = PD_GRAD_DX(N_IN, N_OUT, Y) };

#define MSE_BACKWARD(T)                                                                \
  static pd_status backward_##T(pd_ctx *c) {                                           \
    int64_t n = pd_tensor_numel(pd_in(c, X));                                          \
    const T *x = PD_DATA(pd_in(c, X), T), *y = PD_DATA(pd_in(c, Y), T);                \
    pd_tensor *dyt = pd_in(c, G_DOUT), *gxt = pd_out(c, G_DX), *gyt = pd_out(c, G_DY); \
    T k = dyt && n > 0 ? (T)(2 * (double)PD_DATA(dyt, T)[0] / (double)n) : 0;          \
    T *gx = gxt ? PD_DATA(gxt, T) : NULL, *gy = gyt ? PD_DATA(gyt, T) : NULL;          \
    for (int64_t i = 0; i < n; i++) {                                                  \
      T g = k * (x[i] - y[i]);                                                         \
      if (gx) gx[i] = g;                                                               \
      if (gy) gy[i] = -g;                                                              \
    }                                                                                  \
    return PD_OK;                                                                      \
  }
MSE_BACKWARD(float)
MSE_BACKWARD(double)

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
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
