/* scale.cu — GPU kernels of scale: Out = a X + d per element (kmath.h's
 * pd_scale_float, as the CPU kernel); dX = a dOut. */
#include "gpu_common.cuh"
#include "scale.h"

static __global__ void scale_k(const float *x, float *y, float a, float d, int64_t n) {
  PD_GPU_FOR(i, n) y[i] = pd_scale_float(x[i], a, d);
}

extern "C" pd_status pd_gpu_scale_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  double s = pd_attr_f(c, A_SCALE), b = pd_attr_f(c, A_BIAS);
  float a = (float)s, d = (float)(pd_attr_b(c, A_AFTER) ? b : s * b);
  int64_t n = pd_tensor_numel(x);
  return PD_GPU_LAUNCH_N(c, n, scale_k, PD_DATA(x, float), PD_DATA(pd_out(c, OUT), float), a, d, n);
}

/* Grad op slots: inputs X Out dOut, output dX. */
extern "C" pd_status pd_gpu_scale_bwd(pd_ctx *c) {
  pd_tensor *dy = pd_in(c, G_DOUT), *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  int64_t n = pd_tensor_numel(dy);
  return PD_GPU_LAUNCH_N(c, n, scale_k, PD_DATA(dy, float), PD_DATA(dx, float), (float)pd_attr_f(c, A_SCALE), 0.0f, n);
}
