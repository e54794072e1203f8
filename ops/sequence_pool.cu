/* sequence_pool.cu — GPU kernels of sequence_pool: one thread per element
 * of a row's pooled vector, walking the row's valid steps in order as the
 * CPU kernel does (the same sum, bit for bit); backward the same thread
 * writes its column of dX at every step. A length outside [1, time], which
 * the CPU kernel reports, is never read through (its row becomes NaN) and
 * the lowest such row raises the fault record (fault.h) that the runner's
 * next fetch reports with the CPU kernel's message. */
#include "gpu_common.cuh"
#include "gpu_ops.h"
#include "sequence.h"
#include "sequence_pool.h"

/* Row r's length, 0 when it is outside [1, time]. */
__device__ static inline int64_t pool_len(const int64_t *len, int64_t r, int64_t time) {
  int64_t l = len ? len[r] : time;
  return l >= 1 && l <= time ? l : 0;
}

static __global__ void pool_fwd(const float *x, const int64_t *len, float *out, int64_t batch, int64_t time,
                                int64_t inner, int type, pd_gpu_fault *fault, unsigned long long op) {
  int64_t bad = INT64_MAX;
  PD_GPU_FOR(e, batch * inner) {
    int64_t r = e / inner, i = e % inner, n = pool_len(len, r, time);
    if (!n) {
      out[e] = NAN;
      bad = r < bad ? r : bad;
      continue;
    }
    const float *xr = x + r * time * inner + i;
    float o = xr[0];
    for (int64_t t = 1; t < n; t++) {
      float v = xr[t * inner];
      if (type == POOL_MAX) /* the first maximum; a NaN, once met, stays */
        o = !isnan(o) && (v > o || isnan(v)) ? v : o;
      else
        o += v;
    }
    out[e] = type == POOL_MEAN ? o / (float)n : o;
  }
  if (len) pd_gpu_raise_first(fault, op, PD_GPU_FAULT_LENGTH, LENGTHS, len, bad, time, 1);
}

/* Column (r, i) of dX at every step: sum dOut, mean dOut / L, max dOut at
 * the first step equal to Out (the first NaN when Out is NaN); 0 past L. */
static __global__ void pool_bwd(const float *x, const float *out, const float *dy, const int64_t *len, float *dx,
                                int64_t batch, int64_t time, int64_t inner, int type, pd_gpu_fault *fault,
                                unsigned long long op) {
  int64_t bad = INT64_MAX;
  PD_GPU_FOR(e, batch * inner) {
    int64_t r = e / inner, i = e % inner, n = pool_len(len, r, time), base = r * time * inner + i;
    if (!n) bad = r < bad ? r : bad;
    float g = dy ? dy[e] : 0.f, o = out[e], div = type == POOL_MEAN ? (float)n : 1.f;
    bool found = false;
    for (int64_t t = 0; t < time; t++) {
      float d = 0.f;
      if (!n) {
        d = NAN;
      } else if (t < n && type == POOL_MAX) {
        float v = x[base + t * inner];
        if (!found && (v == o || (isnan(v) && isnan(o)))) d = g, found = true;
      } else if (t < n) {
        d = g / div;
      }
      dx[base + t * inner] = d;
    }
  }
  if (len) pd_gpu_raise_first(fault, op, PD_GPU_FAULT_LENGTH, LENGTHS, len, bad, time, 1);
}

static const int64_t *lengths(pd_ctx *c) {
  pd_tensor *len = pd_in(c, LENGTHS);
  return len ? PD_DATA(len, int64_t) : NULL;
}

extern "C" pd_status pd_gpu_sequence_pool_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  int64_t batch, time, inner;
  pd_seq_dims(x, &batch, &time, &inner);
  return PD_GPU_LAUNCH_N(c, batch * inner, pool_fwd, PD_DATA(x, float), lengths(c), PD_DATA(pd_out(c, OUT), float),
                         batch, time, inner, pool_type(c), pd_gpu_fault_record(c),
                         (unsigned long long)(uintptr_t)c->op);
}

extern "C" pd_status pd_gpu_sequence_pool_bwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  int64_t batch, time, inner;
  pd_seq_dims(x, &batch, &time, &inner);
  return PD_GPU_LAUNCH_N(c, batch * inner, pool_bwd, PD_DATA(x, float), PD_DATA(pd_in(c, G_OUT), float),
                         pd_gpu_f32(pd_in(c, G_DOUT)), lengths(c), PD_DATA(dx, float), batch, time, inner, pool_type(c),
                         pd_gpu_fault_record(c), (unsigned long long)(uintptr_t)c->op);
}
