/* gpu_ops.h — what the GPU kernels of ops/NAME.cu share beyond their op's
 * own header (which declares them for ops/NAME.c to register): the GPU
 * layer, the element math, the C helpers of the op files (op_helpers.h)
 * and a strided copy on the op's stream. */
#ifndef PD_GPU_OPS_H
#define PD_GPU_OPS_H

#include "gpu/gpu.h"
#include "kmath.h"
#include "op_helpers.h"

#ifdef PD_WITH_CUDA

#ifdef __cplusplus
extern "C" {
#endif
/* A strided 2-D copy on the op's stream (rows of `width` bytes; src NULL: zeros). */
pd_status pd_gpu_copy2d(pd_ctx *c, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                        size_t height);

#ifdef __cplusplus
}
#endif
#endif /* PD_WITH_CUDA */
#endif
