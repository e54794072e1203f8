/* sequence_pool_t.h — sequence_pool's CPU kernels for one element type T
 * (base/tmpl.h): sequence_pool.c includes this file once for float and
 * once for double. */

/* Out[r] = the row's valid steps pooled; X [batch, time, inner] and Out
 * [batch, inner] walked row by row, a step's inner elements together. */
static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X);
  int64_t batch, time, inner;
  pd_seq_dims(xt, &batch, &time, &inner);
  const int64_t *len = lengths(c);
  pd_status st = pd_seq_check_lengths(c, LENGTHS, len, batch, time, 1);
  if (st) return st;
  int type = pool_type(c);
  const T *x = PD_DATA(xt, T);
  T *out = PD_DATA(pd_out(c, OUT), T);
  for (int64_t r = 0; r < batch; r++) {
    int64_t n = pd_seq_len(len, r, time);
    const T *xr = x + r * time * inner;
    T *o = out + r * inner;
    for (int64_t i = 0; i < inner; i++) o[i] = xr[i];
    for (int64_t t = 1; t < n; t++) {
      const T *xs = xr + t * inner;
      if (type == POOL_MAX) /* the first maximum; a NaN, once met, stays */
        for (int64_t i = 0; i < inner; i++) o[i] = !isnan(o[i]) && (xs[i] > o[i] || isnan(xs[i])) ? xs[i] : o[i];
      else
        for (int64_t i = 0; i < inner; i++) o[i] += xs[i];
    }
    if (type == POOL_MEAN)
      for (int64_t i = 0; i < inner; i++) o[i] /= (T)n;
  }
  return PD_OK;
}

/* sum: dX = dOut at each valid step; mean: dOut / L; max: dOut at the step
 * the forward took (the first equal to Out, the first NaN when Out is NaN),
 * found again from X and Out. 0 at the steps past a row's length. */
static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X), *dxt = pd_out(c, G_DX), *dyt = pd_in(c, G_DOUT);
  if (!dxt) return PD_OK;
  int64_t batch, time, inner;
  pd_seq_dims(xt, &batch, &time, &inner);
  const int64_t *len = lengths(c);
  pd_status st = pd_seq_check_lengths(c, LENGTHS, len, batch, time, 1);
  if (st) return st;
  int type = pool_type(c);
  const T *x = PD_DATA(xt, T), *out = PD_DATA(pd_in(c, G_OUT), T), *dy = dyt ? PD_DATA(dyt, T) : NULL;
  T *dx = PD_DATA(dxt, T);
  memset(dx, 0, pd_tensor_bytes(dxt));
  for (int64_t r = 0; r < batch && dy; r++) {
    int64_t n = pd_seq_len(len, r, time);
    const T *xr = x + r * time * inner, *o = out + r * inner, *g = dy + r * inner;
    T *dr = dx + r * time * inner;
    if (type == POOL_MAX) {
      for (int64_t i = 0; i < inner; i++)
        for (int64_t t = 0; t < n; t++) {
          T v = xr[t * inner + i];
          if (v == o[i] || (isnan(v) && isnan(o[i]))) {
            dr[t * inner + i] = g[i];
            break;
          }
        }
      continue;
    }
    T div = type == POOL_MEAN ? (T)n : 1;
    for (int64_t t = 0; t < n; t++)
      for (int64_t i = 0; i < inner; i++) dr[t * inner + i] = g[i] / div;
  }
  return PD_OK;
}
