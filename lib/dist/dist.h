/* dist.h — data-parallel training across processes on MPI (Open MPI).
 * A process started by `mpirun` joins MPI_COMM_WORLD; one started any other
 * way is a single rank and never touches MPI, so the same binary runs both
 * ways (and a build with MPI=0 is always a single rank). Every collective
 * is non-blocking and polled against a deadline, so a rank that died or
 * hangs turns into an error on the others instead of a hang. */
#ifndef PD_DIST_H
#define PD_DIST_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "core/tensor.h"

/* C++ (the allreduce op's GPU kernel) includes it too */
#ifdef __cplusplus
#define PD_DIST_NORETURN [[noreturn]]
extern "C" {
#else
#define PD_DIST_NORETURN _Noreturn
#endif

/* Whether this build has MPI at all. */
bool pd_dist_built(void);
/* Joins MPI when the process was launched by mpirun (idempotent). */
pd_status pd_dist_init(pd_error *err);
/* Leaves MPI (when joined); every rank must call it. */
void pd_dist_finalize(void);
/* Ends every rank of the job at once (MPI_Abort) with the exit code; a
 * single rank simply exits. */
PD_DIST_NORETURN void pd_dist_abort(int code);
/* Whether this process joined MPI (was started by mpirun), whatever the size. */
bool pd_dist_joined(void);
int pd_dist_rank(void);
int pd_dist_size(void);
/* Seconds this rank spent in collectives so far (waiting for the others
 * included). */
double pd_dist_comm_seconds(void);
/* Steps whose gradients were averaged in shared memory so far (the
 * allreduce op counts them; the log shows them). */
void pd_dist_count_shared_step(void);
int64_t pd_dist_shared_steps(void);

/* Seconds a collective may wait for the other ranks before it fails (those
 * of the setup, pd_dist_agree and pd_dist_bcast, at least 60). */
void pd_dist_set_timeout(double seconds);
/* That limit, and the setup's (the NCCL calls wait as long: gpunccl.c). */
double pd_dist_timeout(void);
double pd_dist_setup_timeout(void);

/* Sum over ranks of buf[0..n) in place (float32 or float64). */
pd_status pd_dist_allreduce_sum(void *buf, int64_t n, pd_dtype dtype, const char *what, pd_error *err);
/* Memory the ranks share, where every rank runs on one machine (an MPI-3
 * shared window, MPI_Win_allocate_shared): the allreduce op places the
 * gradients there (its bind), and each rank sums a part of them for all
 * ranks, reading and writing the others' memory directly; Open MPI's
 * allreduce instead copies each buffer through its shared-memory transport
 * in pieces, a large share of a step.
 *
 * pd_dist_shared_region sets bases[0..size) to every rank's part of at
 * least `bytes` (the same size on every rank), or bases[0] to NULL where
 * there is none (one rank, ranks on several machines,
 * PADDLE_RUN_ALLREDUCE=mpi, or MPI could not allocate it): then use
 * pd_dist_allreduce_sum. The first call, and one for more bytes, is
 * collective: every rank makes it at the same point. pd_dist_shared_wait
 * is a barrier with the deadline that also makes each rank's writes to the
 * window visible to the others. */
#define PD_DIST_MAX_SHARED 64 /* more ranks: pd_dist_allreduce_sum */
pd_status pd_dist_shared_region(int64_t bytes, void **bases, pd_error *err);
/* The same once made, without a collective: false while there is none. */
bool pd_dist_shared_bases(void **bases);
pd_status pd_dist_shared_wait(const char *what, pd_error *err);
/* Decides whether the shared memory can be used (collective; else the
 * first pd_dist_shared_region does). */
pd_status pd_dist_shared_decide(pd_error *err);
/* Why the shared memory is not used (NULL when it is or will be). */
const char *pd_dist_shared_why_not(void);

/* Rank 0's bytes to every rank. */
pd_status pd_dist_bcast(void *buf, int64_t bytes, const char *what, pd_error *err);
/* Whether every rank passed the same value. */
pd_status pd_dist_same(uint64_t value, bool *same, const char *what, pd_error *err);

/* The setup's outcome on every rank, agreed before training starts: sets
 * *first to the lowest rank whose exit code is not 0 (-1: none) and *code
 * to that code. */
pd_status pd_dist_agree(int my_code, int *first, int *code, pd_error *err);

/* ---- the state one training step shares with the allreduce op ---- */
/* Before a step: how many rows of the global batch this rank holds (the
 * weight of its gradients in the mean) and whether it asks to stop. */
void pd_dist_step_begin(int64_t local_rows, bool stop);
int64_t pd_dist_local_rows(void);
bool pd_dist_local_stop(void);
/* Set by the allreduce op: whether any rank asked to stop in this step. */
void pd_dist_set_global_stop(bool stop);
bool pd_dist_global_stop(void);

#ifdef __cplusplus
}
#endif
#endif
