/* fill_constant.cu — GPU kernel of fill_constant, for every dtype. */
#include "fill_constant.h"
#include "gpu_common.cuh"

template <typename T> static __global__ void fill_k(T *out, T v, int64_t n) { PD_GPU_FOR(i, n) out[i] = v; }

template <typename T> static pd_status fill(pd_ctx *c, pd_tensor *y) {
  int64_t n = pd_tensor_numel(y);
  if (n <= 0) return PD_OK;
  fill_k<T><<<pd_gpu_blocks(n), PD_GPU_THREADS, 0, pd_gpu_stream(c)>>>(PD_DATA(y, T), (T)pd_attr_f(c, A_VALUE), n);
  return PD_GPU_LAUNCHED(c, "fill_constant");
}

extern "C" pd_status pd_gpu_fill_constant_fwd(pd_ctx *c) {
  pd_tensor *y = pd_out(c, OUT);
  switch (y->dtype) {
  case PD_F32:
    return fill<float>(c, y);
  case PD_F64:
    return fill<double>(c, y);
  case PD_I32:
    return fill<int32_t>(c, y);
  case PD_I64:
    return fill<int64_t>(c, y);
  default:
    return fill<uint8_t>(c, y);
  }
}
