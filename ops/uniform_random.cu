/* uniform_random.cu — GPU kernel of uniform_random: element i is
 * min + (max - min) u_i with u_i number i of the stream (rng.h), as on the CPU. */
#include "uniform_random.h"
#include "random.cuh"

static __global__ void uniform_k(float *out, uint64_t fixed, uint64_t seed, int op, const int64_t *step, double a,
                                 double b, int64_t n) {
  uint64_t s = fixed ? fixed : pd_gpu_rng_seed(seed, op, step);
  PD_GPU_FOR(i, n) out[i] = (float)(a + b * pd_rng_uniform_at(s, (uint64_t)i));
}

extern "C" pd_status pd_gpu_uniform_random_fwd(pd_ctx *c) {
  pd_tensor *y = pd_out(c, OUT);
  int64_t seed = pd_attr_i(c, A_SEED), n = pd_tensor_numel(y);
  double a = pd_attr_f(c, A_P1), b = pd_attr_f(c, A_P2) - a;
  return PD_GPU_LAUNCH_N(c, n, uniform_k, PD_DATA(y, float), (uint64_t)seed, pd_gpu_run_seed(c), c->op->index,
                         pd_gpu_step(c), a, b, n);
}
