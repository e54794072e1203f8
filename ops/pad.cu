/* pad.cu — GPU kernels of pad: one thread per output element forward (the
 * element it reads, or the value), one per input element backward (the
 * sum of dOut over the outputs that read it, in pad.h's order: a gather,
 * no atomics). The math is pad.h's, as on the CPU. */
#include "gpu_common.cuh"
#include "pad.h"

static __global__ void pad_fwd(pd_pad_geom g, const float *x, float *y, float value) {
  PD_GPU_FOR(o, g.numel_out) y[o] = pd_pad_out_float(x, &g, o, value);
}
static __global__ void pad_bwd(pd_pad_geom g, const float *dy, float *dx) {
  PD_GPU_FOR(i, g.numel_in) dx[i] = pd_pad_grad_at_float(dy, &g, i);
}

extern "C" pd_status pd_gpu_pad_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  pd_pad_geom g = pd_pad_geom_of(c, x);
  return PD_GPU_LAUNCH_N(c, g.numel_out, pad_fwd, g, PD_DATA(x, float), PD_DATA(pd_out(c, OUT), float),
                         (float)pd_attr_f(c, A_VALUE));
}

/* Grad op slots: inputs X Out dOut, output dX. */
extern "C" pd_status pd_gpu_pad_bwd(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  pd_pad_geom g = pd_pad_geom_of(c, dx);
  return PD_GPU_LAUNCH_N(c, g.numel_in, pad_bwd, g, PD_DATA(pd_in(c, G_DOUT), float), PD_DATA(dx, float));
}
