/* mse_t.h — mse's CPU kernels for one element type T (base/tmpl.h): mse.c
 * includes this file once for float and once for double. */

static pd_status PD_T(forward)(pd_ctx *c) {
  int64_t n = pd_tensor_numel(pd_in(c, X));
  const T *x = PD_DATA(pd_in(c, X), T), *y = PD_DATA(pd_in(c, Y), T);
  double sum = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = (double)x[i] - (double)y[i];
    sum += d * d;
  }
  PD_DATA(pd_out(c, OUT), T)[0] = (T)(n > 0 ? sum / (double)n : 0);
  return PD_OK;
}

static pd_status PD_T(backward)(pd_ctx *c) {
  int64_t n = pd_tensor_numel(pd_in(c, X));
  const T *x = PD_DATA(pd_in(c, X), T), *y = PD_DATA(pd_in(c, Y), T);
  pd_tensor *dyt = pd_in(c, G_DOUT), *gxt = pd_out(c, G_DX), *gyt = pd_out(c, G_DY);
  T k = dyt && n > 0 ? (T)(2 * (double)PD_DATA(dyt, T)[0] / (double)n) : 0;
  T *gx = gxt ? PD_DATA(gxt, T) : NULL, *gy = gyt ? PD_DATA(gyt, T) : NULL;
  for (int64_t i = 0; i < n; i++) {
    T g = k * (x[i] - y[i]);
    if (gx) gx[i] = g;
    if (gy) gy[i] = -g;
  }
  return PD_OK;
}
