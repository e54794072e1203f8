/* lastdim_t.h — the gradient kernel of an op normalising along the last dim
 * (softmax, log_softmax), for one element type T (base/tmpl.h). Per row,
 * s = sum over j of PD_T(lastdim_term)(y[j], dy[j]), then dX[j] =
 * PD_T(lastdim_grad)(y[j], dy[j], s): two functions the including file
 * defines for T, as it does the grad slots G_OUT, G_DOUT and G_DX. dX is 0
 * where no gradient reaches Out. */

static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *dxt = pd_out(c, G_DX), *dyt = pd_in(c, G_DOUT);
  if (!dxt) return PD_OK;
  int64_t rows, d;
  pd_lastdim_rows(pd_in(c, G_OUT), &rows, &d);
  const T *y = PD_DATA(pd_in(c, G_OUT), T), *dy = dyt ? PD_DATA(dyt, T) : NULL;
  T *dx = PD_DATA(dxt, T);
  for (int64_t r = 0; r < rows; r++, y += d, dx += d) {
    if (!dy) { /* no gradient reaches Out */
      for (int64_t j = 0; j < d; j++) dx[j] = 0;
      continue;
    }
    T s = 0;
    for (int64_t j = 0; j < d; j++) s += PD_T(lastdim_term)(y[j], dy[j]);
    for (int64_t j = 0; j < d; j++) dx[j] = PD_T(lastdim_grad)(y[j], dy[j], s);
    dy += d;
  }
  return PD_OK;
}
