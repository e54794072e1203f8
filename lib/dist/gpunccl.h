/* gpunccl.h — the NCCL communicator of a data-parallel run on GPUs: one per
 * process, made from MPI (rank 0's ncclGetUniqueId broadcast over MPI, then
 * ncclCommInitRank on every rank), used by the allreduce op's GPU kernel.
 * Declared in every build; only a build with CUDA and MPI and NCCL's header
 * (PD_WITH_NCCL) has it. NCCL itself is not linked: it is loaded by dlopen
 * when a GPU run under mpirun asks for it (a CPU run does not map its
 * 200 MB), and without it a GPU run on more than one rank is refused.
 * Every NCCL call that waits for other ranks is polled against the MPI
 * collectives' deadline (--comm-timeout), so a dead peer ends the run with
 * an error instead of blocking the others forever. */
#ifndef PD_GPUNCCL_H
#define PD_GPUNCCL_H
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether this build has NCCL support (whether the library loads is
 * pd_nccl_load's question). */
bool pd_nccl_built(void);
/* Loads libnccl.so.2 (once; dlsearch.h's places): PD_ERR_INPUT saying what
 * is missing and how to get it where it cannot be loaded or the build has
 * no NCCL. */
pd_status pd_nccl_load(pd_error *err);
/* Built and loadable (loads it): a GPU run under mpirun then uses NCCL. */
bool pd_nccl_available(void);
/* Makes the communicator over all MPI ranks on the open GPU (collective:
 * every rank calls it once, after pd_gpu_open); errors name the rank. */
pd_status pd_nccl_init(pd_error *err);
bool pd_nccl_ready(void);
/* Sum over ranks of the float32 device array buf[0..n) in place, queued on
 * `stream` (a cudaStream_t); returns when the stream has finished it, or
 * with an error (the communicator then aborted) when NCCL reports one or
 * the deadline passes. */
pd_status pd_nccl_allreduce_f32(float *buf, size_t n, void *stream, pd_error *err);
void pd_nccl_close(void);

/* What one look at a pending operation found; PD_POLL_FAILED with a
 * sentence in why[size]. */
typedef enum { PD_POLL_DONE, PD_POLL_PENDING, PD_POLL_FAILED } pd_poll_state;
typedef pd_poll_state (*pd_poll_fn)(void *arg, char *why, size_t size);
/* Polls until `poll` says done (PD_OK) or failed, or `timeout` seconds
 * pass (PD_ERR_RUNTIME naming the rank, `what` and the limit). The wait of
 * every NCCL call; apart so that a test can drive it without NCCL. */
pd_status pd_nccl_wait(pd_poll_fn poll, void *arg, const char *what, double timeout, pd_error *err);

#ifdef __cplusplus
}
#endif
#endif
