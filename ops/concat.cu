/* concat.cu — the strided device copy concat (and flatten's zero fill) run
 * on the GPU; concat.c keeps the one walk over the inputs for both places. */
#include "gpu_common.cuh"
#include "gpu_ops.h"

extern "C" pd_status pd_gpu_copy2d(pd_ctx *c, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height) {
  if (!width || !height) return PD_OK;
  if (!src)
    return pd_gpu_check(c, cudaMemset2DAsync(dst, dpitch ? dpitch : width, 0, width, height, pd_gpu_stream(c)),
                        "cudaMemset2DAsync");
  return pd_gpu_check(
      c, cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, cudaMemcpyDeviceToDevice, pd_gpu_stream(c)),
      "cudaMemcpy2DAsync");
}
