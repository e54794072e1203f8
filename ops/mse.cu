/* mse.cu — GPU kernels of mse: Out = mean((X - Y)^2), summed in double by
 * gpu_reduce.cuh's deterministic two-pass sum; dX = 2 (X - Y) dOut / n,
 * dY = -dX. */
#include "gpu_common.cuh"
#include "gpu_reduce.cuh"
#include "mse.h"

struct sq_diff {
  __device__ double operator()(int64_t i, const float *x, const float *y) const {
    double d = (double)x[i] - (double)y[i];
    return d * d;
  }
};
static __global__ void mse_out(const double *sum, float *out, int64_t n) {
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = (float)(n > 0 ? sum[0] / (double)n : 0);
}
static __global__ void mse_bwd(const float *x, const float *y, const float *dout, float *gx, float *gy, int64_t n) {
  float k = dout && n > 0 ? (float)(2 * (double)dout[0] / (double)n) : 0;
  PD_GPU_FOR(i, n) {
    float g = k * (x[i] - y[i]);
    if (gx) gx[i] = g;
    if (gy) gy[i] = -g;
  }
}

extern "C" pd_status pd_gpu_mse_fwd(pd_ctx *c) {
  int64_t n = pd_tensor_numel(pd_in(c, X));
  double *sum = pd_gpu_sum_all(c, n, sq_diff(), PD_DATA(pd_in(c, X), float), PD_DATA(pd_in(c, Y), float));
  if (!sum) return PD_ERR_RUNTIME;
  mse_out<<<1, 1, 0, pd_gpu_stream(c)>>>(sum, PD_DATA(pd_out(c, OUT), float), n);
  return PD_GPU_LAUNCHED(c, "mse_out");
}

/* Grad op slots: inputs X Y Out dOut, outputs dX dY. */
extern "C" pd_status pd_gpu_mse_bwd(pd_ctx *c) {
  int64_t n = pd_tensor_numel(pd_in(c, X));
  return PD_GPU_LAUNCH_N(c, n, mse_bwd, PD_DATA(pd_in(c, X), float), PD_DATA(pd_in(c, Y), float),
                         pd_gpu_f32(pd_in(c, G_DOUT)), pd_gpu_f32(pd_out(c, G_DX)), pd_gpu_f32(pd_out(c, G_DY)), n);
}
