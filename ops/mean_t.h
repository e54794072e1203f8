/* mean_t.h — mean's CPU kernels for one element type T (base/tmpl.h):
 * mean.c includes this file once for float and once for double. */

/* An empty X has no mean: Out is NaN, as in NumPy. */
static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  const T *xs = PD_DATA(x, T);
  int64_t n = pd_tensor_numel(x);
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += xs[i];
  PD_DATA(pd_out(c, OUT), T)[0] = (T)(n ? s / (double)n : NAN);
  return PD_OK;
}

static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  int64_t n = pd_tensor_numel(dx);
  T g = (T)(PD_DATA(pd_in(c, G_DOUT), T)[0] / (double)n), *gx = PD_DATA(dx, T);
  for (int64_t i = 0; i < n; i++) gx[i] = g;
  return PD_OK;
}
