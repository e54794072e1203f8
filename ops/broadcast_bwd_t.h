/* broadcast_bwd_t.h — the backward kernel of the broadcast ops for one
 * float type T (base/tmpl.h): broadcast.h includes this file once for float
 * and once for double. dX and dY (kmath.h's pd_bc_dx, pd_bc_dy per element
 * of dOut), each summed over the dims its operand repeats along, in Out's
 * order. */

static pd_status PD_T(pd_bc_backward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, PD_BC_G_X), *yt = pd_in(c, PD_BC_G_Y), *ot = pd_in(c, PD_BC_G_OUT);
  pd_tensor *gt = pd_in(c, PD_BC_G_DOUT), *dxt = pd_out(c, PD_BC_X), *dyt = pd_out(c, PD_BC_Y);
  T *dx = dxt ? PD_DATA(dxt, T) : NULL, *dy = dyt ? PD_DATA(dyt, T) : NULL;
  if (dx) memset(dx, 0, (size_t)pd_tensor_numel(xt) * sizeof(T));
  if (dy) memset(dy, 0, (size_t)pd_tensor_numel(yt) * sizeof(T));
  if (!gt) return PD_OK;
  const T *x = PD_DATA(xt, T), *y = PD_DATA(yt, T), *g = PD_DATA(gt, T);
  pd_bc_kind k = pd_bc_of(c);
  pd_bc_walk w;
  pd_bc_walk_init(&w, xt, yt, ot);
  for (int64_t r = 0; r < w.rows; r++, pd_bc_walk_step(&w)) {
    const T *gr = g + r * w.inner;
    for (int64_t j = 0; j < w.inner; j++) {
      int64_t xi = w.xo + j * w.sx, yi = w.yo + j * w.sy;
      if (dx) dx[xi] += PD_T(pd_bc_dx)(k, gr[j], y[yi]);
      if (dy) dy[yi] += PD_T(pd_bc_dy)(k, gr[j], x[xi], y[yi]);
    }
  }
  return PD_OK;
}
