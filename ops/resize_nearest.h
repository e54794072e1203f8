/* resize_nearest.h — resize_nearest's slots and attributes, shared by
 * resize_nearest.c (CPU) and resize_nearest.cu (GPU), the GPU kernels'
 * declarations, and the index math both sides use. Included by the op's
 * own files only. */
#ifndef PD_OPS_RESIZE_NEAREST_H
#define PD_OPS_RESIZE_NEAREST_H

#include <math.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "gpu/gpu.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_SCALES, N_ATTRS };
/* Grad op slots (see op.h): inputs X Out dOut, output dX. */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X) };

/* X [N, C, H, W] (planes = N C), Out [N, C, ho, wo], the scales sh, sw. */
typedef struct pd_rn_geom {
  int64_t planes, h, w, ho, wo;
  double sh, sw;
} pd_rn_geom;

/* The output size of a dim of n: floor(n scale). */
PD_HD int64_t pd_rn_size(int64_t n, double scale) { return (int64_t)floor((double)n * scale); }

/* The input index output o reads: min(floor(o / scale), n - 1) (ONNX's
 * asymmetric coordinates with nearest_mode floor, PyTorch's "nearest"). */
PD_HD int64_t pd_rn_src(int64_t o, double scale, int64_t n) {
  int64_t i = (int64_t)floor((double)o / scale);
  return i < n - 1 ? i : n - 1;
}

/* The first output (of out) whose source is >= i: pd_rn_src is
 * nondecreasing in o, so the outputs reading input i are
 * [pd_rn_first(i), pd_rn_first(i + 1)). Found from the estimate ceil(i
 * scale) and corrected with pd_rn_src itself, so that it agrees with the
 * forward to the last rounding. */
PD_HD int64_t pd_rn_first(int64_t i, double scale, int64_t n, int64_t out) {
  if (i >= n) return out;
  int64_t o = (int64_t)ceil((double)i * scale);
  if (o > out) o = out;
  if (o < 0) o = 0;
  while (o > 0 && pd_rn_src(o - 1, scale, n) >= i) o--;
  while (o < out && pd_rn_src(o, scale, n) < i) o++;
  return o;
}

/* Out's and dX's elements, per element type (resize_nearest_math_t.h). */
#define T float
#include "resize_nearest_math_t.h"
#undef T
#define T double
#include "resize_nearest_math_t.h"
#undef T

/* The geometry of a run from X's shape and the scales (checked by the
 * shape function). */
static inline pd_rn_geom pd_rn_geom_of(pd_ctx *c, const pd_tensor *x) {
  const pd_attr *s = pd_attr_at(c, A_SCALES);
  pd_rn_geom g;
  g.planes = x->dims[0] * x->dims[1];
  g.h = x->dims[2], g.w = x->dims[3];
  g.sh = s->floats[0], g.sw = s->floats[1];
  g.ho = pd_rn_size(g.h, g.sh), g.wo = pd_rn_size(g.w, g.sw);
  return g;
}

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_resize_nearest_fwd(pd_ctx *c);
pd_status pd_gpu_resize_nearest_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
