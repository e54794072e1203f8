/* pad.h — pad's slots and attributes, shared by pad.c (CPU) and pad.cu
 * (GPU), the GPU kernels' declarations, and the index math both sides use:
 * where an output element reads from (pd_pad_src) and which outputs read an
 * input element (pd_pad_spans), so that the backward gathers (no scatter,
 * no atomics: the same sums in the same order on both sides). */
#ifndef PD_OPS_PAD_H
#define PD_OPS_PAD_H

#include <string.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "gpu/gpu.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_PADS, A_MODE, A_VALUE, N_ATTRS };
/* Grad op slots (see op.h): inputs X Out dOut, output dX. */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X) };

typedef enum pd_pad_mode { PD_PAD_CONSTANT, PD_PAD_REFLECT, PD_PAD_EDGE } pd_pad_mode;

/* One run's shapes: X's dims in, Out's out, the pads before (pb) and after
 * (pe) each dim. */
typedef struct pd_pad_geom {
  int nd;
  pd_pad_mode mode;
  int64_t in[PD_MAX_DIMS], out[PD_MAX_DIMS], pb[PD_MAX_DIMS], pe[PD_MAX_DIMS];
  int64_t numel_in, numel_out;
} pd_pad_geom;

/* The input index output index o of a dim of n (pads pb before) reads, -1
 * for the constant padding. reflect mirrors about the edge element (pads <
 * n), edge repeats it. */
PD_HD int64_t pd_pad_src(pd_pad_mode mode, int64_t o, int64_t n, int64_t pb) {
  int64_t i = o - pb;
  if (i >= 0 && i < n) return i;
  if (mode == PD_PAD_CONSTANT) return -1;
  if (mode == PD_PAD_EDGE) return i < 0 ? 0 : n - 1;
  return i < 0 ? -i : 2 * (n - 1) - i;
}

/* The output indices that read input index i of a dim, as up to 3 ranges
 * [lo, hi) in increasing order; returns their count. */
PD_HD int pd_pad_spans(pd_pad_mode mode, int64_t i, int64_t n, int64_t pb, int64_t pe, int64_t *lo, int64_t *hi) {
  if (mode == PD_PAD_EDGE) {
    lo[0] = i == 0 ? 0 : i + pb;
    hi[0] = i == n - 1 ? n + pb + pe : i + pb + 1;
    return 1;
  }
  int k = 0;
  if (mode == PD_PAD_REFLECT && i >= 1 && i <= pb) lo[k] = pb - i, hi[k] = pb - i + 1, k++;
  lo[k] = i + pb, hi[k] = i + pb + 1, k++;
  if (mode == PD_PAD_REFLECT && i <= n - 2 && i >= n - 1 - pe) lo[k] = pb + 2 * (n - 1) - i, hi[k] = lo[k] + 1, k++;
  return k;
}

/* Out's element o and dX's element i, per element type (pad_math_t.h). */
#define T float
#include "pad_math_t.h"
#undef T
#define T double
#include "pad_math_t.h"
#undef T

static const char *const pd_pad_modes[] = {"constant", "reflect", "edge", 0};

/* The geometry of a run from X's shape and the attributes (checked by the
 * shape function). */
static inline pd_pad_geom pd_pad_geom_of(pd_ctx *c, const pd_tensor *x) {
  pd_pad_geom g;
  const pd_attr *pads = pd_attr_at(c, A_PADS);
  g.nd = x->ndim;
  g.mode = PD_PAD_CONSTANT;
  for (int m = 0; pd_pad_modes[m]; m++)
    if (strcmp(pd_attr_s(c, A_MODE), pd_pad_modes[m]) == 0) g.mode = (pd_pad_mode)m;
  g.numel_in = g.numel_out = 1;
  for (int d = 0; d < x->ndim; d++) {
    g.in[d] = x->dims[d];
    g.pb[d] = pads->ints[d];
    g.pe[d] = pads->ints[x->ndim + d];
    g.out[d] = g.in[d] + g.pb[d] + g.pe[d];
    g.numel_in *= g.in[d];
    g.numel_out *= g.out[d];
  }
  return g;
}

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_pad_fwd(pd_ctx *c);
pd_status pd_gpu_pad_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
