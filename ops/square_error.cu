/* square_error.cu — GPU kernels of square_error: Out = (X - Y)^2;
 * dX = 2 (X - Y) dOut (kmath.h's pd_sq_err_grad_float), dY = -dX. */
#include "gpu_common.cuh"
#include "square_error.h"

static __global__ void sq_fwd(const float *x, const float *y, float *out, int64_t n) {
  PD_GPU_FOR(i, n) {
    float d = x[i] - y[i];
    out[i] = d * d;
  }
}
static __global__ void sq_bwd(const float *x, const float *y, const float *dout, float *gx, float *gy, int64_t n) {
  PD_GPU_FOR(i, n) {
    float g = dout ? pd_sq_err_grad_float(x[i], y[i], dout[i]) : 0;
    if (gx) gx[i] = g;
    if (gy) gy[i] = -g;
  }
}

extern "C" pd_status pd_gpu_square_error_fwd(pd_ctx *c) {
  int64_t n = pd_tensor_numel(pd_in(c, X));
  return PD_GPU_LAUNCH_N(c, n, sq_fwd, PD_DATA(pd_in(c, X), float), PD_DATA(pd_in(c, Y), float),
                         PD_DATA(pd_out(c, OUT), float), n);
}

/* Grad op slots: inputs X Y Out dOut, outputs dX dY. */
extern "C" pd_status pd_gpu_square_error_bwd(pd_ctx *c) {
  int64_t n = pd_tensor_numel(pd_in(c, X));
  return PD_GPU_LAUNCH_N(c, n, sq_bwd, PD_DATA(pd_in(c, X), float), PD_DATA(pd_in(c, Y), float),
                         pd_gpu_f32(pd_in(c, G_DOUT)), pd_gpu_f32(pd_out(c, G_DX)), pd_gpu_f32(pd_out(c, G_DY)), n);
}
