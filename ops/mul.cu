/* mul.cu — GPU kernels of mul through cuBLAS: Out = X Y with X read as
 * [M, K] and Y as [K, N] (x_num_col_dims, y_num_col_dims); dX = dOut Y^T,
 * dY = X^T dOut. */
#include "gpu_common.cuh"
#include "mul.h"

extern "C" pd_status pd_gpu_mul_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y);
  int64_t m, k, n;
  pd_mul_sizes(c, x, y, &m, &k, &n);
  float *out = PD_DATA(pd_out(c, OUT), float);
  if (k == 0) return pd_gpu_zero(c, out, (size_t)(m * n) * sizeof(float));
  return pd_gpu_gemm(c, false, false, m, n, k, 1, PD_DATA(x, float), k, PD_DATA(y, float), n, 0, out, n);
}

/* Grad op slots: inputs X Y Out dOut, outputs dX dY. */
extern "C" pd_status pd_gpu_mul_bwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, G_X), *y = pd_in(c, G_Y), *dy = pd_in(c, G_DOUT);
  pd_tensor *gx = pd_out(c, G_DX), *gy = pd_out(c, G_DY);
  int64_t m, k, n;
  pd_mul_sizes(c, x, y, &m, &k, &n);
  const float *g = PD_DATA(dy, float);
  pd_status st = PD_OK;
  if (gx) st = pd_gpu_gemm(c, false, true, m, k, n, 1, g, n, PD_DATA(y, float), n, 0, PD_DATA(gx, float), k);
  if (!st && gy) st = pd_gpu_gemm(c, true, false, k, n, m, 1, PD_DATA(x, float), k, g, n, 0, PD_DATA(gy, float), n);
  return st;
}
