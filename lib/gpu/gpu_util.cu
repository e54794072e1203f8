// gpu_util.cu — the few kernels the GPU runtime itself needs (gpu.c calls
// them through the launchers below, which only launch on the given stream
// and return the launch's error): filling a float32 array with a value (the
// parity harness poisons outputs with NaN), writing the step counter that
// random ops read (outside the step's CUDA graph) and counting non-finite
// values (to name the op that made a NaN loss without copying every output
// back).
#include <cuda_runtime.h>

#include <math.h>
#include <stddef.h>

#include "gpu/gpu.h"

PD_HD bool pd_is_finite_f64(double v) { return v - v == 0.0; }

static __global__ void fill_f32(float *p, size_t n, float v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

template <typename T> static __global__ void count_nonfinite(const T *p, size_t n, unsigned long long *count) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    local += !pd_is_finite_f64((double)p[i]);
  if (local) atomicAdd(count, local);
}

static __global__ void set_i64(int64_t *p, int64_t v) { *p = v; }

static unsigned grid_for(size_t n) {
  size_t blocks = (n + 255) / 256;
  return blocks == 0 ? 1u : blocks > 4096 ? 4096u : (unsigned)blocks;
}

extern "C" cudaError_t pd_gpu_launch_fill_f32(float *p, size_t n, float v, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  fill_f32<<<grid_for(n), 256, 0, s>>>(p, n, v);
  return cudaGetLastError();
}

extern "C" cudaError_t pd_gpu_launch_set_i64(int64_t *p, int64_t v, cudaStream_t s) {
  set_i64<<<1, 1, 0, s>>>(p, v);
  return cudaGetLastError();
}

extern "C" cudaError_t pd_gpu_launch_count_nonfinite(const void *p, size_t n, int f64, unsigned long long *count,
                                                     cudaStream_t s) {
  cudaError_t e = cudaMemsetAsync(count, 0, sizeof *count, s);
  if (e != cudaSuccess || n == 0) return e;
  if (f64)
    count_nonfinite<<<grid_for(n), 256, 0, s>>>((const double *)p, n, count);
  else
    count_nonfinite<<<grid_for(n), 256, 0, s>>>((const float *)p, n, count);
  return cudaGetLastError();
}
