/* sum.cu — GPU kernels of sum: Out = X[0] + X[1] + ..., added in the CPU
 * kernel's order (starting from the input that is Out itself, if any);
 * each wanted dX[i] is a copy of dOut. */
#include "gpu_common.cuh"
#include "sum.h"

static __global__ void add_into(float *out, const float *x, int64_t n) { PD_GPU_FOR(i, n) out[i] += x[i]; }

extern "C" pd_status pd_gpu_sum_fwd(pd_ctx *c) {
  pd_tensor *y = pd_out(c, OUT);
  float *out = PD_DATA(y, float);
  int n = pd_in_count(c, X), base = 0;
  int64_t len = pd_tensor_numel(y);
  for (int i = 0; i < n; i++)
    if (PD_DATA(pd_in_at(c, X, i), float) == out) base = i;
  pd_status st = pd_gpu_copy(c, out, PD_DATA(pd_in_at(c, X, base), float), (size_t)len * sizeof(float));
  for (int i = 0; i < n && !st; i++)
    if (i != base) st = PD_GPU_LAUNCH_N(c, len, add_into, out, PD_DATA(pd_in_at(c, X, i), float), len);
  return st;
}

/* Grad op slots: inputs X... Out dOut, outputs dX.... */
extern "C" pd_status pd_gpu_sum_bwd(pd_ctx *c) {
  pd_tensor *dy = pd_in(c, G_DOUT);
  size_t bytes = (size_t)pd_tensor_numel(dy) * sizeof(float);
  pd_status st = PD_OK;
  for (int i = 0; i < pd_out_count(c, G_DX) && !st; i++) {
    pd_tensor *dx = pd_out_at(c, G_DX, i);
    if (dx) st = pd_gpu_copy(c, PD_DATA(dx, float), PD_DATA(dy, float), bytes);
  }
  return st;
}
