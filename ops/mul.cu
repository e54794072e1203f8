/* mul.cu — GPU kernels of mul through cuBLAS: Out = X Y with X read as
 * [M, K] and Y as [K, N] (x_num_col_dims, y_num_col_dims); dX = dOut Y^T,
 * dY = X^T dOut. */
#include "gpu_common.cuh"
#include "gpu_ops.h"

enum { X, Y, N_IN };
enum { OUT, N_OUT };
enum { A_XCOLS, A_YCOLS };

static int64_t span(const int64_t *dims, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= dims[i];
  return p;
}

static void sizes(pd_ctx *c, const pd_tensor *x, const pd_tensor *y, int64_t *m, int64_t *k, int64_t *n) {
  int xc = (int)pd_attr_i(c, A_XCOLS), yc = (int)pd_attr_i(c, A_YCOLS);
  *m = span(x->dims, 0, xc), *k = span(x->dims, xc, x->ndim), *n = span(y->dims, yc, y->ndim);
}

extern "C" pd_status pd_gpu_mul_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y);
  int64_t m, k, n;
  sizes(c, x, y, &m, &k, &n);
  float *out = PD_DATA(pd_out(c, OUT), float);
  if (k == 0) return pd_gpu_zero(c, out, (size_t)(m * n) * sizeof(float));
  return pd_gpu_gemm(c, false, false, m, n, k, 1, PD_DATA(x, float), k, PD_DATA(y, float), n, 0, out, n);
}

/* Grad op slots: inputs X Y Out dOut, outputs dX dY. */
extern "C" pd_status pd_gpu_mul_bwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y), *dy = pd_in(c, PD_GRAD_DY(N_IN, N_OUT, OUT));
  pd_tensor *gx = pd_out(c, X), *gy = pd_out(c, Y);
  int64_t m, k, n;
  sizes(c, x, y, &m, &k, &n);
  const float *g = PD_DATA(dy, float);
  pd_status st = PD_OK;
  if (gx) st = pd_gpu_gemm(c, false, true, m, k, n, 1, g, n, PD_DATA(y, float), n, 0, PD_DATA(gx, float), k);
  if (!st && gy) st = pd_gpu_gemm(c, true, false, k, n, m, 1, PD_DATA(x, float), k, g, n, 0, PD_DATA(gy, float), n);
  return st;
}
