/* slice.h — slice's slots and attributes, shared by slice.c (CPU) and
 * slice.cu (GPU), the GPU kernels' declarations, and the index math both
 * sides use: the check of a window whose start is data (pd_slice_window), where an output
 * element reads from (pd_slice_src) and which output reads an input element
 * (pd_slice_dst: the backward gathers, no atomics). */
#ifndef PD_OPS_SLICE_H
#define PD_OPS_SLICE_H

#include "base/hostdev.h"
#include "base/slice_range.h"
#include "core/op.h"

enum { X, STARTS, N_IN };
enum { OUT, N_OUT };
enum { A_AXES, A_STARTS, A_ENDS, A_STEPS, A_SIZES, N_ATTRS };
/* Grad op slots (see op.h): inputs X Starts Out dOut, output dX. */
enum {
  G_STARTS = PD_GRAD_X(N_IN, N_OUT, STARTS),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT),
  G_DX = PD_GRAD_DX(N_IN, N_OUT, X)
};

/* One run's geometry: X's dims (in) and Out's (out); along dim d Out's
 * index q reads X's first[d] + q * step[d]. A dim whose start is data
 * takes first[d] from entry dyn[d] of Starts (-1: first[d] is fixed). */
typedef struct pd_slice_geom {
  int nd;
  int64_t in[PD_MAX_DIMS], out[PD_MAX_DIMS], first[PD_MAX_DIMS], step[PD_MAX_DIMS];
  int dyn[PD_MAX_DIMS];
  int64_t numel_in, numel_out;
} pd_slice_geom;

/* The first index of a window of n elements, step s, starting at v (a
 * value of Starts) along a dim of d; -1 when the window does not lie
 * inside the dim. No start counts from the end: a start computed at run
 * time that did so would change the elements taken where ONNX's bounds
 * cross 0, so it is refused instead. An empty window fits any v in [0, d]. */
PD_HD int64_t pd_slice_window(int64_t v, int64_t d, int64_t n, int64_t s) {
  if (v < 0 || v > d) return -1;
  if (n == 0) return v;
  if (n > 1 && (s > d || s < -d)) return -1; /* (n - 1) * s would leave the dim, or overflow */
  int64_t last = v + (n - 1) * s;
  return v < d && last >= 0 && last < d ? v : -1;
}

/* The offset in X that Out's element o reads, for the dims' first indices. */
PD_HD int64_t pd_slice_src(const pd_slice_geom *g, const int64_t *first, int64_t o) {
  int64_t off = 0, mul = 1;
  for (int d = g->nd - 1; d >= 0; d--) {
    int64_t q = o % g->out[d];
    o /= g->out[d];
    off += (first[d] + q * g->step[d]) * mul;
    mul *= g->in[d];
  }
  return off;
}

/* The offset in Out of the element that reads X's element i, -1: none. */
PD_HD int64_t pd_slice_dst(const pd_slice_geom *g, const int64_t *first, int64_t i) {
  int64_t off = 0, mul = 1;
  for (int d = g->nd - 1; d >= 0; d--) {
    int64_t q = i % g->in[d] - first[d];
    i /= g->in[d];
    if (q % g->step[d]) return -1;
    q /= g->step[d];
    if (q < 0 || q >= g->out[d]) return -1;
    off += q * mul;
    mul *= g->out[d];
  }
  return off;
}

/* The dim whose start is entry k of Starts. */
PD_HD int pd_slice_axis_of(const pd_slice_geom *g, int k) {
  int a = 0;
  while (a < g->nd && g->dyn[a] != k) a++;
  return a;
}

/* The first indices of a run: the fixed ones, and those Starts (values
 * `starts`, host or device memory as the caller runs) gives. Returns -1,
 * or the entry of Starts whose window does not fit. */
PD_HD int pd_slice_firsts(const pd_slice_geom *g, const int64_t *starts, int64_t *first) {
  for (int d = 0; d < g->nd; d++) {
    first[d] = g->first[d];
    if (g->dyn[d] < 0) continue;
    first[d] = pd_slice_window(starts[g->dyn[d]], g->in[d], g->out[d], g->step[d]);
    if (first[d] < 0) return g->dyn[d];
  }
  return -1;
}

#ifdef __cplusplus
extern "C" {
#endif
/* The geometry for X (its run-time dims) from the attributes, checked by
 * the shape function. */
pd_slice_geom pd_slice_geom_of(pd_ctx *c, const pd_tensor *x);
/* The op's failure for Starts entry k, whose window does not fit. */
pd_status pd_slice_fail_window(pd_ctx *c, const pd_slice_geom *g, int k, int64_t v);
pd_status pd_gpu_slice_fwd(pd_ctx *c);
pd_status pd_gpu_slice_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
