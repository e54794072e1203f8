/* log_softmax_t.h — log_softmax's CPU kernels for one element type T
 * (base/tmpl.h): log_softmax.c includes this file, and lastdim_t.h after
 * it, once for float and once for double. */

static pd_status PD_T(forward)(pd_ctx *c) {
  int64_t rows, d;
  pd_lastdim_rows(pd_in(c, X), &rows, &d);
  const T *x = PD_DATA(pd_in(c, X), T);
  T *y = PD_DATA(pd_out(c, OUT), T);
  for (int64_t r = 0; r < rows; r++, x += d, y += d) {
    T m = x[0], sum = 0;
    for (int64_t j = 1; j < d; j++) m = x[j] > m ? x[j] : m;
    for (int64_t j = 0; j < d; j++) sum += exp(x[j] - m);
    T lse = log(sum); /* sum >= 1: the max's own term is 1 */
    for (int64_t j = 0; j < d; j++) y[j] = PD_T(pd_log_softmax)(x[j], m, lse);
  }
  return PD_OK;
}

/* Backward (lastdim_t.h's row loop): dX = dOut - exp(Out) s, s = sum of dOut. */
static inline T PD_T(lastdim_term)(T y, T dy) {
  (void)y;
  return dy;
}
static inline T PD_T(lastdim_grad)(T y, T dy, T s) { return PD_T(pd_log_softmax_grad)(y, dy, s); }
