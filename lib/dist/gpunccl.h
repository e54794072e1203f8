/* gpunccl.h — the NCCL communicator of a data-parallel run on GPUs: one per
 * process, made from MPI (rank 0's ncclGetUniqueId broadcast over MPI, then
 * ncclCommInitRank on every rank), used by the allreduce op's GPU kernel.
 * Declared in every build; only a build with CUDA and MPI (PD_WITH_NCCL)
 * has it, and without it a GPU run on more than one rank is refused. */
#ifndef PD_GPUNCCL_H
#define PD_GPUNCCL_H
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether this build has NCCL. */
bool pd_nccl_built(void);
/* Makes the communicator over all MPI ranks on the open GPU (collective:
 * every rank calls it once, after pd_gpu_open); errors name the rank. */
pd_status pd_nccl_init(pd_error *err);
bool pd_nccl_ready(void);
/* Sum over ranks of the float32 device array buf[0..n) in place, queued on
 * `stream` (a cudaStream_t); does not wait. */
pd_status pd_nccl_allreduce_f32(float *buf, size_t n, void *stream, pd_error *err);
void pd_nccl_close(void);

#ifdef __cplusplus
}
#endif
#endif
