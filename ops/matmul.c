/* matmul.c — NumPy's (and ONNX's MatMul) matrix product: X [..., M, K] times
 * Y [..., K, N] gives Out [..., M, N], the leading (batch) dims broadcast
 * as NumPy does. A 1-D X is a row [1, K] and a 1-D Y a column [K, 1], that
 * dim then dropped from Out. Each matrix product runs on BLIS.
 * Backward: dX = dOut Y^T and dY = X^T dOut per batch, summed over the
 * batch dims the operand was repeated along. */
#include <string.h>

#include "cpu/blas.h"
#include "gpu_ops.h"
#include "core/op.h"

enum { X, Y, N_IN };
enum { OUT, N_OUT };

static const pd_slot_def inputs[] = {
    {"X", "left operand [..., M, K] (1-D [K]: one row), float32 or float64", 0},
    {"Y", "right operand [..., K, N] (1-D [K]: one column), X's dtype", 0},
};
static const pd_slot_def outputs[] = {
    {"Out", "X Y, [batch..., M, N] with the batch dims of X and Y broadcast; the 1-D sides' dims dropped", 0}};

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

#define MATMUL_FORWARD(T)                                                                              \
  static pd_status forward_##T(pd_ctx *c) {                                                            \
    pd_mm_layout p;                                                                                    \
    pd_matmul_layout(pd_in(c, X), pd_in(c, Y), &p);                                                    \
    const T *x = PD_DATA(pd_in(c, X), T), *y = PD_DATA(pd_in(c, Y), T);                                \
    T *out = PD_DATA(pd_out(c, OUT), T);                                                               \
    for (int64_t b = 0; b < p.nbatch; b++) {                                                           \
      int64_t xo, yo;                                                                                  \
      pd_mm_batch_offsets(&p, b, &xo, &yo);                                                            \
      pd_gemm_##T(false, false, p.m, p.n, p.k, 1, x + xo * p.m * p.k, p.k, y + yo * p.k * p.n, p.n, 0, \
                  out + b * p.m * p.n, p.n);                                                           \
    }                                                                                                  \
    return PD_OK;                                                                                      \
  }
MATMUL_FORWARD(float)
MATMUL_FORWARD(double)

/* Grad op slots (see op.h): inputs X Y Out dOut, outputs dX dY. */
enum { G_X = PD_GRAD_X(N_IN, N_OUT, X), G_Y = PD_GRAD_X(N_IN, N_OUT, Y), G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT) };

#define MATMUL_BACKWARD(T)                                                                                         \
  static pd_status backward_##T(pd_ctx *c) {                                                                       \
    pd_tensor *xt = pd_in(c, G_X), *yt = pd_in(c, G_Y), *gt = pd_in(c, G_DOUT);                                    \
    pd_tensor *dxt = pd_out(c, X), *dyt = pd_out(c, Y);                                                            \
    pd_mm_layout p;                                                                                                \
    pd_matmul_layout(xt, yt, &p);                                                                                  \
    T *dx = dxt ? PD_DATA(dxt, T) : NULL, *dy = dyt ? PD_DATA(dyt, T) : NULL;                                      \
    if (dx) memset(dx, 0, pd_tensor_bytes(xt));                                                                    \
    if (dy) memset(dy, 0, pd_tensor_bytes(yt));                                                                    \
    if (!gt) return PD_OK;                                                                                         \
    const T *x = PD_DATA(xt, T), *y = PD_DATA(yt, T), *g = PD_DATA(gt, T);                                         \
    for (int64_t b = 0; b < p.nbatch; b++) {                                                                       \
      int64_t xo, yo;                                                                                              \
      pd_mm_batch_offsets(&p, b, &xo, &yo);                                                                        \
      const T *gb = g + b * p.m * p.n;                                                                             \
      if (dx) /* dX[M, K] += dOut[M, N] Y[K, N]^T */                                                               \
        pd_gemm_##T(false, true, p.m, p.k, p.n, 1, gb, p.n, y + yo * p.k * p.n, p.n, 1, dx + xo * p.m * p.k, p.k); \
      if (dy) /* dY[K, N] += X[M, K]^T dOut[M, N] */                                                               \
        pd_gemm_##T(true, false, p.k, p.n, p.m, 1, x + xo * p.m * p.k, p.k, gb, p.n, 1, dy + yo * p.k * p.n, p.n); \
    }                                                                                                              \
    return PD_OK;                                                                                                  \
  }
MATMUL_BACKWARD(float)
MATMUL_BACKWARD(double)

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
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .flops = flops,
    .grad_flops = grad_flops,
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
