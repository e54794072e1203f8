/* elementwise_add.cu — GPU kernels of elementwise_add: Out[i] = X[i] +
 * Y[yoff(i)] with the broadcast of elementwise_add.c (kmath.h's pd_bcast);
 * dX = dOut; dY[j] = sum of dOut over the elements Y[j] was added to: a
 * copy when Y has X's shape, one thread per element of Y adding in order
 * when it repeats few times, else one block per element of Y in a
 * fixed-order reduction. */
#include "elementwise_add.h"
#include "gpu_common.cuh"
#include "gpu_ops.h"

static __global__ void add_fwd(pd_bcast b, const float *x, const float *y, float *out) {
  PD_GPU_FOR(i, b.numel) out[i] = x[i] + y[pd_bcast_yoff(&b, i)];
}
/* Few elements per Y element: one thread each, adding them in order. */
static __global__ void add_bwd_y_few(pd_bcast b, const float *g, float *gy) {
  int64_t reps = b.ny ? b.numel / b.ny : 0;
  PD_GPU_FOR(j, b.ny) {
    float s = 0;
    for (int64_t r = 0; r < reps; r++) s += g[pd_bcast_xidx(&b, j, r)];
    gy[j] = s;
  }
}
/* Many (a bias over a batch): one block each, a fixed-order block reduction. */
static __global__ void add_bwd_y(pd_bcast b, const float *g, float *gy) {
  int64_t reps = b.ny ? b.numel / b.ny : 0;
  PD_GPU_FOR_ROWS(j, b.ny) {
    float s = 0;
    PD_GPU_FOR_COLS(r, reps) s += g[pd_bcast_xidx(&b, j, r)];
    s = pd_block_sum(s);
    if (threadIdx.x == 0) gy[j] = s;
  }
}

extern "C" pd_status pd_gpu_elementwise_add_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y);
  pd_bcast b;
  pd_elementwise_add_bcast(c, x, y, &b);
  return PD_GPU_LAUNCH_N(c, b.numel, add_fwd, b, PD_DATA(x, float), PD_DATA(y, float), PD_DATA(pd_out(c, OUT), float));
}

/* Grad op slots: inputs X Y Out dOut, outputs dX dY. */
extern "C" pd_status pd_gpu_elementwise_add_bwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y), *dout = pd_in(c, G_DOUT);
  pd_tensor *dx = pd_out(c, X), *dy = pd_out(c, Y);
  pd_bcast b;
  pd_elementwise_add_bcast(c, x, y, &b);
  pd_status st = PD_OK;
  /* dX may be dOut's very buffer (grad_inplace): nothing to copy then */
  if (dx && PD_DATA(dx, float) != PD_DATA(dout, float))
    st = pd_gpu_copy(c, PD_DATA(dx, float), PD_DATA(dout, float), (size_t)b.numel * sizeof(float));
  if (st || !dy) return st;
  if (b.ny == b.numel) /* Y has X's shape */
    return pd_gpu_copy(c, PD_DATA(dy, float), PD_DATA(dout, float), (size_t)b.numel * sizeof(float));
  if (b.ny == 0 || b.numel / b.ny <= 64)
    return PD_GPU_LAUNCH_N(c, b.ny, add_bwd_y_few, b, PD_DATA(dout, float), PD_DATA(dy, float));
  return PD_GPU_LAUNCH_ROWS(c, b.ny, add_bwd_y, b, PD_DATA(dout, float), PD_DATA(dy, float));
}
