/* broadcast_fwd_t.h — the forward kernel of the broadcast ops for one
 * element type T (base/tmpl.h): broadcast.h includes this file once for each
 * of float, double, int32_t, int64_t and uint8_t. */

static pd_status PD_T(pd_bc_forward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, PD_BC_X), *yt = pd_in(c, PD_BC_Y), *ot = pd_out(c, PD_BC_OUT);
  const T *x = PD_DATA(xt, T), *y = PD_DATA(yt, T);
  T *o = PD_DATA(ot, T);
  pd_bc_kind k = pd_bc_of(c);
  pd_bc_walk w;
  pd_bc_walk_init(&w, xt, yt, ot);
  for (int64_t r = 0; r < w.rows; r++, pd_bc_walk_step(&w)) {
    const T *xr = x + w.xo, *yr = y + w.yo;
    T *orow = o + r * w.inner;
    for (int64_t j = 0; j < w.inner; j++) orow[j] = PD_T(pd_bc_op)(k, xr[j * w.sx], yr[j * w.sy]);
  }
  return PD_OK;
}
