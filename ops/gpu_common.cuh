/* gpu_common.cuh — the CUDA-only part every ops/NAME.cu shares: launch sizes,
 * the grid-stride loop, a fixed-order block reduction, the row-major GEMM
 * through cuBLAS, and checked launches. The math itself lives in PD_HD
 * functions (kmath.h and the ops' headers), which the host tests check on
 * the CPU; this file only decides which thread computes what. */
#ifndef PD_GPU_COMMON_CUH
#define PD_GPU_COMMON_CUH

#include <limits.h>

#include "gpu/gpu.h"
#include "kmath.h"

/* Threads per block everywhere; reductions depend on it being fixed, so
 * that a result never depends on the device or the run. */
#define PD_GPU_THREADS 256
/* Element loops use at most this many blocks (a grid-stride loop covers the rest). */
#define PD_GPU_MAX_BLOCKS 8192

static inline unsigned pd_gpu_blocks(int64_t n) {
  int64_t b = (n + PD_GPU_THREADS - 1) / PD_GPU_THREADS;
  return (unsigned)(b < 1 ? 1 : b > PD_GPU_MAX_BLOCKS ? PD_GPU_MAX_BLOCKS : b);
}

/* Rows given one block each are launched in chunks of at most this many blocks. */
#define PD_GPU_MAX_ROWS 65535

/* for (i = this thread's first element; i < n; i += all threads) */
#define PD_GPU_FOR(i, n)                                                                                        \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, i##_step_ = (int64_t)blockDim.x * gridDim.x; \
       i < (n); i += i##_step_)

/* Launch of `kernel` over n elements on the op's stream, then the check.
 * Nothing is launched for n == 0. */
