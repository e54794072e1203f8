/* resize_nearest.cu — GPU kernels of resize_nearest: one thread per output
 * element forward, one per input element backward (the sum of dOut over
 * the block of outputs that read it: a gather, no atomics). The math is
 * resize_nearest.h's, as on the CPU. */
#include "gpu_common.cuh"
#include "resize_nearest.h"

static __global__ void rn_fwd(pd_rn_geom g, const float *x, float *y, int64_t n) {
  PD_GPU_FOR(o, n) y[o] = pd_rn_out_float(x, &g, o);
}
static __global__ void rn_bwd(pd_rn_geom g, const float *dy, float *dx, int64_t n) {
  PD_GPU_FOR(i, n) dx[i] = pd_rn_grad_at_float(dy, &g, i);
}

extern "C" pd_status pd_gpu_resize_nearest_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  pd_rn_geom g = pd_rn_geom_of(c, x);
  int64_t n = g.planes * g.ho * g.wo;
  return PD_GPU_LAUNCH_N(c, n, rn_fwd, g, PD_DATA(x, float), PD_DATA(pd_out(c, OUT), float), n);
}

/* Grad op slots: inputs X Out dOut, output dX. */
extern "C" pd_status pd_gpu_resize_nearest_bwd(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  pd_rn_geom g = pd_rn_geom_of(c, dx);
  int64_t n = g.planes * g.h * g.w;
  return PD_GPU_LAUNCH_N(c, n, rn_bwd, g, PD_DATA(pd_in(c, G_DOUT), float), PD_DATA(dx, float), n);
}
