/* mul.c — matrix product Out = X · Y, Paddle style: X is read as a matrix
 * [M, K] whose rows are its first x_num_col_dims dims, Y as [K, N] whose rows
 * are its first y_num_col_dims dims; Out has shape X.dims[:xc] ++ Y.dims[yc:].
 * Backward: dX = dOut · Yᵀ, dY = Xᵀ · dOut. The kernels are in mul_t.h. */
#include "mul.h"

#include "base/tmpl.h"
#include "core/op.h"
#include "cpu/blas.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "left operand; its first x_num_col_dims dims are the rows (M), the rest the columns (K)", 0},
    [Y] = {"Y", "right operand; its first y_num_col_dims dims are the rows (K), the rest the columns (N)", 0},
};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "X · Y, shape X.dims[:x_num_col_dims] ++ Y.dims[y_num_col_dims:]", 0}};
static const pd_attr_def attrs[] = {
    [A_XCOLS] = {"x_num_col_dims", "how many leading dims of X form the rows of the matrix", PD_ATTR_INT, .def = "i: 1",
                 .min_kind = PD_GE, .min = 1},
    [A_YCOLS] = {"y_num_col_dims", "how many leading dims of Y form the rows of the matrix", PD_ATTR_INT, .def = "i: 1",
                 .min_kind = PD_GE, .min = 1},
};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y);
  int xc = (int)pd_attr_i(c, A_XCOLS), yc = (int)pd_attr_i(c, A_YCOLS);
  char a[128], b[128];
  if (!pd_dtype_is_float(x->dtype) || x->dtype != y->dtype)
    return pd_ctx_fail(c, PD_ERR_INPUT, "X and Y must both be float32 or both float64, got %s and %s",
                       pd_dtype_name(x->dtype), pd_dtype_name(y->dtype));
  if (x->ndim <= xc)
    return pd_ctx_fail(c, PD_ERR_INPUT, "x_num_col_dims is %d, so X needs more than %d dims; X has shape %s", xc, xc,
                       pd_dims_str(x->ndim, x->dims, a, sizeof a));
  if (y->ndim <= yc)
    return pd_ctx_fail(c, PD_ERR_INPUT, "y_num_col_dims is %d, so Y needs more than %d dims; Y has shape %s", yc, yc,
                       pd_dims_str(y->ndim, y->dims, a, sizeof a));
  if (xc + y->ndim - yc > PD_MAX_DIMS)
    return pd_ctx_fail(c, PD_ERR_INPUT, "Out would have %d dims; at most %d are supported", xc + y->ndim - yc,
                       PD_MAX_DIMS);
  int64_t kx = pd_mul_span(x->dims, xc, x->ndim), ky = pd_mul_span(y->dims, 0, yc);
  if (kx >= 0 && ky >= 0 && kx != ky)
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "X of shape %s has %lld columns (dims after the first %d) but Y of shape %s has %lld rows "
                       "(its first %d dims); they must be equal",
                       pd_dims_str(x->ndim, x->dims, a, sizeof a), (long long)kx, xc,
                       pd_dims_str(y->ndim, y->dims, b, sizeof b), (long long)ky, yc);
  int64_t dims[PD_MAX_DIMS];
  int nd = 0;
  for (int i = 0; i < xc; i++) dims[nd++] = x->dims[i];
  for (int i = yc; i < y->ndim; i++) dims[nd++] = y->dims[i];
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, nd, dims);
}

static double flops(pd_ctx *c) {
  int64_t m, k, n;
  pd_mul_sizes(c, pd_in(c, X), pd_in(c, Y), &m, &k, &n);
  return m < 0 || k < 0 || n < 0 ? 0 : 2.0 * (double)m * (double)k * (double)n;
}

/* Backward: a product for dX and one for dY, each when wanted. */
static double grad_flops(pd_ctx *c) {
  int64_t m, k, n;
  pd_mul_sizes(c, pd_in(c, G_X), pd_in(c, G_Y), &m, &k, &n);
  double one = m < 0 || k < 0 || n < 0 ? 0 : 2.0 * (double)m * (double)k * (double)n;
  return one * ((pd_out(c, G_DX) != NULL) + (pd_out(c, G_DY) != NULL));
}

#define T float
#include "mul_t.h"
#undef T
#define T double
#include "mul_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_mul_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_mul_bwd),
#endif
};

const pd_op_def pd_op_mul = {
    .type = "mul",
    .comment = "Matrix product Out = X · Y, with X read as [M, K] (its first x_num_col_dims dims are the "
               "rows) and Y as [K, N] (its first y_num_col_dims dims are the rows).",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .flops = flops,
    .grad_flops = grad_flops,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
