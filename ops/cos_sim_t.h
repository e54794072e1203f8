/* cos_sim_t.h — cos_sim's CPU kernels for one element type T (base/tmpl.h):
 * cos_sim.c includes this file once for float and once for double. */

/* <a, b>, |a|^2 and |b|^2 of two rows of length d, in double. */
static void PD_T(dot3)(const T *a, const T *b, int64_t d, double *ab, double *aa, double *bb) {
  double s = 0, sa = 0, sb = 0;
  for (int64_t j = 0; j < d; j++) {
    s += (double)a[j] * b[j];
    sa += (double)a[j] * a[j];
    sb += (double)b[j] * b[j];
  }
  *ab = s, *aa = sa, *bb = sb;
}

static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X), *yt = pd_in(c, Y), *xnt = pd_out(c, XNORM), *ynt = pd_out(c, YNORM);
  int64_t n = xt->dims[0], d = xt->dims[1], ystride = yt->dims[0] == 1 ? 0 : d;
  double scale = pd_attr_f(c, A_SCALE);
  const T *x = PD_DATA(xt, T), *y = PD_DATA(yt, T);
  T *out = PD_DATA(pd_out(c, OUT), T);
  if (ynt && !ystride) { /* broadcast Y: its one norm */
    double yy, unused;
    PD_T(dot3)(y, y, d, &yy, &unused, &unused);
    PD_DATA(ynt, T)[0] = (T)sqrt(yy);
  }
  for (int64_t i = 0; i < n; i++) {
    double xy, xx, yy;
    PD_T(dot3)(x + i * d, y + i * ystride, d, &xy, &xx, &yy);
    double nx = sqrt(xx), ny = sqrt(yy);
    out[i] = (T)pd_cos_out(xy, xx, yy, scale);
    if (xnt) PD_DATA(xnt, T)[i] = (T)nx;
    if (ynt && ystride) PD_DATA(ynt, T)[i] = (T)ny;
  }
  return PD_OK;
}

/* Backward, with c = <x, y> / (|x| |y|):
 *   dOut:   dx = s g (y / (|x| |y|) - c x / |x|^2), dy likewise;
 *   dXNorm: dx += gx x / |x|;  dYNorm: dy += gy y / |y|.
 * A broadcast Y [1, D] collects dy over all rows. */
static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, G_X), *yt = pd_in(c, G_Y), *doutt = pd_in(c, G_DOUT);
  pd_tensor *dxnt = pd_in(c, G_DXNORM), *dynt = pd_in(c, G_DYNORM);
  pd_tensor *gxt = pd_out(c, G_DX), *gyt = pd_out(c, G_DY);
  int64_t n = xt->dims[0], d = xt->dims[1], yrows = yt->dims[0], ystride = yrows == 1 ? 0 : d;
  double scale = pd_attr_f(c, A_SCALE);
  const T *x = PD_DATA(xt, T), *y = PD_DATA(yt, T);
  const T *dout = doutt ? PD_DATA(doutt, T) : NULL, *dxn = dxnt ? PD_DATA(dxnt, T) : NULL;
  const T *dyn = dynt ? PD_DATA(dynt, T) : NULL;
  T *gx = gxt ? PD_DATA(gxt, T) : NULL, *gy = gyt ? PD_DATA(gyt, T) : NULL;
  for (int64_t i = 0; gy && i < yrows * d; i++) gy[i] = 0;
  for (int64_t i = 0; i < n; i++) {
    const T *xi = x + i * d, *yi = y + i * ystride;
    double xy, xx, yy;
    PD_T(dot3)(xi, yi, d, &xy, &xx, &yy);
    /* dx = k y + kx x;  dy += k x + ky y */
    pd_cos_coef q = pd_cos_coefs(xy, xx, yy, scale, dout ? dout[i] : 0, dxn ? dxn[i] : 0, dyn && ystride ? dyn[i] : 0,
                                 ystride != 0);
    double k = q.k, kx = q.kx, ky = q.ky;
    if (gx)
      for (int64_t j = 0; j < d; j++) gx[i * d + j] = (T)(k * yi[j] + kx * xi[j]);
    if (gy)
      for (int64_t j = 0; j < d; j++) gy[i * ystride + j] += (T)(k * xi[j] + ky * yi[j]);
  }
  if (gy && dyn && !ystride) { /* broadcast Y: its one norm, counted once */
    double yy, unused;
    PD_T(dot3)(y, y, d, &yy, &unused, &unused);
    double ny = sqrt(yy);
    for (int64_t j = 0; ny != 0 && j < d; j++) gy[j] += (T)(dyn[0] * y[j] / ny);
  }
  return PD_OK;
}
