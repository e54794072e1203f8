/* matmul_t.h — matmul's CPU kernels for one element type T (base/tmpl.h):
 * matmul.c includes this file once for float and once for double. */

static pd_status PD_T(forward)(pd_ctx *c) {
  pd_mm_layout p;
  pd_matmul_layout(pd_in(c, X), pd_in(c, Y), &p);
  const T *x = PD_DATA(pd_in(c, X), T), *y = PD_DATA(pd_in(c, Y), T);
  T *out = PD_DATA(pd_out(c, OUT), T);
  for (int64_t b = 0; b < p.nbatch; b++) {
    int64_t xo, yo;
    pd_mm_batch_offsets(&p, b, &xo, &yo);
    PD_T(pd_gemm)
    (false, false, p.m, p.n, p.k, 1, x + xo * p.m * p.k, p.k, y + yo * p.k * p.n, p.n, 0, out + b * p.m * p.n, p.n);
  }
  return PD_OK;
}

static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, G_X), *yt = pd_in(c, G_Y), *gt = pd_in(c, G_DOUT);
  pd_tensor *dxt = pd_out(c, G_DX), *dyt = pd_out(c, G_DY);
  pd_mm_layout p;
  pd_matmul_layout(xt, yt, &p);
  T *dx = dxt ? PD_DATA(dxt, T) : NULL, *dy = dyt ? PD_DATA(dyt, T) : NULL;
  if (dx) memset(dx, 0, pd_tensor_bytes(xt));
  if (dy) memset(dy, 0, pd_tensor_bytes(yt));
  if (!gt) return PD_OK;
  const T *x = PD_DATA(xt, T), *y = PD_DATA(yt, T), *g = PD_DATA(gt, T);
  for (int64_t b = 0; b < p.nbatch; b++) {
    int64_t xo, yo;
    pd_mm_batch_offsets(&p, b, &xo, &yo);
    const T *gb = g + b * p.m * p.n;
    if (dx) /* dX[M, K] += dOut[M, N] Y[K, N]^T */
      PD_T(pd_gemm)(false, true, p.m, p.k, p.n, 1, gb, p.n, y + yo * p.k * p.n, p.n, 1, dx + xo * p.m * p.k, p.k);
    if (dy) /* dY[K, N] += X[M, K]^T dOut[M, N] */
      PD_T(pd_gemm)(true, false, p.k, p.n, p.m, 1, x + xo * p.m * p.k, p.k, gb, p.n, 1, dy + yo * p.k * p.n, p.n);
  }
  return PD_OK;
}
