/* if_else.cu — if_else's moves of rows on the GPU (gathering a block's rows
 * of X, scattering its outputs and gradients back, summing the gradients of
 * the variables the blocks read) and the copies of the condition and of the
 * rows between the host and the device, on the op's stream. */
#include "gpu_common.cuh"
#include "gpu_ops.h"
#include "if_else.h"

/* Element i of the launch is unit e of the q-th row moved; U: the unit
 * copied (4 bytes when every address and size allows it, else 1). */
template <typename U>
static __global__ void rows_k(char *dst, const char *src, const int64_t *idx, int64_t n, int64_t w, size_t row,
                              bool scatter) {
  PD_GPU_FOR(i, n * w) {
    int64_t q = i / w, e = i % w, at = idx ? idx[q] : q;
    U *d = (U *)(dst + (size_t)(scatter ? at : q) * row);
    d[e] = src ? ((const U *)(src + (size_t)(scatter ? q : at) * row))[e] : (U)0;
  }
}

static __global__ void rows_add_k(char *dst, const char *src, const int64_t *idx, int64_t n, int64_t w, size_t row,
                                  bool scatter) {
  PD_GPU_FOR(i, n * w) {
    int64_t q = i / w, e = i % w, at = idx ? idx[q] : q;
    float *d = (float *)(dst + (size_t)(scatter ? at : q) * row);
    d[e] += ((const float *)(src + (size_t)(scatter ? q : at) * row))[e];
  }
}

extern "C" pd_status pd_gpu_if_else_rows(pd_ctx *c, void *dst, const void *src, const int64_t *idx, int64_t n,
                                         size_t row, bool scatter, bool add) {
  if (!n || !row) return PD_OK;
  if (add) {
    if (!src) return PD_OK;
    int64_t w = (int64_t)(row / sizeof(float));
    return PD_GPU_LAUNCH_N(c, n * w, rows_add_k, (char *)dst, (const char *)src, idx, n, w, row, scatter);
  }
  if (!idx) return src ? pd_gpu_copy(c, dst, src, (size_t)n * row) : pd_gpu_zero(c, dst, (size_t)n * row);
  if ((uintptr_t)dst % 4 == 0 && (uintptr_t)src % 4 == 0 && row % 4 == 0) {
    int64_t w = (int64_t)(row / 4);
    return PD_GPU_LAUNCH_N(c, n * w, rows_k<uint32_t>, (char *)dst, (const char *)src, idx, n, w, row, scatter);
  }
  return PD_GPU_LAUNCH_N(c, n * (int64_t)row, rows_k<uint8_t>, (char *)dst, (const char *)src, idx, n, (int64_t)row,
                         row, scatter);
}

extern "C" pd_status pd_gpu_if_else_read(pd_ctx *c, void *host, const void *dev, size_t bytes) {
  if (!bytes) return PD_OK;
  pd_status st =
      pd_gpu_check(c, cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, pd_gpu_stream(c)), "reading Cond");
  return st ? st : pd_gpu_check(c, cudaStreamSynchronize(pd_gpu_stream(c)), "reading Cond");
}

extern "C" pd_status pd_gpu_if_else_write(pd_ctx *c, void *dev, const void *host, size_t bytes) {
  if (!bytes) return PD_OK;
  /* from pageable memory: the call returns once the host buffer was read */
  return pd_gpu_check(c, cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, pd_gpu_stream(c)),
                      "copying the rows of a branch");
}
