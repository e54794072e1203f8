/* sum.c — Out = X[0] + X[1] + ... + X[n-1], element by element, for inputs
 * of one shape and dtype. The backward pass uses it to add up the gradients
 * of a variable read by several ops; its own gradient is dX[i] = dOut. */
#include <string.h>

#include "gpu_ops.h"
#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };

static const pd_slot_def inputs[] = {{"X", "the tensors to add, all of one shape and dtype", PD_SLOT_DUPLICABLE}};
static const pd_slot_def outputs[] = {{"Out", "their element-wise sum, same shape", 0}};

static pd_status infer(pd_ctx *c) {
  int n = pd_in_count(c, X);
  pd_tensor *x0 = pd_in_at(c, X, 0);
  if (n < 1) return pd_ctx_fail(c, PD_ERR_INPUT, "needs at least one input X");
  for (int i = 0; i < n; i++)
    if (!pd_in_at(c, X, i)) return pd_ctx_fail(c, PD_ERR_INPUT, "input X[%d] is empty; name a variable", i);
  if (!pd_dtype_is_float(x0->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "inputs must be float32 or float64, got %s", pd_dtype_name(x0->dtype));
  int64_t dims[PD_MAX_DIMS];
  memcpy(dims, x0->dims, sizeof dims);
  for (int i = 1; i < n; i++) {
    pd_tensor *xi = pd_in_at(c, X, i);
    char a[128], b[128];
    if (xi->dtype != x0->dtype)
      return pd_ctx_fail(c, PD_ERR_INPUT, "input X[%d] (\"%s\") is %s but X[0] (\"%s\") is %s", i,
                         pd_ctx_in_name(c, X, i), pd_dtype_name(xi->dtype), pd_ctx_in_name(c, X, 0),
                         pd_dtype_name(x0->dtype));
    bool same = xi->ndim == x0->ndim;
    for (int d = 0; same && d < x0->ndim; d++) {
      same = xi->dims[d] < 0 || dims[d] < 0 || xi->dims[d] == dims[d];
      if (dims[d] < 0) dims[d] = xi->dims[d]; /* a known dim says more than -1 */
    }
    if (!same)
      return pd_ctx_fail(c, PD_ERR_INPUT, "input X[%d] (\"%s\") has shape %s but X[0] (\"%s\") has shape %s", i,
                         pd_ctx_in_name(c, X, i), pd_dims_str(xi->ndim, xi->dims, a, sizeof a), pd_ctx_in_name(c, X, 0),
                         pd_dims_str(x0->ndim, x0->dims, b, sizeof b));
  }
  return pd_ctx_set_shape(c, pd_out(c, OUT), x0->dtype, x0->ndim, dims);
}

/* Out may be one of the inputs (gradients summed in place): start from that
 * one, then add the others. */
#define SUM_FORWARD(T)                                     \
  static pd_status forward_##T(pd_ctx *c) {                \
    pd_tensor *y = pd_out(c, OUT);                         \
    T *out = PD_DATA(y, T);                                \
    int n = pd_in_count(c, X), base = 0;                   \
    int64_t len = pd_tensor_numel(y);                      \
    for (int i = 0; i < n; i++)                            \
      if (PD_DATA(pd_in_at(c, X, i), T) == out) base = i;  \
    const T *b = PD_DATA(pd_in_at(c, X, base), T);         \
    if (b != out) memcpy(out, b, (size_t)len * sizeof(T)); \
    for (int i = 0; i < n; i++) {                          \
      if (i == base) continue;                             \
      const T *xi = PD_DATA(pd_in_at(c, X, i), T);         \
      for (int64_t k = 0; k < len; k++) out[k] += xi[k];   \
    }                                                      \
    return PD_OK;                                          \
  }
SUM_FORWARD(float)
SUM_FORWARD(double)

/* Grad op slots (see op.h): inputs X... Out dOut, outputs dX...; each dX[i]
 * that is wanted is a copy of dOut. */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT) };

#define SUM_BACKWARD(T)                                                \
  static pd_status backward_##T(pd_ctx *c) {                           \
    pd_tensor *dy = pd_in(c, G_DOUT);                                  \
    const T *g = PD_DATA(dy, T);                                       \
    size_t bytes = (size_t)pd_tensor_numel(dy) * sizeof(T);            \
    for (int i = 0; i < pd_out_count(c, X); i++) {                     \
      pd_tensor *dx = pd_out_at(c, X, i);                              \
      if (dx && PD_DATA(dx, T) != g) memcpy(PD_DATA(dx, T), g, bytes); \
    }                                                                  \
    return PD_OK;                                                      \
  }
SUM_BACKWARD(float)
SUM_BACKWARD(double)

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_sum_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_sum_bwd),
#endif
};

const pd_op_def pd_op_sum = {
    .type = "sum",
    .comment = "Out = X[0] + X[1] + ... element by element; the inputs have one shape and dtype.",
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
