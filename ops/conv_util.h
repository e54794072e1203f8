/* conv_util.h — what conv2d and pool2d share: the checks of their NCHW
 * input and of their (height, width) attributes, the output size of a
 * window sliding over one spatial dim (rounded down, or up in ceil mode),
 * and the range of output positions whose input index falls inside the
 * image, so inner loops copy or scan without bounds checks. */
#ifndef PD_CONV_UTIL_H
#define PD_CONV_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/op.h"

/* Attribute a, named `name`, as two values (height, width), each at most
 * `limit`. */
static inline pd_status pd_conv_pair(pd_ctx *c, int a, const char *name, int64_t limit, int64_t *v0, int64_t *v1) {
  const pd_attr *at = pd_attr_at(c, a);
  char buf[128];
  if (at->n != 2)
    return pd_ctx_fail(c, PD_ERR_INPUT, "attribute \"%s\" must have 2 values (height, width), got %s", name,
                       pd_attr_str(at, buf, sizeof buf));
  if (at->ints[0] > limit || at->ints[1] > limit)
    return pd_ctx_fail(c, PD_ERR_INPUT, "attribute \"%s\" values must be at most %lld, got %s", name, (long long)limit,
                       pd_attr_str(at, buf, sizeof buf));
  *v0 = at->ints[0], *v1 = at->ints[1];
  return PD_OK;
}

/* x, the input slot named `slot`, must be a float [N, C, H, W] with C, H and
 * W known and at most `limit` (N may be -1 at load). */
static inline pd_status pd_conv_nchw(pd_ctx *c, const pd_tensor *x, const char *slot, int64_t limit) {
  char xs[128];
  pd_dims_str(x->ndim, x->dims, xs, sizeof xs);
  if (x->ndim != 4) return pd_ctx_fail(c, PD_ERR_INPUT, "%s must be 4-D [N, C, H, W], got shape %s", slot, xs);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "%s must be float32 or float64, got %s (add a cast op)", slot,
                       pd_dtype_name(x->dtype));
  for (int d = 1; d < 4; d++)
    if (x->dims[d] < 0 || x->dims[d] > limit)
      return pd_ctx_fail(c, PD_ERR_INPUT,
                         "%s's C, H and W must be known and at most %lld (only the batch may be -1), got %s", slot,
                         (long long)limit, xs);
  return PD_OK;
}

/* Span of a window of k taps spaced dil apart: dil (k - 1) + 1. */
static inline int64_t pd_win_span(int64_t k, int64_t dil) { return dil * (k - 1) + 1; }

/* Output positions of a window of `span` sliding by `stride` over `in`
 * elements padded by `pad` on both sides: (in + 2 pad - span) / stride + 1,
 * rounded down, or up with `ceil`: then a last window may hang past the
 * padded input, but must start inside the input or its left padding (the
 * rule of Caffe, Paddle and PyTorch). 0 when no window fits. */
static inline int64_t pd_win_out(int64_t in, int64_t span, int64_t stride, int64_t pad, bool ceil) {
  int64_t room = in + 2 * pad - span + (ceil ? stride - 1 : 0);
  if (room < 0) return 0;
  int64_t out = room / stride + 1;
  if (ceil && (out - 1) * stride >= in + pad) out--;
  return out;
}

/* Output positions o in [*lo, *hi) read input index o * stride + off inside
 * [0, in); those before *lo and from *hi on fall in the padding. */
static inline void pd_win_range(int64_t off, int64_t stride, int64_t in, int64_t out, int64_t *lo, int64_t *hi) {
  int64_t a = off >= 0 ? 0 : (-off + stride - 1) / stride;
  int64_t b = in - off <= 0 ? 0 : (in - off + stride - 1) / stride;
  if (a > out) a = out;
  if (b > out) b = out;
  if (b < a) b = a;
  *lo = a, *hi = b;
}

#endif
