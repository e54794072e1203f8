/* lastdim.h — what the ops normalising along the last dim (softmax,
 * log_softmax) share: the shape function (float X of rank >= 1, Out of X's
 * shape), X read as [rows, d], and the gradient kernel's row loop. */
#ifndef PD_LASTDIM_H
#define PD_LASTDIM_H

#include "core/op.h"

static inline pd_status pd_lastdim_infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, 0);
  if (x->ndim < 1) return pd_ctx_fail(c, PD_ERR_INPUT, "input X must have at least 1 dim, got %d", x->ndim);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  return pd_ctx_set_shape(c, pd_out(c, 0), x->dtype, x->ndim, x->dims);
}

/* x read as [rows, d], d the last dim. */
static inline void pd_lastdim_rows(const pd_tensor *x, int64_t *rows, int64_t *d) {
  *d = x->dims[x->ndim - 1];
  *rows = *d > 0 ? pd_tensor_numel(x) / *d : 0;
}

/* The gradient kernel backward_T of such an op whose dX row is
 * GRAD(y[j], dy[j], s), s the row's sum of TERM over j (TERM reads y[j] and
 * dy[j]); dX is 0 where no gradient reaches Out. Uses the including file's
 * grad slots G_OUT, G_DOUT and G_DX. */
#define PD_LASTDIM_BACKWARD(T, GRAD, TERM)                                        \
  static pd_status backward_##T(pd_ctx *c) {                                      \
    pd_tensor *dxt = pd_out(c, G_DX), *dyt = pd_in(c, G_DOUT);                    \
    if (!dxt) return PD_OK;                                                       \
    int64_t rows, d;                                                              \
    pd_lastdim_rows(pd_in(c, G_OUT), &rows, &d);                                  \
    const T *y = PD_DATA(pd_in(c, G_OUT), T), *dy = dyt ? PD_DATA(dyt, T) : NULL; \
    T *dx = PD_DATA(dxt, T);                                                      \
    for (int64_t r = 0; r < rows; r++, y += d, dx += d) {                         \
      if (!dy) { /* no gradient reaches Out */                                    \
        for (int64_t j = 0; j < d; j++) dx[j] = 0;                                \
        continue;                                                                 \
      }                                                                           \
      T s = 0;                                                                    \
      for (int64_t j = 0; j < d; j++) s += TERM;                                  \
      for (int64_t j = 0; j < d; j++) dx[j] = GRAD(y[j], dy[j], s);               \
      dy += d;                                                                    \
    }                                                                             \
    return PD_OK;                                                                 \
  }

#endif
