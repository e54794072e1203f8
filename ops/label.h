/* label.h — class labels as cross_entropy, softmax_with_cross_entropy and
 * accuracy take them: int64 [N, 1] or [N], one class index per row of the
 * scores [N, C] (or, with soft_label, a float [N, C] distribution per row).
 * The load-time shape check (-1 allowed) and the run-time range check. */
#ifndef PD_LABEL_H
#define PD_LABEL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/op.h"

/* Checks the Label in `slot` against scores x [N, C]. */
static inline pd_status pd_label_check(pd_ctx *c, int slot, const pd_tensor *x, bool soft) {
  const pd_tensor *l = pd_in(c, slot);
  char ls[128], xs[128];
  pd_dims_str(l->ndim, l->dims, ls, sizeof ls);
  pd_dims_str(x->ndim, x->dims, xs, sizeof xs);
  if (soft) {
    if (l->dtype != x->dtype || l->ndim != 2 || !pd_dim_fits(l->dims[0], x->dims[0]) ||
        !pd_dim_fits(l->dims[1], x->dims[1]))
      return pd_ctx_fail(c, PD_ERR_INPUT,
                         "with soft_label, Label must be a %s distribution per row, shaped like the "
                         "scores %s; got %s %s",
                         pd_dtype_name(x->dtype), xs, pd_dtype_name(l->dtype), ls);
    return PD_OK;
  }
  if (l->dtype != PD_I64)
    return pd_ctx_fail(c, PD_ERR_INPUT, "Label must be int64 class indices, got %s (add a cast op)",
                       pd_dtype_name(l->dtype));
  if (!(l->ndim == 1 || (l->ndim == 2 && l->dims[1] == 1)) || !pd_dim_fits(l->dims[0], x->dims[0]))
    return pd_ctx_fail(c, PD_ERR_INPUT, "Label must be [N, 1] or [N], one class per row of the scores %s; got %s", xs,
                       ls);
  return PD_OK;
}

/* Every label must name a class in [0, classes). */
static inline pd_status pd_label_check_range(pd_ctx *c, const int64_t *label, int64_t rows, int64_t classes) {
  for (int64_t i = 0; i < rows; i++)
    if (label[i] < 0 || label[i] >= classes) {
      pd_status st = pd_ctx_fail(c, PD_ERR_INPUT, "label %lld at row %lld is out of range [0, %lld)",
                                 (long long)label[i], (long long)i, (long long)classes);
      c->err->row = i; /* the trainer names the data file's row */
      return st;
    }
  return PD_OK;
}

#endif
