/* mean.cu — GPU kernels of mean, and the deterministic whole-tensor sum
 * the losses share: each of a fixed number of blocks sums a fixed slice in
 * double (block reduction in a fixed tree), then one block adds the
 * partial sums in order. Backward: dX = dOut / n everywhere. */
#include "gpu_common.cuh"
#include "gpu_reduce.cuh"
#include "mean.h"

static __global__ void mean_out(const double *sum, float *out, int64_t n) {
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = (float)(n ? sum[0] / (double)n : NAN);
}
static __global__ void mean_bwd(const float *dout, float *dx, int64_t n) {
  PD_GPU_FOR(i, n) dx[i] = (float)(dout[0] / (double)n);
}

struct ident {
  __device__ double operator()(int64_t i, const float *x, const float *) const { return x[i]; }
};

extern "C" pd_status pd_gpu_mean_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  int64_t n = pd_tensor_numel(x);
  double *sum = pd_gpu_sum_all(c, n, ident(), PD_DATA(x, float), NULL);
  if (!sum) return PD_ERR_RUNTIME;
  mean_out<<<1, 1, 0, pd_gpu_stream(c)>>>(sum, PD_DATA(pd_out(c, OUT), float), n);
  return PD_GPU_LAUNCHED(c, "mean_out");
}

/* Grad op slots: inputs X Out dOut, output dX. */
extern "C" pd_status pd_gpu_mean_bwd(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  int64_t n = pd_tensor_numel(dx);
  return PD_GPU_LAUNCH_N(c, n, mean_bwd, PD_DATA(pd_in(c, G_DOUT), float), PD_DATA(dx, float), n);
}
