/* optim.cuh — what the GPU update kernels share: the learning rate read on
 * the device from its one-element tensor (float32 or float64: the trainer
 * keeps it in float64), as the CPU kernels' (T)pd_tensor_get(lr, 0). */
#ifndef PD_OPTIM_CUH
#define PD_OPTIM_CUH

#include "gpu_common.cuh"

typedef struct pd_gpu_scalar {
  const void *p;
  bool f64;
} pd_gpu_scalar;

static inline pd_gpu_scalar pd_gpu_scalar_of(const pd_tensor *t) {
  pd_gpu_scalar s = {pd_tensor_data(t), t->dtype == PD_F64};
  return s;
}
__device__ static inline double pd_gpu_scalar_get(pd_gpu_scalar s) {
  return s.f64 ? *(const double *)s.p : (double)*(const float *)s.p;
}

#endif
