/* sequence_mean_t.h — sequence_mean's CPU kernels for one element type T
 * (base/tmpl.h): sequence_mean.c includes this file once for float and
 * once for double. */

/* The sum over the valid steps in double (as mean does), over their count. */
static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X);
  int64_t batch, time, inner, count;
  pd_seq_dims(xt, &batch, &time, &inner);
  const int64_t *len = lengths(c);
  pd_status st = valid_count(c, len, batch, time, inner, &count);
  if (st) return st;
  const T *x = PD_DATA(xt, T);
  double s = 0;
  for (int64_t r = 0; r < batch; r++) {
    const T *xr = x + r * time * inner;
    for (int64_t i = 0, n = pd_seq_len(len, r, time) * inner; i < n; i++) s += xr[i];
  }
  PD_DATA(pd_out(c, OUT), T)[0] = (T)(s / (double)count);
  return PD_OK;
}

/* dX = dOut / count at the valid steps, 0 past a row's length. */
static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X), *dxt = pd_out(c, G_DX), *dyt = pd_in(c, G_DOUT);
  if (!dxt) return PD_OK;
  int64_t batch, time, inner, count;
  pd_seq_dims(xt, &batch, &time, &inner);
  const int64_t *len = lengths(c);
  pd_status st = valid_count(c, len, batch, time, inner, &count);
  if (st) return st;
  T *dx = PD_DATA(dxt, T);
  memset(dx, 0, pd_tensor_bytes(dxt));
  if (!dyt) return PD_OK;
  T g = (T)(PD_DATA(dyt, T)[0] / (double)count);
  for (int64_t r = 0; r < batch; r++) {
    T *dr = dx + r * time * inner;
    for (int64_t i = 0, n = pd_seq_len(len, r, time) * inner; i < n; i++) dr[i] = g;
  }
  return PD_OK;
}
