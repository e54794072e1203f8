/* gpunccl.c — see gpunccl.h. */
#include "dist/gpunccl.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dist/dist.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* For the first half second the poll only yields the core (an allreduce
 * of a step takes well under that); after it, a peer is slow or gone, and
 * it sleeps 1 ms between looks, as the MPI path does (dist.c). */
#define SPIN_SECONDS 0.5

pd_status pd_nccl_wait(pd_poll_fn poll, void *arg, const char *what, double timeout, pd_error *err) {
  double start = now(), deadline = start + timeout;
  for (;;) {
    char why[512] = "";
    pd_poll_state s = poll(arg, why, sizeof why);
    if (s == PD_POLL_DONE) return PD_OK;
    if (s == PD_POLL_FAILED)
      return pd_errorf(err, PD_ERR_RUNTIME, "rank %d of %d: NCCL: %s failed: %s", pd_dist_rank(), pd_dist_size(), what,
                       why);
    double t = now();
    if (t > deadline)
      return pd_errorf(err, PD_ERR_RUNTIME,
                       "rank %d of %d: NCCL: %s did not complete within %g s: another rank has died or hangs "
                       "(--comm-timeout sets the limit)",
                       pd_dist_rank(), pd_dist_size(), what, timeout);
    if (t - start < SPIN_SECONDS) {
      sched_yield();
    } else {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
}

#ifdef PD_WITH_NCCL
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include "base/dlsearch.h"

/* NCCL's functions, from dlsym: only nccl.h's types are compiled in. The
 * last three are newer than NCCL 2.4 and may be missing (NULL). */
static struct {
  bool tried;
  char why[1024];
  ncclResult_t (*GetUniqueId)(ncclUniqueId *);
  ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t *);
  ncclResult_t (*CommAbort)(ncclComm_t);
  ncclResult_t (*CommDestroy)(ncclComm_t);
  const char *(*GetErrorString)(ncclResult_t);
#if NCCL_VERSION_CODE >= 21400
  ncclResult_t (*CommInitRankConfig)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
  ncclResult_t (*CommFinalize)(ncclComm_t);
#endif
  const char *(*GetLastError)(ncclComm_t);
} nccl;

static ncclComm_t g_comm;
static bool g_ready;

bool pd_nccl_built(void) { return true; }
bool pd_nccl_ready(void) { return g_ready; }

pd_status pd_nccl_load(pd_error *err) {
  static const char *soname = "libnccl.so.2";
  if (!nccl.tried) {
    nccl.tried = true;
    char why[1024];
    void *h = pd_dl_search(soname, why, sizeof why);
    const char *missing = NULL;
#define LOAD(field, name, required)                                                             \
  do {                                                                                          \
    if (h && !missing && !(*(void **)&nccl.field = dlsym(h, name)) && required) missing = name; \
  } while (0)
    LOAD(GetUniqueId, "ncclGetUniqueId", true);
    LOAD(CommInitRank, "ncclCommInitRank", true);
    LOAD(AllReduce, "ncclAllReduce", true);
    LOAD(CommGetAsyncError, "ncclCommGetAsyncError", true);
    LOAD(CommAbort, "ncclCommAbort", true);
    LOAD(CommDestroy, "ncclCommDestroy", true);
    LOAD(GetErrorString, "ncclGetErrorString", true);
#if NCCL_VERSION_CODE >= 21400
    LOAD(CommInitRankConfig, "ncclCommInitRankConfig", false);
    LOAD(CommFinalize, "ncclCommFinalize", false);
#endif
    LOAD(GetLastError, "ncclGetLastError", false);
#undef LOAD
    if (!h)
      snprintf(nccl.why, sizeof nccl.why, "%s", why);
    else if (missing)
      snprintf(nccl.why, sizeof nccl.why, "%s has no %s (NCCL 2.4 or later is needed)", soname, missing);
    if (!h || missing) nccl.GetUniqueId = NULL; /* the mark of "not loaded" */
  }
  if (nccl.GetUniqueId) return PD_OK;
  return pd_errorf(err, PD_ERR_INPUT,
                   "NCCL cannot be loaded: %s; install NCCL (Debian and Ubuntu: libnccl2) or add its directory to "
                   "LD_LIBRARY_PATH",
                   nccl.why);
}

bool pd_nccl_available(void) { return pd_nccl_load(NULL) == PD_OK; }

static pd_status nccl_fail(pd_error *err, ncclResult_t r, const char *what) {
  const char *last = nccl.GetLastError ? nccl.GetLastError(NULL) : NULL; /* the thread's, whatever the comm */
  return pd_errorf(err, PD_ERR_RUNTIME, "rank %d of %d: NCCL: %s: %s%s%s", pd_dist_rank(), pd_dist_size(), what,
                   nccl.GetErrorString(r), last && *last ? ": " : "", last && *last ? last : "");
}

/* Ends the communicator at once: the other ranks' pending calls then fail
 * (or time out) rather than wait for this one. */
static void abort_comm(void) {
  if (g_comm) nccl.CommAbort(g_comm);
  g_comm = NULL;
  g_ready = false;
}

/* The communicator's pending work (its asynchronous error, for a
 * non-blocking one also whether the call still runs), then the stream's. */
static pd_poll_state poll_comm(void *arg, char *why, size_t size) {
  cudaStream_t stream = (cudaStream_t)arg;
  ncclResult_t a = ncclSuccess, r = nccl.CommGetAsyncError(g_comm, &a);
  if (r != ncclSuccess) a = r;
#if NCCL_VERSION_CODE >= 21400
  if (a == ncclInProgress) return PD_POLL_PENDING;
#endif
  if (a != ncclSuccess) {
    const char *last = nccl.GetLastError ? nccl.GetLastError(NULL) : NULL;
    snprintf(why, size, "%s%s%s", nccl.GetErrorString(a), last && *last ? ": " : "", last && *last ? last : "");
    return PD_POLL_FAILED;
  }
  if (!stream) return PD_POLL_DONE;
  cudaError_t e = cudaStreamQuery(stream);
  if (e == cudaSuccess) return PD_POLL_DONE;
  if (e == cudaErrorNotReady) return PD_POLL_PENDING;
  snprintf(why, size, "the stream: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
  return PD_POLL_FAILED;
}

/* The communicator is non-blocking (NCCL 2.14 and later): init and each
 * collective return at once (ncclInProgress while they still connect to
 * the peers, which NCCL 2.22 and later do lazily at the first collective)
 * and are polled here against the deadline; a blocking one would wait in
 * those calls for a dead peer forever. Older NCCL: blocking init, and the
 * allreduce's kernel polled on the stream. */
pd_status pd_nccl_init(pd_error *err) {
  if (g_ready) return PD_OK;
  pd_status st = pd_nccl_load(err);
  if (st) return st;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (pd_dist_rank() == 0) {
    ncclResult_t r = nccl.GetUniqueId(&id);
    if (r != ncclSuccess) return nccl_fail(err, r, "ncclGetUniqueId");
  }
  st = pd_dist_bcast(&id, (int64_t)sizeof id, "the broadcast of the NCCL id from rank 0", err);
  if (st) return st;
  ncclResult_t r;
#if NCCL_VERSION_CODE >= 21400
  if (nccl.CommInitRankConfig) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    r = nccl.CommInitRankConfig(&g_comm, pd_dist_size(), id, pd_dist_rank(), &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      st = nccl_fail(err, r, "ncclCommInitRankConfig");
      abort_comm();
      return st;
    }
    st =
        pd_nccl_wait(poll_comm, NULL, "making the communicator (ncclCommInitRankConfig)", pd_dist_setup_timeout(), err);
    if (st) abort_comm();
    g_ready = !st;
    return st;
  }
#endif
  r = nccl.CommInitRank(&g_comm, pd_dist_size(), id, pd_dist_rank());
  if (r != ncclSuccess) {
    g_comm = NULL; /* a blocking init that failed leaves nothing to abort */
    st = nccl_fail(err, r, "ncclCommInitRank");
    return st;
  }
  g_ready = true;
  return PD_OK;
}

/* Waits for the sum (a step's gradients) before the host queues the rest
 * of the step: only then can a dead peer be noticed and the communicator
 * aborted, where a wait in cudaStreamSynchronize would never return. */
pd_status pd_nccl_allreduce_f32(float *buf, size_t n, void *stream, pd_error *err) {
  if (!g_ready) return pd_errorf(err, PD_ERR_RUNTIME, "rank %d: NCCL: no communicator", pd_dist_rank());
  ncclResult_t r = nccl.AllReduce(buf, buf, n, ncclFloat32, ncclSum, g_comm, (cudaStream_t)stream);
  pd_status st = PD_OK;
#if NCCL_VERSION_CODE >= 21400
  if (r == ncclInProgress) r = ncclSuccess; /* queued, still connecting: the poll waits */
#endif
  if (r != ncclSuccess)
    st = nccl_fail(err, r, "ncclAllReduce");
  else
    st = pd_nccl_wait(poll_comm, stream, "the gradients' allreduce (ncclAllReduce)", pd_dist_timeout(), err);
  if (st) abort_comm();
  return st;
}

void pd_nccl_close(void) {
  if (!g_ready) return;
#if NCCL_VERSION_CODE >= 21400
  /* a non-blocking communicator is finalized (its last work flushed) first */
  if (nccl.CommInitRankConfig && nccl.CommFinalize) {
    ncclResult_t r = nccl.CommFinalize(g_comm);
    if ((r != ncclSuccess && r != ncclInProgress) ||
        pd_nccl_wait(poll_comm, NULL, "ncclCommFinalize", pd_dist_timeout(), NULL)) {
      abort_comm();
      return;
    }
  }
#endif
  nccl.CommDestroy(g_comm);
  g_comm = NULL;
  g_ready = false;
}

#else

bool pd_nccl_built(void) { return false; }
bool pd_nccl_ready(void) { return false; }
bool pd_nccl_available(void) { return false; }
pd_status pd_nccl_load(pd_error *err) {
  return pd_errorf(err, PD_ERR_INPUT,
                   "this paddle-run was built without NCCL (it needs CUDA and MPI, and NCCL's header, when built)");
}
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
