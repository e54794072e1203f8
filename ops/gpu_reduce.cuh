/* gpu_reduce.cuh — a deterministic sum over a whole tensor (mean, mse,
 * clip_by_global_norm): PD_GPU_SUM_BLOCKS blocks each add a fixed strided
 * slice of term(i) in double and reduce it in a fixed tree, then one block
 * adds the partial sums the same way. The grid never depends on the device,
 * so the result is the same on every run. */
#ifndef PD_GPU_REDUCE_CUH
#define PD_GPU_REDUCE_CUH

#include "gpu_common.cuh"

#define PD_GPU_SUM_BLOCKS 256

template <typename F>
static __global__ void pd_sum_pass1(int64_t n, F term, const float *a, const float *b, double *part) {
  double s = 0;
  for (int64_t i = (int64_t)blockIdx.x * PD_GPU_THREADS + threadIdx.x; i < n;
       i += (int64_t)PD_GPU_SUM_BLOCKS * PD_GPU_THREADS)
    s += term(i, a, b);
  s = pd_block_sum(s);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}
/* part[PD_GPU_SUM_BLOCKS] holds the running total across calls when `accumulate`. */
static __global__ void pd_sum_pass2(double *part, bool accumulate) {
  double s = pd_block_sum(part[threadIdx.x]);
  if (threadIdx.x == 0) part[PD_GPU_SUM_BLOCKS] = accumulate ? part[PD_GPU_SUM_BLOCKS] + s : s;
}

/* Sum of term(i, a, b) for i in [0, n) into a device double, in scratch
 * slot 1 (the returned pointer; NULL after failing the op). With
 * `accumulate`, adds to the total already there (several tensors in turn). */
template <typename F>
static double *pd_gpu_sum_all(pd_ctx *c, int64_t n, F term, const float *a, const float *b, bool accumulate = false) {
  static_assert(PD_GPU_SUM_BLOCKS == PD_GPU_THREADS, "pass 2 reduces one partial sum per thread");
  double *part = (double *)pd_gpu_work(c, 1, (PD_GPU_SUM_BLOCKS + 1) * sizeof(double));
  if (!part) return NULL;
  pd_sum_pass1<<<PD_GPU_SUM_BLOCKS, PD_GPU_THREADS, 0, pd_gpu_stream(c)>>>(n, term, a, b, part);
  if (PD_GPU_LAUNCHED(c, "sum pass 1")) return NULL;
  pd_sum_pass2<<<1, PD_GPU_THREADS, 0, pd_gpu_stream(c)>>>(part, accumulate);
  if (PD_GPU_LAUNCHED(c, "sum pass 2")) return NULL;
  return part + PD_GPU_SUM_BLOCKS;
}

#endif
