/* gpu.h — the GPU place as a GPU kernel sees it.
 *
 * A GPU kernel is an ordinary pd_kernel_fn registered under {PD_GPU, PD_F32}
 * in its op's kernel table (inside #ifdef PD_WITH_CUDA), defined in the .cu
 * file beside the op's C file. Its tensors' data pointers (pd_tensor_data)
 * are device pointers; pd_ctx_alloc allocates device memory from the caching
 * allocator for a tensor whose place is GPU. A kernel launches only on
 * pd_gpu_stream(c), never synchronises the device and never copies to the
 * host (the step may be captured in a CUDA graph), and checks every CUDA and
 * cuBLAS return through pd_gpu_check / pd_gpu_blas_check so that the error
 * names the op.
 *
 * Everything here exists only when the build has CUDA (PD_WITH_CUDA). */
#ifndef PD_GPU_H
#define PD_GPU_H

#include "base/hostdev.h"
#include "core/op.h"
#include "gpu/fault.h"

#ifdef PD_WITH_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The stream every kernel of the running net launches on. */
cudaStream_t pd_gpu_stream(pd_ctx *c);
/* The cuBLAS handle bound to that stream; its math mode is plain FP32
 * unless the run asked for --tf32. */
cublasHandle_t pd_gpu_blas(pd_ctx *c);
/* PD_OK when e is cudaSuccess; otherwise fails the op with a message naming
 * the op, `what` and the CUDA error string, and returns PD_ERR_RUNTIME. */
pd_status pd_gpu_check(pd_ctx *c, cudaError_t e, const char *what);
/* The same for a cuBLAS status. */
pd_status pd_gpu_blas_check(pd_ctx *c, cublasStatus_t s, const char *what);
/* Checks the launch just made (cudaGetLastError) as pd_gpu_check does. */
#define PD_GPU_LAUNCHED(c, what) pd_gpu_check((c), cudaGetLastError(), (what))
/* The device's fault record (fault.h), for a kernel to raise into with
 * gpu_common.cuh's pd_gpu_raise or pd_gpu_raise_label. */
pd_gpu_fault *pd_gpu_fault_record(pd_ctx *c);

/* Device address of the running step (the runner's exec.step), written on
 * the stream before each run of the net: a kernel whose work depends on the
 * step (a random op's stream, pd_ctx_rng_seed) reads it there, so that a
 * replayed CUDA graph sees each step's value, not the one it was captured at. */
const int64_t *pd_gpu_step(pd_ctx *c);

/* Device scratch of at least `bytes` for this op (slot i of op->work, 0 or 1),
 * grown once and kept across steps; NULL after failing the op on out of memory. */
void *pd_gpu_work(pd_ctx *c, int i, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif /* PD_WITH_CUDA */

#endif
