/* concat.c — Out = X[0], X[1], ... joined along `axis`; every other dim must
 * match. Viewed as [outer, dims[axis] · inner], each input contributes one
 * contiguous block per outer row, so the kernel is a series of copies (any
 * dtype). Backward: dOut split back into the blocks. */
#include "concat.h"

#include <string.h>

#include "core/op.h"
#include "gpu_ops.h" /* pd_gpu_copy2d */

static const pd_slot_def inputs[] = {
    [X] = {"X", "the tensors to join, of one dtype and rank, equal in every dim but `axis`", PD_SLOT_DUPLICABLE}};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "the inputs joined along `axis` (its dim is the sum of theirs)", 0}};
static const pd_attr_def attrs[] = {
    [A_AXIS] = {"axis", "the dim to join along; negative counts from the end (-1: the last)", PD_ATTR_INT,
                .def = "i: 0"},
};

/* `axis` as an index in [0, ndim), or -1 when out of range. */
static int axis_of(pd_ctx *c, int ndim) {
  int64_t a = pd_attr_i(c, A_AXIS);
  if (a < 0) a += ndim;
  return a >= 0 && a < ndim ? (int)a : -1;
}

static pd_status infer(pd_ctx *c) {
  int n = pd_in_count(c, X);
  if (n < 1) return pd_ctx_fail(c, PD_ERR_INPUT, "needs at least one input X");
  for (int i = 0; i < n; i++)
    if (!pd_in_at(c, X, i)) return pd_ctx_fail(c, PD_ERR_INPUT, "input X[%d] is empty; name a variable", i);
  pd_tensor *x0 = pd_in_at(c, X, 0);
  char a[128], b[128];
  int axis = axis_of(c, x0->ndim);
  if (axis < 0)
    return pd_ctx_fail(c, PD_ERR_INPUT, "axis %lld is out of range for X[0] (\"%s\") of shape %s (rank %d)",
                       (long long)pd_attr_i(c, A_AXIS), pd_ctx_in_name(c, X, 0),
                       pd_dims_str(x0->ndim, x0->dims, a, sizeof a), x0->ndim);
  int64_t dims[PD_MAX_DIMS];
  memcpy(dims, x0->dims, sizeof dims);
  for (int i = 1; i < n; i++) {
    pd_tensor *xi = pd_in_at(c, X, i);
    if (xi->dtype != x0->dtype)
      return pd_ctx_fail(c, PD_ERR_INPUT, "input X[%d] (\"%s\") is %s but X[0] (\"%s\") is %s", i,
                         pd_ctx_in_name(c, X, i), pd_dtype_name(xi->dtype), pd_ctx_in_name(c, X, 0),
                         pd_dtype_name(x0->dtype));
    bool same = xi->ndim == x0->ndim;
    for (int d = 0; same && d < x0->ndim; d++) {
      if (d == axis) {
        dims[d] = dims[d] < 0 || xi->dims[d] < 0 ? -1 : dims[d] + xi->dims[d];
        continue;
      }
      same = xi->dims[d] < 0 || dims[d] < 0 || xi->dims[d] == dims[d];
      if (dims[d] < 0) dims[d] = xi->dims[d]; /* a known dim says more than -1 */
    }
    if (!same)
      return pd_ctx_fail(c, PD_ERR_INPUT,
                         "input X[%d] (\"%s\") has shape %s but X[0] (\"%s\") has shape %s; all dims but axis %d "
                         "must be equal",
                         i, pd_ctx_in_name(c, X, i), pd_dims_str(xi->ndim, xi->dims, a, sizeof a),
                         pd_ctx_in_name(c, X, 0), pd_dims_str(x0->ndim, x0->dims, b, sizeof b), axis);
  }
  return pd_ctx_set_shape(c, pd_out(c, OUT), x0->dtype, x0->ndim, dims);
}

/* Bytes per outer row of t: dims[axis:] times the element size. */
static size_t row_bytes(const pd_tensor *t, int axis) {
  size_t r = pd_dtype_size(t->dtype);
  for (int d = axis; d < t->ndim; d++) r *= (size_t)t->dims[d];
  return r;
}

static int64_t outer_rows(const pd_tensor *t, int axis) {
  int64_t r = 1;
  for (int d = 0; d < axis; d++) r *= t->dims[d];
  return r;
}

/* Joins the X blocks into Out, row by row. */
/* Copies `height` rows of `width` bytes, rows `dpitch` / `spitch` apart
 * (src NULL: zeros); the CPU's, or pd_gpu_copy2d on the GPU. */
typedef pd_status (*copy2d_fn)(pd_ctx *c, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                               size_t height);

static pd_status cpu_copy2d(pd_ctx *c, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                            size_t height) {
  (void)c;
  for (size_t k = 0; width && k < height; k++) {
    if (src)
      memcpy((char *)dst + k * dpitch, (const char *)src + k * spitch, width);
    else
      memset((char *)dst + k * dpitch, 0, width);
  }
  return PD_OK;
}

