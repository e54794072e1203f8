/* sequence.h — what the sequence helpers (sequence_mask, sequence_last,
 * sequence_pool, sequence_mean) share: a sequence is [batch, time, ...]
 * (the layout of the recurrent ops), read as [batch, time, inner]; the
 * optional Lengths is int64 [batch]. The load-time shape checks and the
 * run-time check of each row's length, which names the row. */
#ifndef PD_OPS_SEQUENCE_H
#define PD_OPS_SEQUENCE_H

#include <stdint.h>

#include "core/op.h"

/* X in `slot` is a float sequence [batch, time, ...] with at least
 * `min_time` steps (when its time is known). */
static inline pd_status pd_seq_check_x(pd_ctx *c, int slot, int64_t min_time) {
  pd_tensor *x = pd_in(c, slot);
  if (x->ndim < 2) return pd_ctx_fail_shape(c, "X", pd_ctx_in_name(c, slot, 0), x, "a sequence is [batch, time, ...]");
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  if (x->dims[1] >= 0 && x->dims[1] < min_time)
    return pd_ctx_fail_shape(c, "X", pd_ctx_in_name(c, slot, 0), x, "a sequence needs at least one step");
  return PD_OK;
}

/* Lengths in `slot`, when given, is int64 [batch]. */
static inline pd_status pd_seq_check_lengths_shape(pd_ctx *c, int slot, int64_t batch) {
  pd_tensor *len = pd_in(c, slot);
  if (len && (len->dtype != PD_I64 || len->ndim != 1 || !pd_dim_fits(len->dims[0], batch)))
    return pd_ctx_fail_shape(c, "Lengths", pd_ctx_in_name(c, slot, 0), len, "lengths are int64 [batch]");
  return PD_OK;
}

/* Every length is from `lo` (0 or 1) to the `time` steps; the first that is
 * not is an input error naming the row (err->row: the trainer names the
 * data file's row too). */
static inline pd_status pd_seq_check_lengths(pd_ctx *c, int slot, const int64_t *len, int64_t batch, int64_t time,
                                             int64_t lo) {
  for (int64_t r = 0; len && r < batch; r++)
    if (len[r] < lo || len[r] > time) {
      pd_status st =
          pd_ctx_fail(c, PD_ERR_INPUT, "Lengths \"%s\" row %lld is %lld; a length is from %lld to the %lld steps of X",
                      pd_ctx_in_name(c, slot, 0), (long long)r, (long long)len[r], (long long)lo, (long long)time);
      c->err->row = r;
      return st;
    }
  return PD_OK;
}

/* X [batch, time, ...] as [batch, time, inner]. */
static inline void pd_seq_dims(const pd_tensor *x, int64_t *batch, int64_t *time, int64_t *inner) {
  *batch = x->dims[0], *time = x->dims[1], *inner = 1;
  for (int d = 2; d < x->ndim; d++) *inner *= x->dims[d];
}

/* Row r's steps: its length, or every step when Lengths is left out. */
static inline int64_t pd_seq_len(const int64_t *len, int64_t r, int64_t time) { return len ? len[r] : time; }

#endif
