/* square_error_t.h — square_error's CPU kernels for one element type T
 * (base/tmpl.h): square_error.c includes this file once per type. */

static pd_status PD_T(forward)(pd_ctx *c) {
  int64_t n = pd_tensor_numel(pd_in(c, X));
  const T *x = PD_DATA(pd_in(c, X), T), *y = PD_DATA(pd_in(c, Y), T);
  T *out = PD_DATA(pd_out(c, OUT), T);
  for (int64_t i = 0; i < n; i++) {
    T d = x[i] - y[i];
    out[i] = d * d;
  }
  return PD_OK;
}

static pd_status PD_T(backward)(pd_ctx *c) {
  int64_t n = pd_tensor_numel(pd_in(c, X));
  const T *x = PD_DATA(pd_in(c, X), T), *y = PD_DATA(pd_in(c, Y), T);
  pd_tensor *dyt = pd_in(c, G_DOUT), *gxt = pd_out(c, G_DX), *gyt = pd_out(c, G_DY);
  const T *dout = dyt ? PD_DATA(dyt, T) : NULL;
  T *gx = gxt ? PD_DATA(gxt, T) : NULL, *gy = gyt ? PD_DATA(gyt, T) : NULL;
  for (int64_t i = 0; i < n; i++) {
    T g = dout ? PD_T(pd_sq_err_grad)(x[i], y[i], dout[i]) : 0;
    if (gx) gx[i] = g;
    if (gy) gy[i] = -g;
  }
  return PD_OK;
}
