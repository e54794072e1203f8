/* matmul.cu — GPU kernels of matmul through cuBLAS, with the batch layout
 * of matmul.c (kmath.h's pd_mm_layout). The batch dims split where all
 * operands step uniformly (pd_mm_split): the trailing dims are one
 * cublasSgemmStridedBatched (stride 0 for an operand that repeats), the
 * leading ones a loop of those on the stream; a repeated matrix times
 * dense batches is one product over the flattened rows. Backward: dX =
 * dOut Y^T and dY = X^T dOut; an operand repeated along a batch dim gets
 * the sum of its products, accumulated one product after another (beta 1)
 * in the CPU's batch order, or as one product over the flattened batches
 * when the other operand's batches are dense. No atomics: every run gives
 * the same bits. */
#include "gpu_common.cuh"
#include "gpu_ops.h" /* pd_matmul_layout */
#include "matmul.h"

/* One operand of the products: data, batch strides (in matrices), elements
 * per matrix, leading dim. */
typedef struct operand {
  const float *p;
  const int64_t *st;
  int64_t mat, ld;
} operand;

/* C = op(A) op(B) (+ C when beta is 1) for every batch of the layout; C
 * repeated along a batch dim only with one_by_one (then beta must be 1). */
static pd_status gemm_batches(pd_ctx *c, const pd_mm_layout *p, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                              operand a, operand b, float beta, float *cm, const int64_t *cst, int64_t cmat,
                              int64_t ldc, bool one_by_one) {
  const int64_t *st[3] = {a.st, b.st, cst};
  int64_t step[3] = {0, 0, 0};
  int s = one_by_one ? p->nb : pd_mm_split(p, st, step);
  int64_t inner = 1;
  for (int i = s; i < p->nb; i++) inner *= p->batch[i];
  if (inner == 0 || p->nbatch == 0) return PD_OK;
  if (s == 0 && inner > 1 && !ta && step[0] == 1 && step[1] == 0 && step[2] == 1 && a.ld * m == a.mat &&
      ldc * m == cmat) /* dense A rows times one B: one product over the flattened rows */
    return pd_gpu_gemm(c, ta, tb, inner * m, n, k, 1, a.p, a.ld, b.p, b.ld, beta, cm, ldc);
  pd_status r = PD_OK;
  for (int64_t o = 0; o < p->nbatch / inner && !r; o++) {
    int64_t b0 = o * inner;
    int64_t ao = pd_strided_off(p->nb, p->batch, a.st, b0), bo = pd_strided_off(p->nb, p->batch, b.st, b0);
    int64_t co = pd_strided_off(p->nb, p->batch, cst, b0);
    r = pd_gpu_gemm_batched(c, ta, tb, m, n, k, 1, a.p + ao * a.mat, a.ld, step[0] * a.mat, b.p + bo * b.mat, b.ld,
                            step[1] * b.mat, beta, cm + co * cmat, ldc, step[2] * cmat, inner);
  }
  return r;
}

extern "C" pd_status pd_gpu_matmul_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y), *out = pd_out(c, OUT);
  pd_mm_layout p;
  pd_matmul_layout(x, y, &p);
  float *o = PD_DATA(out, float);
  if (p.k == 0) return pd_gpu_zero(c, o, (size_t)pd_tensor_numel(out) * sizeof(float));
  operand a = {PD_DATA(x, float), p.xs, p.m * p.k, p.k}, b = {PD_DATA(y, float), p.ys, p.k * p.n, p.n};
  return gemm_batches(c, &p, false, false, p.m, p.n, p.k, a, b, 0, o, p.os, p.m * p.n, p.n, false);
}

/* Grad op slots: inputs X Y Out dOut, outputs dX dY. */
extern "C" pd_status pd_gpu_matmul_bwd(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, G_X), *yt = pd_in(c, G_Y), *gt = pd_in(c, G_DOUT);
  pd_tensor *dxt = pd_out(c, G_DX), *dyt = pd_out(c, G_DY);
  pd_mm_layout p;
  pd_matmul_layout(xt, yt, &p);
  float *dx = pd_gpu_f32(dxt), *dy = pd_gpu_f32(dyt);
  pd_status st = PD_OK;
  bool x_rep = !pd_mm_unrepeated(&p, p.xs), y_rep = !pd_mm_unrepeated(&p, p.ys);
  /* zero what is accumulated into, or gets no product (no dOut, an empty sum) */
  if (dx && (!gt || x_rep || p.n == 0)) st = pd_gpu_zero(c, dx, pd_tensor_bytes(xt));
  if (!st && dy && (!gt || y_rep || p.m == 0)) st = pd_gpu_zero(c, dy, pd_tensor_bytes(yt));
  if (st || !gt) return st;
  operand g = {PD_DATA(gt, float), p.os, p.m * p.n, p.n};
  operand x = {PD_DATA(xt, float), p.xs, p.m * p.k, p.k}, y = {PD_DATA(yt, float), p.ys, p.k * p.n, p.n};
  if (dx && p.n > 0) /* dX[M, K] = dOut[M, N] Y[K, N]^T */
    st = gemm_batches(c, &p, false, true, p.m, p.k, p.n, g, y, x_rep ? 1 : 0, dx, p.xs, p.m * p.k, p.k, x_rep);
  if (st || !dy || p.m == 0) return st;
  int64_t step;
  if (y_rep && pd_mm_uniform(&p, p.ys, 0, &step) && step == 0 && pd_mm_uniform(&p, p.xs, 0, &step) && step == 1)
    /* one Y for dense X batches: dY = X^T dOut over the flattened rows */
    return pd_gpu_gemm(c, true, false, p.k, p.n, p.nbatch * p.m, 1, x.p, p.k, g.p, p.n, 0, dy, p.n);
  /* dY[K, N] = X[M, K]^T dOut[M, N] */
  return gemm_batches(c, &p, true, false, p.k, p.n, p.m, x, g, y_rep ? 1 : 0, dy, p.ys, p.k * p.n, p.n, y_rep);
}
