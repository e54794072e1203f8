/* clip_by_global_norm.cu — GPU kernel: the sum of squares of all X in
 * double by gpu_reduce.cuh's deterministic sum (one tensor after another,
 * in order), the factor from kmath.h's pd_clip_scale on the device, then
 * every X scaled into Out. */
#include "clip_by_global_norm.h"
#include "gpu_ops.h"
#include "gpu_reduce.cuh"

struct square {
  __device__ double operator()(int64_t i, const float *x, const float *) const { return (double)x[i] * x[i]; }
};
static __global__ void clip_scale(const double *sum, const float *x, float *out, double max_norm, int64_t n) {
  float s = (float)pd_clip_scale(sum[0], max_norm);
  PD_GPU_FOR(i, n) out[i] = x[i] * s;
}

extern "C" pd_status pd_gpu_clip_by_global_norm_fwd(pd_ctx *c) {
  int n = pd_in_count(c, X);
  double *sum = NULL;
  for (int i = 0; i < n; i++) {
    const pd_tensor *x = pd_in_at(c, X, i);
    if (!(sum = pd_gpu_sum_all(c, pd_tensor_numel(x), square(), PD_DATA(x, float), NULL, i > 0))) return PD_ERR_RUNTIME;
  }
  pd_status st = PD_OK;
  for (int i = 0; i < n && !st; i++) {
    const pd_tensor *x = pd_in_at(c, X, i);
    int64_t len = pd_tensor_numel(x);
    st = PD_GPU_LAUNCH_N(c, len, clip_scale, sum, PD_DATA(x, float), PD_DATA(pd_out_at(c, OUT, i), float),
                         pd_attr_f(c, A_MAX_NORM), len);
  }
  return st;
}
