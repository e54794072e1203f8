/* slice_range.h — ONNX Slice's rule for constant bounds along one dim,
 * shared by the slice op (CPU and GPU) and the ONNX import's folding of
 * shape arithmetic, so that both clamp alike. */
#ifndef PD_BASE_SLICE_RANGE_H
#define PD_BASE_SLICE_RANGE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/hostdev.h"

/* Along a dim of d, bounds [b, e) and step s (not 0): negative bounds
 * count from the end, then the start is clamped into [0, d] (s > 0) or
 * [0, d - 1] (s < 0) and the end into [0, d] or [-1, d - 1]. Returns the
 * elements taken, the first at *first. */
PD_HD int64_t pd_slice_range(int64_t d, int64_t b, int64_t e, int64_t s, int64_t *first) {
  b = b < 0 ? (b < -d ? 0 : b + d) : b;
  e = e < 0 ? (e < -d ? -1 : e + d) : e;
  if (s > 0)
    b = b > d ? d : b, e = e > d ? d : e < 0 ? 0 : e;
  else
    b = b > d - 1 ? d - 1 : b, e = e > d - 1 ? d - 1 : e;
  int64_t n = s > 0 ? (e - b + s - 1) / s : (b - e + (-s) - 1) / (-s);
  *first = b;
  return n > 0 ? n : 0;
}

/* Whether an end means "to the end of the dim" whatever its size: ONNX's
 * INT64_MAX, or INT32_MAX as exporters also write. */
PD_HD bool pd_slice_to_end(int64_t e) { return e >= INT32_MAX; }

#endif
