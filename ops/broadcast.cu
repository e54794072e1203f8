/* broadcast.cu — GPU kernels of broadcast_add, broadcast_sub, broadcast_mul
 * and broadcast_div (the def's data says which): one thread per element of
 * Out, X's and Y's elements found through kmath.h's pd_bc_map. Backward
 * gathers, for each element of dX (and of dY), the dOut terms of the Out
 * elements it was read by, in Out's order (pd_strided_gather): one thread
 * per element when it was read few times, else one block per element in a
 * fixed-order block reduction. No atomics, so every run gives the same bits. */
#include "broadcast.h"
#include "gpu_common.cuh"
#include "gpu_ops.h"

static pd_bc_kind kind_of(pd_ctx *c) { return *(const pd_bc_kind *)c->op->def->data; }

static __global__ void bc_fwd(pd_bc_map m, pd_bc_kind k, const float *x, const float *y, float *out) {
  PD_GPU_FOR(i, m.numel) {
    out[i] = pd_bc_op_float(k, x[pd_strided_off(m.nd, m.size, m.xs, i)], y[pd_strided_off(m.nd, m.size, m.ys, i)]);
  }
}

/* The gradient term of Out's element i for X (for_y false) or Y. */
__device__ static inline float bc_term(const pd_bc_map &m, pd_bc_kind k, bool for_y, const float *x, const float *y,
                                       const float *g, int64_t i) {
  float yv = y[pd_strided_off(m.nd, m.size, m.ys, i)];
  if (!for_y) return pd_bc_dx_float(k, g[i], yv);
  return pd_bc_dy_float(k, g[i], x[pd_strided_off(m.nd, m.size, m.xs, i)], yv);
}

/* Few reads per element: one thread each, adding them in Out's order. */
static __global__ void bc_bwd_few(pd_bc_map m, pd_bc_kind k, bool for_y, const float *x, const float *y, const float *g,
                                  float *d) {
  int64_t n = for_y ? m.ny : m.nx, reps = n ? m.numel / n : 0;
  const int64_t *st = for_y ? m.ys : m.xs;
  PD_GPU_FOR(j, n) {
    float s = 0;
    for (int64_t r = 0; r < reps; r++) s += bc_term(m, k, for_y, x, y, g, pd_strided_gather(m.nd, m.size, st, j, r));
    d[j] = s;
  }
}
/* Many (a bias over a batch): one block each, a fixed-order block reduction. */
static __global__ void bc_bwd_many(pd_bc_map m, pd_bc_kind k, bool for_y, const float *x, const float *y,
                                   const float *g, float *d) {
  int64_t n = for_y ? m.ny : m.nx, reps = n ? m.numel / n : 0;
  const int64_t *st = for_y ? m.ys : m.xs;
  PD_GPU_FOR_ROWS(j, n) {
    float s = 0;
    PD_GPU_FOR_COLS(r, reps) s += bc_term(m, k, for_y, x, y, g, pd_strided_gather(m.nd, m.size, st, j, r));
    s = pd_block_sum(s);
    if (threadIdx.x == 0) d[j] = s;
  }
}

static pd_bc_map map_of(const pd_tensor *x, const pd_tensor *y, const pd_tensor *out) {
  pd_bc_map m;
  pd_bc_map_init(&m, x->ndim, x->dims, y->ndim, y->dims, out->ndim, out->dims);
  return m;
}

extern "C" pd_status pd_gpu_broadcast_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, PD_BC_X), *y = pd_in(c, PD_BC_Y), *out = pd_out(c, PD_BC_OUT);
  pd_bc_map m = map_of(x, y, out);
  return PD_GPU_LAUNCH_N(c, m.numel, bc_fwd, m, kind_of(c), PD_DATA(x, float), PD_DATA(y, float), PD_DATA(out, float));
}

extern "C" pd_status pd_gpu_broadcast_bwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, PD_BC_G_X), *y = pd_in(c, PD_BC_G_Y), *out = pd_in(c, PD_BC_G_OUT);
  pd_tensor *g = pd_in(c, PD_BC_G_DOUT), *d[2] = {pd_out(c, PD_BC_X), pd_out(c, PD_BC_Y)};
  pd_bc_map m = map_of(x, y, out);
  pd_bc_kind k = kind_of(c);
  pd_status st = PD_OK;
  for (int i = 0; i < 2 && !st; i++) {
    if (!d[i]) continue;
    int64_t n = i ? m.ny : m.nx;
    if (!g) {
      st = pd_gpu_zero(c, PD_DATA(d[i], float), (size_t)n * sizeof(float));
      continue;
    }
    const float *xs = PD_DATA(x, float), *ys = PD_DATA(y, float), *gs = PD_DATA(g, float);
    if (n == 0 || m.numel / n <= 64)
      st = PD_GPU_LAUNCH_N(c, n, bc_bwd_few, m, k, i == 1, xs, ys, gs, PD_DATA(d[i], float));
    else
      st = PD_GPU_LAUNCH_ROWS(c, n, bc_bwd_many, m, k, i == 1, xs, ys, gs, PD_DATA(d[i], float));
  }
  return st;
}
