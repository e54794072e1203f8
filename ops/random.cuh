/* random.cuh — uniform_random, gaussian_random and dropout on the GPU draw
 * element i as number i of the op's splitmix64 stream (lib/base/rng.h's
 * pd_rng_*_at), the very numbers the CPU kernels draw in sequence: a GPU
 * run gives the CPU's samples and masks. */
#ifndef PD_RANDOM_CUH
#define PD_RANDOM_CUH

#include "gpu_common.cuh"
#include "base/rng.h"

#endif
