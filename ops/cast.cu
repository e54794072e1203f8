/* cast.cu — GPU kernels of cast: any of float32, float64, int32, int64,
 * uint8 to any, per element with the CPU kernel's rules (integers through
 * double, saturated: kmath.h's pd_sat_*). The gradient converts dOut back. */
#include <type_traits>

#include "cast.h"
#include "gpu_common.cuh"
#include "gpu_ops.h"

/* To a float type a plain conversion, to an integer one saturated through double. */
template <typename D, typename S> __device__ static inline D cvt(S v) {
  if constexpr (std::is_same<D, int32_t>::value)
    return pd_sat_int32_t((double)v);
  else if constexpr (std::is_same<D, int64_t>::value)
    return pd_sat_int64_t((double)v);
  else if constexpr (std::is_same<D, uint8_t>::value)
    return pd_sat_uint8_t((double)v);
  else
    return (D)v;
}

template <typename S, typename D> static __global__ void convert_k(const S *s, D *d, int64_t n) {
  PD_GPU_FOR(i, n) d[i] = cvt<D>(s[i]);
}

template <typename S, typename D> static pd_status launch(pd_ctx *c, const void *s, void *d, int64_t n) {
  if (n <= 0) return PD_OK;
  convert_k<S, D><<<pd_gpu_blocks(n), PD_GPU_THREADS, 0, pd_gpu_stream(c)>>>((const S *)s, (D *)d, n);
  return PD_GPU_LAUNCHED(c, "cast");
}

template <typename S> static pd_status from(pd_ctx *c, const void *s, void *d, pd_dtype to, int64_t n) {
  switch (to) {
  case PD_F32:
    return launch<S, float>(c, s, d, n);
  case PD_F64:
    return launch<S, double>(c, s, d, n);
  case PD_I32:
    return launch<S, int32_t>(c, s, d, n);
  case PD_I64:
    return launch<S, int64_t>(c, s, d, n);
  default:
    return launch<S, uint8_t>(c, s, d, n);
  }
}

static pd_status convert(pd_ctx *c, const pd_tensor *src, pd_tensor *dst) {
  const void *s = pd_tensor_data(src);
  void *d = pd_tensor_data(dst);
  int64_t n = pd_tensor_numel(src);
  if (src->dtype == dst->dtype) return pd_gpu_copy(c, d, s, (size_t)n * pd_dtype_size(src->dtype));
  switch (src->dtype) {
  case PD_F32:
    return from<float>(c, s, d, dst->dtype, n);
  case PD_F64:
    return from<double>(c, s, d, dst->dtype, n);
  case PD_I32:
    return from<int32_t>(c, s, d, dst->dtype, n);
  case PD_I64:
    return from<int64_t>(c, s, d, dst->dtype, n);
  default:
    return from<uint8_t>(c, s, d, dst->dtype, n);
  }
}

extern "C" pd_status pd_gpu_cast_fwd(pd_ctx *c) { return convert(c, pd_in(c, X), pd_out(c, OUT)); }

/* Grad op slots: inputs X Out dOut, output dX (X's dtype). */
extern "C" pd_status pd_gpu_cast_bwd(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, X);
  return dx ? convert(c, pd_in(c, G_DOUT), dx) : PD_OK;
}
