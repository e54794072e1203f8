/* random.cuh — uniform_random, gaussian_random and dropout on the GPU draw
 * element i as number i of the op's splitmix64 stream (lib/base/rng.h's
 * pd_rng_*_at), the very numbers the CPU kernels draw in sequence: a GPU
 * run gives the CPU's samples and masks. The stream's seed depends on the
 * step, which the kernels read from device memory (a CUDA graph replays). */
#ifndef PD_RANDOM_CUH
#define PD_RANDOM_CUH

#include "gpu_common.cuh"
#include "base/rng.h"
#include "core/exec.h"

/* The op's seed for the running step, read on the device (pd_gpu_step), so
 * that a replayed graph draws each step's numbers: pd_ctx_rng_seed's value,
 * from the run's seed, the op's index and the step. */
__device__ static inline uint64_t pd_gpu_rng_seed(uint64_t run_seed, int op, const int64_t *step) {
  return pd_rng_op_seed(run_seed, (uint64_t)op, (uint64_t)*step);
}
/* The run's seed, as pd_ctx_rng_seed reads it. */
static inline uint64_t pd_gpu_run_seed(pd_ctx *c) { return c->exec ? c->exec->seed : 0; }

#endif
