/* sequence_last.cu — GPU kernels of sequence_last: one thread per element
 * of Out (forward) or of dX (backward), each finding its row's step from
 * the lengths on the device. A length outside [1, time], which the CPU
 * kernel reports, is never read through (its row becomes NaN) and the
 * lowest such row raises the fault record (fault.h) that the runner's
 * next fetch reports with the CPU kernel's message. */
#include "gpu_common.cuh"
#include "gpu_ops.h"
#include "sequence.h"
#include "sequence_last.h"

/* The geometry of X [batch, time, inner] and of the picked chunks (move() in sequence_last.c). */
typedef struct last_dims {
  int64_t batch, time, inner, chunk;
  bool rev, bidir;
} last_dims;

/* Row r's length, 0 when it is outside [1, time]. */
__device__ static inline int64_t last_len(const int64_t *len, int64_t r, int64_t time) {
  int64_t l = len ? len[r] : time;
  return l >= 1 && l <= time ? l : 0;
}
/* The step element i of row r (length l) comes from. */
__device__ static inline int64_t last_step(last_dims g, int64_t l, int64_t i) {
  return g.rev || (g.bidir && (i / g.chunk) % 2) ? 0 : l - 1;
}

static __global__ void last_fwd(const float *x, const int64_t *len, float *out, last_dims g, pd_gpu_fault *fault,
                                unsigned long long op) {
  int64_t bad = INT64_MAX;
  PD_GPU_FOR(e, g.batch * g.inner) {
    int64_t r = e / g.inner, i = e % g.inner, l = last_len(len, r, g.time);
    if (!l) {
      out[e] = NAN;
      bad = r < bad ? r : bad;
      continue;
    }
    out[e] = x[(r * g.time + last_step(g, l, i)) * g.inner + i];
  }
  if (len) pd_gpu_raise_first(fault, op, PD_GPU_FAULT_LENGTH, LENGTHS, len, bad, g.time, 1);
}

/* dX[r, t, i] = dOut[r, i] at the step taken, 0 elsewhere (dy NULL: 0). */
static __global__ void last_bwd(const float *dy, const int64_t *len, float *dx, last_dims g, pd_gpu_fault *fault,
                                unsigned long long op) {
  int64_t bad = INT64_MAX;
  PD_GPU_FOR(e, g.batch * g.time * g.inner) {
    int64_t i = e % g.inner, t = e / g.inner % g.time, r = e / (g.inner * g.time), l = last_len(len, r, g.time);
    if (!l) {
      dx[e] = NAN;
      bad = r < bad ? r : bad;
      continue;
    }
    dx[e] = dy && t == last_step(g, l, i) ? dy[r * g.inner + i] : 0.f;
  }
  if (len) pd_gpu_raise_first(fault, op, PD_GPU_FAULT_LENGTH, LENGTHS, len, bad, g.time, 1);
}

static last_dims dims_of(pd_ctx *c, const pd_tensor *x) {
  last_dims g;
  pd_seq_dims(x, &g.batch, &g.time, &g.inner);
  g.bidir = is(c, "bidirectional"), g.rev = is(c, "reverse");
  g.chunk = g.bidir ? x->dims[x->ndim - 1] / 2 : g.inner;
  if (g.chunk < 1) g.chunk = 1; /* inner 0: no element, no division */
  return g;
}

static const int64_t *lengths(pd_ctx *c) {
  pd_tensor *len = pd_in(c, LENGTHS);
  return len ? PD_DATA(len, int64_t) : NULL;
}

extern "C" pd_status pd_gpu_sequence_last_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  last_dims g = dims_of(c, x);
  return PD_GPU_LAUNCH_N(c, g.batch * g.inner, last_fwd, PD_DATA(x, float), lengths(c), PD_DATA(pd_out(c, OUT), float),
                         g, pd_gpu_fault_record(c), (unsigned long long)(uintptr_t)c->op);
}

extern "C" pd_status pd_gpu_sequence_last_bwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  last_dims g = dims_of(c, x);
  return PD_GPU_LAUNCH_N(c, g.batch * g.time * g.inner, last_bwd, pd_gpu_f32(pd_in(c, G_DOUT)), lengths(c),
                         PD_DATA(dx, float), g, pd_gpu_fault_record(c), (unsigned long long)(uintptr_t)c->op);
}
