/* mul_t.h — mul's CPU kernels for one element type T (base/tmpl.h): mul.c
 * includes this file once for float and once for double. */

static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y);
  int64_t m, k, n;
  pd_mul_sizes(c, x, y, &m, &k, &n);
  T *out = PD_DATA(pd_out(c, OUT), T);
  PD_T(pd_gemm)(false, false, m, n, k, 1, PD_DATA(x, T), k, PD_DATA(y, T), n, 0, out, n);
  return PD_OK;
}

/* dX = dOut Y^T, dY = X^T dOut, each when wanted. */
static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, G_X), *y = pd_in(c, G_Y), *dy = pd_in(c, G_DOUT);
  pd_tensor *gx = pd_out(c, G_DX), *gy = pd_out(c, G_DY);
  int64_t m, k, n;
  pd_mul_sizes(c, x, y, &m, &k, &n);
  const T *g = PD_DATA(dy, T);
  if (gx) PD_T(pd_gemm)(false, true, m, k, n, 1, g, n, PD_DATA(y, T), n, 0, PD_DATA(gx, T), k);
  if (gy) PD_T(pd_gemm)(true, false, k, n, m, 1, PD_DATA(x, T), k, g, n, 0, PD_DATA(gy, T), n);
  return PD_OK;
}
