/* sum.c — Out = X[0] + X[1] + ... + X[n-1], element by element, for inputs
 * of one shape and dtype. The backward pass uses it to add up the gradients
 * of a variable read by several ops; its own gradient is dX[i] = dOut. */
#include "sum.h"

#include <string.h>

#include "base/tmpl.h"
#include "core/op.h"

static const pd_slot_def inputs[] = {[X] = {"X", "the tensors to add, all of one shape and dtype", PD_SLOT_DUPLICABLE}};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "their element-wise sum, same shape", 0}};

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

#define T float
#include "sum_t.h"
#undef T
#define T double
#include "sum_t.h"
#undef T

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
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
