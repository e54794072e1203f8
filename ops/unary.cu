/* unary.cu — GPU kernels of leaky_relu, gelu, softplus and clip, one
 * thread per element; the math is unary.h's PD_HD pd_unary_float /
 * pd_unary_grad_float, as the CPU kernels. */
#include "gpu_common.cuh"
#include "unary.h"

static __global__ void unary_fwd(pd_unary_p p, const float *x, float *y, int64_t n) {
  PD_GPU_FOR(i, n) y[i] = pd_unary_float(p, x[i]);
}
static __global__ void unary_bwd(pd_unary_p p, const float *x, const float *dy, float *dx, int64_t n) {
  PD_GPU_FOR(i, n) dx[i] = pd_unary_grad_float(p, x[i], dy[i]);
}

extern "C" pd_status pd_gpu_unary_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  int64_t n = pd_tensor_numel(x);
  return PD_GPU_LAUNCH_N(c, n, unary_fwd, pd_unary_params(c), PD_DATA(x, float), PD_DATA(pd_out(c, OUT), float), n);
}

/* Grad op slots: inputs X Out dOut, output dX. */
extern "C" pd_status pd_gpu_unary_bwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, G_X), *dy = pd_in(c, G_DOUT), *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  int64_t n = pd_tensor_numel(x);
  return PD_GPU_LAUNCH_N(c, n, unary_bwd, pd_unary_params(c), PD_DATA(x, float), PD_DATA(dy, float), PD_DATA(dx, float),
                         n);
}
