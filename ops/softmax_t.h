/* softmax_t.h — softmax's CPU kernels for one element type T (base/tmpl.h):
 * softmax.c includes this file, and lastdim_t.h after it, once for float
 * and once for double. */

static pd_status PD_T(forward)(pd_ctx *c) {
  int64_t rows, d;
  pd_lastdim_rows(pd_in(c, X), &rows, &d);
  const T *x = PD_DATA(pd_in(c, X), T);
  T *y = PD_DATA(pd_out(c, OUT), T);
  for (int64_t r = 0; r < rows; r++, x += d, y += d) {
    T m = x[0], sum = 0;
    for (int64_t j = 1; j < d; j++) m = x[j] > m ? x[j] : m;
    for (int64_t j = 0; j < d; j++) {
      y[j] = exp(x[j] - m);
      sum += y[j];
    }
    T inv = 1 / sum; /* sum >= 1: the max's own term is exp(0) */
    for (int64_t j = 0; j < d; j++) y[j] *= inv;
  }
  return PD_OK;
}

/* Backward (lastdim_t.h's row loop): dX = Out (dOut - s), s = <dOut, Out>. */
static inline T PD_T(lastdim_term)(T y, T dy) { return dy * y; }
static inline T PD_T(lastdim_grad)(T y, T dy, T s) { return PD_T(pd_softmax_grad)(y, dy, s); }
