/* matmul.c — NumPy's (and ONNX's MatMul) matrix product: X [..., M, K] times
 * Y [..., K, N] gives Out [..., M, N], the leading (batch) dims broadcast
 * as NumPy does. A 1-D X is a row [1, K] and a 1-D Y a column [K, 1], that
 * dim then dropped from Out. Each matrix product runs on BLIS.
 * Backward: dX = dOut Y^T and dY = X^T dOut per batch, summed over the
 * batch dims the operand was repeated along. */
#include "matmul.h"

#include <string.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "cpu/blas.h"
#include "op_helpers.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "left operand [..., M, K] (1-D [K]: one row), float32 or float64", 0},
    [Y] = {"Y", "right operand [..., K, N] (1-D [K]: one column), X's dtype", 0},
};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "X Y, [batch..., M, N] with the batch dims of X and Y broadcast; the 1-D sides' dims dropped", 0}};

/* Fills *p (kmath.h's pd_mm_layout, which the GPU kernels use too) from the
 * shapes; 0, or the dim index (1-based) whose batch sizes disagree, or -1
 * when the inner sizes disagree. */
int pd_matmul_layout(const pd_tensor *x, const pd_tensor *y, pd_mm_layout *p) {
  memset(p, 0, sizeof *p);
  int xr = x->ndim, yr = y->ndim;
  p->m = xr >= 2 ? x->dims[xr - 2] : 1;
  p->kx = x->dims[xr - 1];
  p->k = yr >= 2 ? y->dims[yr - 2] : y->dims[0];
  p->n = yr >= 2 ? y->dims[yr - 1] : 1;
  if (p->kx >= 0 && p->k >= 0 && p->kx != p->k) return -1;
  if (p->k < 0) p->k = p->kx;
  int xb = xr > 2 ? xr - 2 : 0, yb = yr > 2 ? yr - 2 : 0;
  p->nb = xb > yb ? xb : yb;
  int64_t sx = 1, sy = 1;
  p->nbatch = 1;
  for (int i = p->nb - 1; i >= 0; i--) {
    int xi = i - (p->nb - xb), yi = i - (p->nb - yb);
    int64_t xd = xi >= 0 ? x->dims[xi] : 1, yd = yi >= 0 ? y->dims[yi] : 1;
    if (xd != yd && xd != 1 && yd != 1 && xd >= 0 && yd >= 0) return i + 1;
    p->batch[i] = xd == 1 ? yd : yd == 1 ? xd : xd < 0 ? yd : xd;
    p->xs[i] = xd == 1 && p->batch[i] != 1 ? 0 : sx;
    p->ys[i] = yd == 1 && p->batch[i] != 1 ? 0 : sy;
    sx *= xd, sy *= yd;
    p->os[i] = p->nbatch;
    p->nbatch *= p->batch[i];
  }
  return 0;
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y);
  char a[128], b[128];
  if (!pd_dtype_is_float(x->dtype) || x->dtype != y->dtype)
    return pd_ctx_fail(c, PD_ERR_INPUT, "X and Y must both be float32 or both float64, got %s and %s",
                       pd_dtype_name(x->dtype), pd_dtype_name(y->dtype));
  if (x->ndim < 1 || y->ndim < 1)
    return pd_ctx_fail(c, PD_ERR_INPUT, "X and Y need at least 1 dim, got shapes %s and %s",
                       pd_dims_str(x->ndim, x->dims, a, sizeof a), pd_dims_str(y->ndim, y->dims, b, sizeof b));
  pd_mm_layout p;
  int bad = pd_matmul_layout(x, y, &p);
  if (bad)
    return pd_ctx_fail(c, PD_ERR_INPUT, "X of shape %s and Y of shape %s cannot be multiplied: %s",
                       pd_dims_str(x->ndim, x->dims, a, sizeof a), pd_dims_str(y->ndim, y->dims, b, sizeof b),
                       bad < 0 ? "X's last dim differs from Y's rows (K)" : "their batch dims do not broadcast");
  int64_t dims[PD_MAX_DIMS];
  int nd = p.nb;
  memcpy(dims, p.batch, sizeof(int64_t) * (size_t)nd);
  if (x->ndim >= 2) dims[nd++] = p.m;
  if (y->ndim >= 2) dims[nd++] = p.n;
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, nd, dims);
}

#define T float
#include "matmul_t.h"
#undef T
#define T double
#include "matmul_t.h"
#undef T

/* 2 M N K per product. */
static double flops(pd_ctx *c) {
  pd_mm_layout p;
  pd_matmul_layout(pd_in(c, X), pd_in(c, Y), &p);
  return 2.0 * (double)p.nbatch * (double)p.m * (double)p.n * (double)p.k;
}

static double grad_flops(pd_ctx *c) {
  pd_mm_layout p;
  pd_matmul_layout(pd_in(c, G_X), pd_in(c, G_Y), &p);
  return 4.0 * (double)p.nbatch * (double)p.m * (double)p.n * (double)p.k;
}

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_matmul_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_matmul_bwd),
#endif
};

const pd_op_def pd_op_matmul = {
    .type = "matmul",
    .comment = "Matrix product as NumPy's matmul (ONNX's MatMul): X [..., M, K] times Y [..., K, N] is Out [..., "
               "M, N], the batch dims broadcast; a 1-D X is one row and a 1-D Y one column, that dim dropped from "
               "Out.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .flops = flops,
    .grad_flops = grad_flops,
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
