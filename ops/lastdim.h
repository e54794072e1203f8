/* lastdim.h — what the ops normalising along the last dim (softmax,
 * log_softmax) share: the shape function (float X of rank >= 1, Out of X's
 * shape) and X read as [rows, d]; lastdim_t.h holds their gradient kernel's
 * row loop. */
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

#endif
