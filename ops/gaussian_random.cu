/* gaussian_random.cu — GPU kernel of gaussian_random: element i is
 * mean + std g_i with g_i Box-Muller on numbers 2i, 2i+1 of the stream
 * (rng.h's pd_rng_gaussian_at), as on the CPU. */
#include "gaussian_random.h"
#include "random.cuh"

static __global__ void gaussian_k(float *out, uint64_t fixed, uint64_t seed, int op, const int64_t *step, double a,
                                  double b, int64_t n) {
  uint64_t s = fixed ? fixed : pd_gpu_rng_seed(seed, op, step);
  PD_GPU_FOR(i, n) out[i] = (float)(a + b * pd_rng_gaussian_at(s, (uint64_t)i));
}

extern "C" pd_status pd_gpu_gaussian_random_fwd(pd_ctx *c) {
  pd_tensor *y = pd_out(c, OUT);
  int64_t seed = pd_attr_i(c, A_SEED), n = pd_tensor_numel(y);
  return PD_GPU_LAUNCH_N(c, n, gaussian_k, PD_DATA(y, float), (uint64_t)seed, pd_gpu_run_seed(c), c->op->index,
                         pd_gpu_step(c), pd_attr_f(c, A_P1), pd_attr_f(c, A_P2), n);
}
