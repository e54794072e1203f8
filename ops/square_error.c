/* square_error.c — elementwise squared difference: Out = (X - Y)^2, X and Y of
 * one shape. Backward: dX = 2 (X - Y) dOut, dY = -dX. A regression loss per
 * element; mse is its mean in one op. */
#include "gpu_ops.h"
#include "core/op.h"

enum { X, Y, N_IN };
enum { OUT, N_OUT };

static const pd_slot_def inputs[] = {
    {"X", "prediction, any shape", 0},
    {"Y", "target, the shape of X", 0},
};
static const pd_slot_def outputs[] = {{"Out", "(X - Y)^2, the shape of X", 0}};

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
  int64_t dims[PD_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++) dims[i] = x->dims[i] >= 0 ? x->dims[i] : y->dims[i];
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim, dims);
}

#define SQUARE_ERROR_FORWARD(T)                                         \
  static pd_status forward_##T(pd_ctx *c) {                             \
    int64_t n = pd_tensor_numel(pd_in(c, X));                           \
    const T *x = PD_DATA(pd_in(c, X), T), *y = PD_DATA(pd_in(c, Y), T); \
    T *out = PD_DATA(pd_out(c, OUT), T);                                \
    for (int64_t i = 0; i < n; i++) {                                   \
      T d = x[i] - y[i];                                                \
      out[i] = d * d;                                                   \
    }                                                                   \
    return PD_OK;                                                       \
  }
SQUARE_ERROR_FORWARD(float)
SQUARE_ERROR_FORWARD(double)

/* Grad op slots (see op.h): inputs X Y Out dOut, outputs dX dY. */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X), G_DY = PD_GRAD_DX(N_IN, N_OUT, Y) };

#define SQUARE_ERROR_BACKWARD(T)                                                       \
  static pd_status backward_##T(pd_ctx *c) {                                           \
    int64_t n = pd_tensor_numel(pd_in(c, X));                                          \
    const T *x = PD_DATA(pd_in(c, X), T), *y = PD_DATA(pd_in(c, Y), T);                \
    pd_tensor *dyt = pd_in(c, G_DOUT), *gxt = pd_out(c, G_DX), *gyt = pd_out(c, G_DY); \
    const T *dout = dyt ? PD_DATA(dyt, T) : NULL;                                      \
    T *gx = gxt ? PD_DATA(gxt, T) : NULL, *gy = gyt ? PD_DATA(gyt, T) : NULL;          \
    for (int64_t i = 0; i < n; i++) {                                                  \
      T g = dout ? pd_sq_err_grad_##T(x[i], y[i], dout[i]) : 0;                        \
      if (gx) gx[i] = g;                                                               \
      if (gy) gy[i] = -g;                                                              \
    }                                                                                  \
    return PD_OK;                                                                      \
  }
SQUARE_ERROR_BACKWARD(float)
SQUARE_ERROR_BACKWARD(double)

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
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