/* Each input's rows go side by side into Out's rows: one strided copy per input. */
static pd_status run_forward(pd_ctx *c, copy2d_fn copy) {
  pd_tensor *out = pd_out(c, OUT);
  int axis = axis_of(c, out->ndim);
  int64_t outer = outer_rows(out, axis);
  size_t out_row = row_bytes(out, axis), off = 0;
  char *o = pd_tensor_data(out);
  pd_status st = PD_OK;
  for (int i = 0; i < pd_in_count(c, X) && !st; i++) {
    pd_tensor *xi = pd_in_at(c, X, i);
    size_t r = row_bytes(xi, axis);
    if (r && outer) st = copy(c, o + off, out_row, pd_tensor_data(xi), r, r, (size_t)outer);
    off += r;
  }
  return st;
}
static pd_status forward(pd_ctx *c) { return run_forward(c, cpu_copy2d); }

/* Whether dX output j is the gradient of X[i], walking both in order. When
 * every X has a dX slot they line up; the backward pass leaves out the
 * gradients of inputs that need none (data), and then a dX belongs to the
 * next X it is named after. */
static bool grad_of(pd_ctx *c, int j, int i) {
  if (pd_out_count(c, X) == pd_in_count(c, X)) return i == j;
  return pd_is_grad_name(pd_ctx_out_name(c, X, j), pd_ctx_in_name(c, X, i));
}

static pd_status unmatched(pd_ctx *c, int j) {
  return pd_ctx_fail(c, PD_ERR_INPUT, "output dX[%d] (\"%s\") is not the gradient of any input X", j,
                     pd_ctx_out_name(c, X, j));
}

/* Each dX takes its X's shape. */
static pd_status grad_infer(pd_ctx *c) {
  int nx = pd_in_count(c, X), nd = pd_out_count(c, X), j = 0;
  pd_status st = PD_OK;
  for (int i = 0; i < nx && j < nd && !st; i++) {
    if (!grad_of(c, j, i)) continue;
    pd_tensor *x = pd_in_at(c, X, i);
    st = pd_ctx_set_shape(c, pd_out_at(c, X, j++), x->dtype, x->ndim, x->dims);
  }
  return st || j == nd ? st : unmatched(c, j);
}

/* dOut split back into the blocks of the X that want a gradient. */
static pd_status run_backward(pd_ctx *c, copy2d_fn copy) {
  pd_tensor *dy = pd_in(c, G_DOUT), *x0 = pd_in_at(c, X, 0);
  int nx = pd_in_count(c, X), nd = pd_out_count(c, X), j = 0, axis = axis_of(c, x0->ndim);
  int64_t outer = outer_rows(x0, axis);
  size_t out_row = dy ? row_bytes(dy, axis) : 0, off = 0;
  pd_status st = PD_OK;
  for (int i = 0; i < nx && !st; i++) {
    size_t r = row_bytes(pd_in_at(c, X, i), axis);
    if (j < nd && grad_of(c, j, i)) {
      pd_tensor *dx = pd_out_at(c, X, j++);
      char *p = dx && r ? pd_tensor_data(dx) : NULL; /* nothing to copy for an empty X */
      const char *src = dy ? (const char *)pd_tensor_data(dy) + off : NULL;
      if (p && outer) st = copy(c, p, r, src, out_row, r, (size_t)outer);
    }
    off += r;
  }
  return st || j == nd ? st : unmatched(c, j);
}
static pd_status backward(pd_ctx *c) { return run_backward(c, cpu_copy2d); }

#ifdef PD_WITH_CUDA
static pd_status forward_gpu(pd_ctx *c) { return run_forward(c, pd_gpu_copy2d); }
static pd_status backward_gpu(pd_ctx *c) { return run_backward(c, pd_gpu_copy2d); }
#endif

static const pd_kernel kernels[] = {
    {{PD_CPU, PD_F32}, forward},     {{PD_CPU, PD_F64}, forward},     {{PD_CPU, PD_I32}, forward},
    {{PD_CPU, PD_I64}, forward},     {{PD_CPU, PD_U8}, forward},
#ifdef PD_WITH_CUDA
    {{PD_GPU, PD_F32}, forward_gpu}, {{PD_GPU, PD_F64}, forward_gpu}, {{PD_GPU, PD_I32}, forward_gpu},
    {{PD_GPU, PD_I64}, forward_gpu}, {{PD_GPU, PD_U8}, forward_gpu},
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward),
    PD_CPU_F64(backward),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(backward_gpu),
#endif
};

static double no_flops(pd_ctx *c) {
  (void)c;
  return 0;
}

const pd_op_def pd_op_concat = {
    .type = "concat",
    .comment = "Out = the inputs X[0], X[1], ... joined along `axis` (negative counts from the end); all other "
               "dims must be equal. Any dtype.",
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
    .grad_infer_shape = grad_infer,
};
