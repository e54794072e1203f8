/* conv_util.h — sliding-window arithmetic shared by conv2d and pool2d: the
 * output size of a window sliding over one spatial dim (rounded down, or up
 * in ceil mode), and the range of output positions whose input index falls
 * inside the image, so inner loops copy or scan without bounds checks. */
#ifndef PD_CONV_UTIL_H
#define PD_CONV_UTIL_H

#include <stdbool.h>
#include <stdint.h>

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
