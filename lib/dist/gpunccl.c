/* gpunccl.c — see gpunccl.h. */
#include "dist/gpunccl.h"

#ifdef PD_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include "dist/dist.h"

static ncclComm_t g_comm;
static bool g_ready;

bool pd_nccl_built(void) { return true; }
bool pd_nccl_ready(void) { return g_ready; }

static pd_status nccl_fail(pd_error *err, ncclResult_t r, const char *what) {
  return pd_errorf(err, PD_ERR_RUNTIME, "rank %d of %d: NCCL: %s: %s", pd_dist_rank(), pd_dist_size(), what,
                   ncclGetErrorString(r));
}

pd_status pd_nccl_init(pd_error *err) {
  if (g_ready) return PD_OK;
  ncclUniqueId id;
  if (pd_dist_rank() == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) return nccl_fail(err, r, "ncclGetUniqueId");
  }
  pd_status st = pd_dist_bcast(&id, (int64_t)sizeof id, "the broadcast of the NCCL id from rank 0", err);
  if (st) return st;
  ncclResult_t r = ncclCommInitRank(&g_comm, pd_dist_size(), id, pd_dist_rank());
  if (r != ncclSuccess) return nccl_fail(err, r, "ncclCommInitRank");
  g_ready = true;
  return PD_OK;
}

pd_status pd_nccl_allreduce_f32(float *buf, size_t n, void *stream, pd_error *err) {
  if (!g_ready) return pd_errorf(err, PD_ERR_RUNTIME, "rank %d: NCCL: no communicator", pd_dist_rank());
  ncclResult_t r = ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, g_comm, (cudaStream_t)stream);
  return r == ncclSuccess ? PD_OK : nccl_fail(err, r, "ncclAllReduce");
}

void pd_nccl_close(void) {
  if (g_ready) ncclCommDestroy(g_comm);
  g_ready = false;
}

#else

bool pd_nccl_built(void) { return false; }
bool pd_nccl_ready(void) { return false; }
pd_status pd_nccl_init(pd_error *err) {
  return pd_errorf(err, PD_ERR_INPUT,
                   "--device gpu on more than one rank needs NCCL: this paddle-run was built without it (it needs "
                   "both CUDA and MPI when built); run one rank, or use --device cpu");
}
pd_status pd_nccl_allreduce_f32(float *buf, size_t n, void *stream, pd_error *err) {
  (void)buf, (void)n, (void)stream;
  return pd_nccl_init(err);
}
void pd_nccl_close(void) {}

#endif
