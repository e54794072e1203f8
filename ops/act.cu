/* act.cu — GPU kernels of relu, sigmoid and tanh (one per element; the math
 * is act.h's PD_HD pd_act_float / pd_act_grad_float). */
#include "act.h"
#include "gpu_common.cuh"

static __global__ void act_fwd(pd_act a, const float *x, float *y, int64_t n) {
  PD_GPU_FOR(i, n) y[i] = pd_act_float(a, x[i]);
}
static __global__ void act_bwd(pd_act a, const float *y, const float *dy, float *dx, int64_t n) {
  PD_GPU_FOR(i, n) dx[i] = pd_act_grad_float(a, y[i], dy[i]);
}

static pd_act act_of(pd_ctx *c) { return *(const pd_act *)c->op->def->data; }

extern "C" pd_status pd_gpu_act_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, PD_ACT_X);
  int64_t n = pd_tensor_numel(x);
  return PD_GPU_LAUNCH_N(c, n, act_fwd, act_of(c), PD_DATA(x, float), PD_DATA(pd_out(c, PD_ACT_OUT), float), n);
}

/* Grad op slots: inputs X Out dOut, output dX. */
extern "C" pd_status pd_gpu_act_bwd(pd_ctx *c) {
  pd_tensor *y = pd_in(c, PD_ACT_G_OUT), *dy = pd_in(c, PD_ACT_G_DOUT), *dx = pd_out(c, PD_ACT_G_DX);
  if (!dx) return PD_OK;
  int64_t n = pd_tensor_numel(y);
  return PD_GPU_LAUNCH_N(c, n, act_bwd, act_of(c), PD_DATA(y, float), PD_DATA(dy, float), PD_DATA(dx, float), n);
}
