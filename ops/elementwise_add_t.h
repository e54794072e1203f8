/* elementwise_add_t.h — elementwise_add's CPU kernels for one element type T
 * (base/tmpl.h): elementwise_add.c includes this file once for float and
 * once for double. */

static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y);
  const T *xs = PD_DATA(x, T), *ys = PD_DATA(y, T);
  T *out = PD_DATA(pd_out(c, OUT), T);
  walk w;
  walk_init(c, x, y, &w);
  for (int64_t o = 0; o < w.rows; o++, walk_step(&w)) {
    const T *xr = xs + o * w.inner, *yr = ys + w.yoff;
    T *orow = out + o * w.inner;
    if (w.inner_rep) {
      T v = yr[0];
      for (int64_t k = 0; k < w.inner; k++) orow[k] = xr[k] + v;
    } else {
      for (int64_t k = 0; k < w.inner; k++) orow[k] = xr[k] + yr[k];
    }
  }
  return PD_OK;
}

static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, G_X), *y = pd_in(c, G_Y), *dout = pd_in(c, G_DOUT);
  pd_tensor *dx = pd_out(c, X), *dy = pd_out(c, Y);
  const T *g = PD_DATA(dout, T);
  walk w;
  walk_init(c, x, y, &w);
  if (dx && PD_DATA(dx, T) != g) memcpy(PD_DATA(dx, T), g, (size_t)w.b.numel * sizeof(T));
  if (!dy) return PD_OK;
  T *gy = PD_DATA(dy, T);
  int64_t ny = pd_tensor_numel(y);
  for (int64_t j = 0; j < ny; j++) gy[j] = 0;
  for (int64_t o = 0; o < w.rows; o++, walk_step(&w)) {
    const T *gr = g + o * w.inner;
    T *yr = gy + w.yoff;
    if (w.inner_rep) {
      T s = 0;
      for (int64_t k = 0; k < w.inner; k++) s += gr[k];
      yr[0] += s;
    } else {
      for (int64_t k = 0; k < w.inner; k++) yr[k] += gr[k];
    }
  }
  return PD_OK;
}