#define PD_GPU_LAUNCH_N(c, n, kernel, ...)                                                     \
  ((n) <= 0 ? PD_OK                                                                            \
            : (kernel<<<pd_gpu_blocks(n), PD_GPU_THREADS, 0, pd_gpu_stream(c)>>>(__VA_ARGS__), \
               PD_GPU_LAUNCHED((c), #kernel)))

/* Launch with one block of PD_GPU_THREADS per row, rows in [0, n). */
#define PD_GPU_LAUNCH_ROWS(c, n, kernel, ...)                                                                         \
  ((n) <= 0                                                                                                           \
       ? PD_OK                                                                                                        \
       : (kernel<<<(unsigned)((n) < PD_GPU_MAX_ROWS ? (n) : PD_GPU_MAX_ROWS), PD_GPU_THREADS, 0, pd_gpu_stream(c)>>>( \
              __VA_ARGS__),                                                                                           \
          PD_GPU_LAUNCHED((c), #kernel)))
/* for (r = this block's first row; r < n; r += blocks) */
#define PD_GPU_FOR_ROWS(r, n) for (int64_t r = blockIdx.x; r < (n); r += gridDim.x)
/* for (j = this thread's first element of the row; j < n; j += threads) */
#define PD_GPU_FOR_COLS(j, n) for (int64_t j = threadIdx.x; j < (n); j += blockDim.x)

/* Sum over the block's threads in a fixed tree order; every thread gets the
 * result. Call from all threads of a PD_GPU_THREADS block. */
template <typename T> __device__ static inline T pd_block_sum(T v) {
  __shared__ T part[PD_GPU_THREADS];
  __syncthreads(); /* part may still be read by a previous call */
  part[threadIdx.x] = v;
  __syncthreads();
  for (int s = PD_GPU_THREADS / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  return part[0];
}

/* Max over the block's threads; NaN if any thread's v is (as kmath.h's
 * pd_max). */
template <typename T> __device__ static inline T pd_block_max(T v) {
  __shared__ T part[PD_GPU_THREADS];
  __syncthreads();
  part[threadIdx.x] = v;
  __syncthreads();
  for (int s = PD_GPU_THREADS / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) {
      T o = part[threadIdx.x + s];
      part[threadIdx.x] = o > part[threadIdx.x] || o != o ? o : part[threadIdx.x];
    }
    __syncthreads();
  }
  return part[0];
}

/* A row's max *m and sum of exp(x - max) by the block's fixed-order
 * reductions (softmax, log_softmax); every thread gets both. */
__device__ static inline float pd_block_row_sumexp(const float *xr, int64_t d, float *m) {
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) mx = pd_max_float(xr[j], mx);
  mx = pd_block_max(mx);
  float s = 0;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) s += expf(xr[j] - mx);
  *m = mx;
  return pd_block_sum(s);
}

/* Raises a fault (fault.h) of op `op` (its pd_op's address), for the host to report
 * at its next fetch; only the first raise after a read is kept. */
__device__ static inline void pd_gpu_raise(pd_gpu_fault *f, unsigned long long op, int code, int slot, double value) {
  if (atomicCAS(&f->raised, 0u, 1u) == 0u) f->code = code, f->slot = slot, f->op = op, f->value = value;
}

/* Raises fault `code` (fault.h) for the lowest index of the launch holding
 * a bad value, the one the CPU kernel reports: `bad` is the lowest such
 * index this thread saw (INT64_MAX: none); the record gets label =
 * values[index], row = index, limit and per_row. Every thread of every
 * block calls it, last thing in the kernel. The launch's last block to
 * finish (all others' indices are in f->first by then) raises it and clears
 * the scratch for the next launch; kernels of the step run one after
 * another on one stream, so launches never share it. */
__device__ static inline void pd_gpu_raise_first(pd_gpu_fault *f, unsigned long long op, int code, int slot,
                                                 const int64_t *values, int64_t bad, int64_t limit, int64_t per_row) {
  if (bad != INT64_MAX) {
    atomicMax(&f->first, ~0ull - (unsigned long long)bad);
    __threadfence();
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence();
  if (atomicAdd(&f->blocks, 1u) != gridDim.x * gridDim.y * gridDim.z - 1) return;
  unsigned long long first = atomicExch(&f->first, 0ull);
  atomicExch(&f->blocks, 0u);
  if (!first) return;
  int64_t row = (int64_t)(~0ull - first);
  if (atomicCAS(&f->raised, 0u, 1u) == 0u)
    f->code = code, f->slot = slot, f->op = op, f->label = values[row], f->row = row, f->limit = limit,
    f->per_row = per_row;
}

/* A label fault (PD_GPU_FAULT_LABEL) for the lowest row holding a label
 * outside [0, classes), as pd_gpu_raise_first. per_row: see fault.h. */
__device__ static inline void pd_gpu_raise_label(pd_gpu_fault *f, unsigned long long op, int slot, const int64_t *label,
                                                 int64_t bad, int64_t classes, int64_t per_row) {
  pd_gpu_raise_first(f, op, PD_GPU_FAULT_LABEL, slot, label, bad, classes, per_row);
}

/* Fails the op when a size does not fit cuBLAS's int. */
static inline bool pd_gpu_fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* Row-major C[m, n] = alpha op(A) op(B) + beta C, as pd_gemm_float on the CPU:
 * cuBLAS is column-major, so it computes C^T = op(B)^T op(A)^T by passing
 * the operands swapped. */
static inline pd_status pd_gpu_gemm(pd_ctx *c, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *cm,
                                    int64_t ldc) {
  if (m == 0 || n == 0) return PD_OK;
  if (!pd_gpu_fits_int(m) || !pd_gpu_fits_int(n) || !pd_gpu_fits_int(k) || !pd_gpu_fits_int(lda) ||
      !pd_gpu_fits_int(ldb) || !pd_gpu_fits_int(ldc))
    return pd_ctx_fail(c, PD_ERR_RUNTIME, "matrix product %lld x %lld x %lld is too large for cuBLAS", (long long)m,
                       (long long)n, (long long)k);
  return pd_gpu_blas_check(c,
                           cublasSgemm(pd_gpu_blas(c), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                       (int)n, (int)m, (int)k, &alpha, b, (int)ldb, a, (int)lda, &beta, cm, (int)ldc),
                           "cublasSgemm");
}

/* `batches` products as pd_gpu_gemm, the i-th reading A at a + i sa, B at
 * b + i sb and writing C at cm + i sc (one cublasSgemmStridedBatched). */
static inline pd_status pd_gpu_gemm_batched(pd_ctx *c, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                            const float *a, int64_t lda, int64_t sa, const float *b, int64_t ldb,
                                            int64_t sb, float beta, float *cm, int64_t ldc, int64_t sc,
                                            int64_t batches) {
  if (batches == 1) return pd_gpu_gemm(c, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cm, ldc);
  if (m == 0 || n == 0 || batches == 0) return PD_OK;
  if (!pd_gpu_fits_int(m) || !pd_gpu_fits_int(n) || !pd_gpu_fits_int(k) || !pd_gpu_fits_int(lda) ||
      !pd_gpu_fits_int(ldb) || !pd_gpu_fits_int(ldc) || !pd_gpu_fits_int(batches))
    return pd_ctx_fail(c, PD_ERR_RUNTIME, "%lld matrix products %lld x %lld x %lld are too large for cuBLAS",
                       (long long)batches, (long long)m, (long long)n, (long long)k);
  return pd_gpu_blas_check(c,
                           cublasSgemmStridedBatched(pd_gpu_blas(c), tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                     ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, b,
                                                     (int)ldb, sb, a, (int)lda, sa, &beta, cm, (int)ldc, sc,
                                                     (int)batches),
                           "cublasSgemmStridedBatched");
}

/* Asynchronous fill with zero bytes on the op's stream. */
static inline pd_status pd_gpu_zero(pd_ctx *c, void *p, size_t bytes) {
  if (!bytes) return PD_OK;
  return pd_gpu_check(c, cudaMemsetAsync(p, 0, bytes, pd_gpu_stream(c)), "cudaMemsetAsync");
}

/* Asynchronous device-to-device copy on the op's stream (nothing when the same). */
static inline pd_status pd_gpu_copy(pd_ctx *c, void *dst, const void *src, size_t bytes) {
  if (!bytes || dst == src) return PD_OK;
  return pd_gpu_check(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, pd_gpu_stream(c)),
                      "cudaMemcpyAsync");
}

/* Data pointer of an optional tensor as float (NULL when absent). */
static inline float *pd_gpu_f32(const pd_tensor *t) { return t ? PD_DATA(t, float) : NULL; }

#endif
