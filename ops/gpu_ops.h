/* gpu_ops.h — the GPU float32 kernels (ops/NAME.cu), which the op tables
 * in ops/NAME.c register under {PD_GPU, PD_F32}, and the few C helpers
 * of the op files that the .cu files call back into. */
#ifndef PD_GPU_OPS_H
#define PD_GPU_OPS_H

#include "gpu/gpu.h"
#include "kmath.h"

#ifdef __cplusplus
extern "C" {
#endif
/* C helpers of the op files that the GPU kernels (and test_kmath) call. */
void pd_elementwise_add_bcast(pd_ctx *c, const pd_tensor *x, const pd_tensor *y, pd_bcast *b);
pd_status pd_conv2d_geom(pd_ctx *c, const pd_tensor *x, pd_conv_geom *g);
pd_status pd_pool2d_geom(pd_ctx *c, const pd_tensor *x, pd_pool_geom *g);
/* matmul's batch layout of X and Y; 0, the 1-based batch dim that does not
 * broadcast, or -1 when X's K differs from Y's. */
/* transpose's permutation for X's rank (perm, or the dims reversed). */
void pd_transpose_perm(pd_ctx *c, int ndim, int *perm);
int pd_matmul_layout(const pd_tensor *x, const pd_tensor *y, pd_mm_layout *p);
#ifdef __cplusplus
}
#endif

#ifdef PD_WITH_CUDA

#ifdef __cplusplus
extern "C" {
#endif

/* fwd: the op's kernel; bwd: its grad op's. */
pd_status pd_gpu_elementwise_add_fwd(pd_ctx *c);
pd_status pd_gpu_elementwise_add_bwd(pd_ctx *c);
pd_status pd_gpu_cast_fwd(pd_ctx *c);
pd_status pd_gpu_cast_bwd(pd_ctx *c);
pd_status pd_gpu_cross_entropy_fwd(pd_ctx *c);
pd_status pd_gpu_cross_entropy_bwd(pd_ctx *c);
pd_status pd_gpu_cos_sim_fwd(pd_ctx *c);
pd_status pd_gpu_cos_sim_bwd(pd_ctx *c);
pd_status pd_gpu_accuracy_fwd(pd_ctx *c);
pd_status pd_gpu_clip_by_global_norm_fwd(pd_ctx *c);
pd_status pd_gpu_conv2d_fwd(pd_ctx *c);
pd_status pd_gpu_conv2d_bwd(pd_ctx *c);
pd_status pd_gpu_batch_norm_fwd(pd_ctx *c);
pd_status pd_gpu_batch_norm_bwd(pd_ctx *c);
pd_status pd_gpu_dropout_fwd(pd_ctx *c);
pd_status pd_gpu_allreduce_fwd(pd_ctx *c);
pd_status pd_gpu_dropout_bwd(pd_ctx *c);
/* broadcast_add, _sub, _mul and _div share broadcast. */
pd_status pd_gpu_broadcast_fwd(pd_ctx *c);
pd_status pd_gpu_broadcast_bwd(pd_ctx *c);
pd_status pd_gpu_identity_bwd(pd_ctx *c);

/* cast, fill_constant: the kernel for every source / target dtype. */

/* A strided 2-D copy on the op's stream (rows of `width` bytes; src NULL: zeros). */
pd_status pd_gpu_copy2d(pd_ctx *c, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                        size_t height);

#ifdef __cplusplus
}
#endif
#endif /* PD_WITH_CUDA */
#endif
