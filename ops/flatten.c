/* flatten.c — Out = X as a matrix: [d0 · ... · d(axis-1), d(axis) · ... ·
 * d(n-1)], the same elements in the same order. Out shares X's storage, so
 * nothing is copied; a -1 (the batch) in either part makes that dim -1.
 * Backward: dX = dOut viewed with X's dims. */
#include "flatten.h"

#include <string.h>

#include "core/op.h"
#include "gpu_ops.h" /* pd_gpu_copy2d */

static const pd_slot_def inputs[] = {[X] = {"X", "input tensor of any dtype, rank >= axis", 0}};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "[product of X's dims before axis, product of the rest] (shares X's storage)", 0}};
static const pd_attr_def attrs[] = {
    [A_AXIS] = {"axis", "the first dim of the second part (0: [1, all]; rank of X: [all, 1])", PD_ATTR_INT,
                .def = "i: 1", .min_kind = PD_GE, .min = 0},
};

/* Product of dims [from, to): -1 when one of them is -1; false on overflow. */
static bool part(const pd_tensor *x, int from, int to, int64_t *out) {
  int64_t dims[PD_MAX_DIMS];
  int n = 0;
  bool batch = false;
  for (int d = from; d < to; d++) {
    if (x->dims[d] < 0)
      batch = true;
    else
      dims[n++] = x->dims[d];
  }
  if (!pd_dims_product(n, dims, out)) return false;
  if (batch) *out = -1;
  return true;
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  int64_t axis = pd_attr_i(c, A_AXIS), dims[2];
  char xs[128];
  pd_dims_str(x->ndim, x->dims, xs, sizeof xs);
  if (axis > x->ndim)
    return pd_ctx_fail(c, PD_ERR_INPUT, "axis %lld is out of range for X of shape %s: at most its rank, %d",
                       (long long)axis, xs, x->ndim);
  if (!part(x, 0, (int)axis, &dims[0]) || !part(x, (int)axis, x->ndim, &dims[1]))
    return pd_ctx_fail(c, PD_ERR_INPUT, "X of shape %s has more elements than fit in 64 bits", xs);
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, 2, dims);
}

static pd_status forward(pd_ctx *c) {
  pd_tensor_view(pd_out(c, OUT), pd_in(c, X));
  return PD_OK;
}

static pd_status backward(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, X), *dy = pd_in(c, G_DOUT);
  if (dx && dy)
    pd_tensor_view(dx, dy);
  else if (dx)
    memset(pd_tensor_data(dx), 0, pd_tensor_bytes(dx));
  return PD_OK;
}

static double no_flops(pd_ctx *c) {
  (void)c;
  return 0;
}

/* Any dtype flattens; only floats have gradients. */
#ifdef PD_WITH_CUDA
/* The same on the GPU, the zeros written on the device. */
static pd_status backward_gpu(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, X), *dy = pd_in(c, G_DOUT);
  if (dx && dy) pd_tensor_view(dx, dy);
  return dx && !dy ? pd_gpu_copy2d(c, pd_tensor_data(dx), 0, NULL, 0, pd_tensor_bytes(dx), 1) : PD_OK;
}
#endif

static const pd_kernel kernels[] = {
    {{PD_CPU, PD_F32}, forward}, {{PD_CPU, PD_F64}, forward}, {{PD_CPU, PD_I32}, forward},
    {{PD_CPU, PD_I64}, forward}, {{PD_CPU, PD_U8}, forward},
#ifdef PD_WITH_CUDA /* a view: the same on every place */
    {{PD_GPU, PD_F32}, forward}, {{PD_GPU, PD_F64}, forward}, {{PD_GPU, PD_I32}, forward},
    {{PD_GPU, PD_I64}, forward}, {{PD_GPU, PD_U8}, forward},
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward),
    PD_CPU_F64(backward),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(backward_gpu),
#endif
};

const pd_op_def pd_op_flatten = {
    .type = "flatten",
    .comment = "Out = X as a matrix [d0 * ... * d(axis-1), d(axis) * ... * d(n-1)] (axis 1: [N, C*H*W]); the "
               "batch -1 carries through. Out shares X's storage.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .flops = no_flops,
    .grad_flops = no_flops,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
    .views = 1, /* Out shares X's storage */
};
