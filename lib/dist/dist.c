/* dist.c — the MPI side of data-parallel training (see dist.h). Built with
 * MPI when the Makefile defines PD_MPI; otherwise every process is a single
 * rank and the collectives are never called. */
#include "dist/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#ifdef PD_MPI
#include <mpi.h>
#endif

static struct {
  bool joined;
  int rank, size;
  double timeout;
  int64_t local_rows;
  bool local_stop, global_stop;
  double comm; /* seconds spent in collectives */
  int64_t shared_steps;
#ifdef PD_MPI
  /* the gradients' shared-memory window (see pd_dist_shared_region) */
  int shared;          /* 0: not decided yet, 1: in use, 2: usable, -1: not */
  MPI_Win win;         /* per rank: `cap` bytes */
  int64_t cap;         /* bytes of each rank's part */
  char **bases;        /* each rank's part of the window */
  const char *why_not; /* why the shared window is not used */
#endif
} g = {.size = 1, .timeout = 300, .local_rows = 1};

bool pd_dist_joined(void) { return g.joined; }
int pd_dist_rank(void) { return g.rank; }
int pd_dist_size(void) { return g.size; }
double pd_dist_comm_seconds(void) { return g.comm; }
void pd_dist_count_shared_step(void) { g.shared_steps++; }
int64_t pd_dist_shared_steps(void) { return g.shared_steps; }
void pd_dist_set_timeout(double seconds) { g.timeout = seconds; }
double pd_dist_timeout(void) { return g.timeout; }
/* The setup (agreement, broadcast of the parameters) waits at least a
 * minute: ranks may take unequal times to read the data. */
double pd_dist_setup_timeout(void) { return g.timeout > 60 ? g.timeout : 60; }

void pd_dist_step_begin(int64_t local_rows, bool stop) {
  g.local_rows = local_rows;
  g.local_stop = stop;
  g.global_stop = stop;
}
int64_t pd_dist_local_rows(void) { return g.local_rows; }
bool pd_dist_local_stop(void) { return g.local_stop; }
void pd_dist_set_global_stop(bool stop) { g.global_stop = stop; }
bool pd_dist_global_stop(void) { return g.global_stop; }

#ifdef PD_MPI

bool pd_dist_built(void) { return true; }

/* Launched by mpirun (Open MPI, or any PMI/PMIx launcher)? */
static bool launched(void) { return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK"); }

pd_status pd_dist_init(pd_error *err) {
  if (g.joined || !launched()) return PD_OK;
  int ok = 0;
  MPI_Initialized(&ok);
  if (!ok && MPI_Init(NULL, NULL) != MPI_SUCCESS) return pd_errorf(err, PD_ERR_RUNTIME, "MPI_Init failed");
  /* errors come back as codes (then this rank ends the job), not as aborts */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g.size);
  g.joined = true;
  return PD_OK;
}

static void free_window(void) {
  if (g.shared != 1) return;
  MPI_Win_unlock_all(g.win);
  MPI_Win_free(&g.win);
  g.shared = 2;
}

void pd_dist_finalize(void) {
  if (!g.joined) return;
  free_window();
  free(g.bases);
  g.bases = NULL;
  MPI_Finalize();
  g.joined = false;
}

_Noreturn void pd_dist_abort(int code) {
  if (g.joined) MPI_Abort(MPI_COMM_WORLD, code);
  exit(code);
}

#define SETUP_TIMEOUT pd_dist_setup_timeout()

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Polls a started collective until it completes or the deadline passes.
 * Open MPI moves a large message along only inside MPI calls, so for the
 * first SPIN_SECONDS the rank tests without pause, yielding the core to any
 * other runnable process between tests (ranks may outnumber cores); after
 * that (another rank is slow, hung or gone) it sleeps 1 ms between tests. */
#define SPIN_SECONDS 0.5
static pd_status wait_for(MPI_Request *req, int rc, const char *what, double timeout, pd_error *err) {
  if (rc != MPI_SUCCESS) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    return pd_errorf(err, PD_ERR_RUNTIME, "%s failed: %s", what, s);
  }
  double start = now(), deadline = start + timeout;
  for (long spins = 0;; spins++) {
    int done = 0;
    rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return wait_for(req, rc, what, timeout, err);
    if (done) {
      g.comm += now() - start;
      return PD_OK;
    }
    if (spins % 64) continue; /* the clock is read every 64 tests */
    double t = now();
    if (t > deadline)
      return pd_errorf(err, PD_ERR_RUNTIME,
                       "%s did not complete within %g s: another rank has died or hangs "
                       "(--comm-timeout sets the limit)",
                       what, timeout);
    if (t - start < SPIN_SECONDS) {
      sched_yield();
    } else {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
}

pd_status pd_dist_allreduce_sum(void *buf, int64_t n, pd_dtype dtype, const char *what, pd_error *err) {
  if (!g.joined || g.size == 1) return PD_OK;
  if (dtype != PD_F32 && dtype != PD_F64)
    return pd_errorf(err, PD_ERR_RUNTIME, "internal error: allreduce of %s", pd_dtype_name(dtype));
  if (n > 0x7fffffff)
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: %lld elements is more than MPI can send at once", what, (long long)n);
  MPI_Request req;
  int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, dtype == PD_F32 ? MPI_FLOAT : MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                          &req);
  return wait_for(&req, rc, what, g.timeout, err);
}

/* All ranks meet (a barrier polled against the deadline), with the memory
 * of the shared window made consistent on both sides of it. */
static pd_status shared_barrier(const char *what, double timeout, pd_error *err) {
  if (g.shared == 1) MPI_Win_sync(g.win);
  MPI_Request req;
  int rc = MPI_Ibarrier(MPI_COMM_WORLD, &req);
  pd_status st = wait_for(&req, rc, what, timeout, err);
  if (!st && g.shared == 1) MPI_Win_sync(g.win);
  return st;
}

/* Whether the shared window can be used: every rank on one machine, and
 * not PADDLE_RUN_ALLREDUCE=mpi. Collective. */
static pd_status decide(pd_error *err) {
  const char *force = getenv("PADDLE_RUN_ALLREDUCE");
  MPI_Comm node;
  int node_size = 0;
  g.why_not = NULL;
  if (force && strcmp(force, "mpi") == 0) {
    g.why_not = "PADDLE_RUN_ALLREDUCE=mpi";
  } else if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) {
    g.why_not = "MPI could not tell which ranks share a machine";
  } else {
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    /* the same answer on every rank: if some ranks do not share, none does */
    int all = node_size == g.size, every = 0;
    MPI_Allreduce(&all, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!every) g.why_not = "the ranks run on more than one machine";
  }
  if (g.why_not) {
    g.shared = -1;
    return PD_OK;
  }
  if (!g.bases) g.bases = calloc((size_t)g.size, sizeof *g.bases);
  if (!g.bases) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  g.shared = 2; /* usable, no window yet */
  return PD_OK;
}

pd_status pd_dist_shared_decide(pd_error *err) {
  if (!g.joined || g.size == 1 || g.shared != 0) return PD_OK;
  pd_status st = shared_barrier("the ranks' meeting before sharing memory", SETUP_TIMEOUT, err);
  return st ? st : decide(err);
}

/* Makes (or, for more bytes, remakes) the window: every rank calls it at the
 * same step with the same size. The ranks first meet at a barrier with a
 * deadline, so none waits forever in the blocking calls that follow for a
 * rank that has already gone. */
static pd_status make_window(int64_t bytes, pd_error *err) {
  pd_status st = shared_barrier("the ranks' meeting before sharing memory", SETUP_TIMEOUT, err);
  if (st) return st;
  if (g.shared == 0) st = decide(err);
  if (st || g.shared == -1) return st;
  free_window();
  g.cap = (bytes + 63) / 64 * 64;
  char *mine = NULL;
  int rc = MPI_Win_allocate_shared((MPI_Aint)g.cap, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &g.win);
  int ok = rc == MPI_SUCCESS, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    if (ok) MPI_Win_free(&g.win);
    g.shared = -1, g.why_not = "MPI could not allocate shared memory";
    return PD_OK;
  }
  for (int r = 0; r < g.size; r++) {
    MPI_Aint size;
    int disp;
    MPI_Win_shared_query(g.win, r, &size, &disp, &g.bases[r]);
  }
  MPI_Win_lock_all(MPI_MODE_NOCHECK, g.win);
  g.shared = 1;
  return PD_OK;
}

pd_status pd_dist_shared_region(int64_t bytes, void **bases, pd_error *err) {
  bases[0] = NULL;
  if (!g.joined || g.size == 1 || g.shared == -1) return PD_OK;
  if (g.shared != 1 || bytes > g.cap) {
    pd_status st = make_window(bytes, err);
    if (st || g.shared != 1) return st;
  }
  pd_dist_shared_bases(bases);
  return PD_OK;
}

bool pd_dist_shared_bases(void **bases) {
  if (g.shared != 1) return false;
  for (int r = 0; r < g.size; r++) bases[r] = g.bases[r];
  return true;
}

pd_status pd_dist_shared_wait(const char *what, pd_error *err) { return shared_barrier(what, g.timeout, err); }

const char *pd_dist_shared_why_not(void) {
  if (!g.joined || g.size == 1) return "a single rank";
  return g.shared >= 1 ? NULL : g.why_not ? g.why_not : "not decided yet";
}

pd_status pd_dist_bcast(void *buf, int64_t bytes, const char *what, pd_error *err) {
  if (!g.joined || g.size == 1) return PD_OK;
  for (int64_t off = 0; off < bytes;) {
    int chunk = bytes - off > (1 << 30) ? 1 << 30 : (int)(bytes - off);
    MPI_Request req;
    int rc = MPI_Ibcast((char *)buf + off, chunk, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
    pd_status st = wait_for(&req, rc, what, SETUP_TIMEOUT, err);
    if (st) return st;
    off += chunk;
  }
  return PD_OK;
}

pd_status pd_dist_same(uint64_t value, bool *same, const char *what, pd_error *err) {
  *same = true;
  if (!g.joined || g.size == 1) return PD_OK;
  /* max of v and of ~v: the largest and (inverted) the smallest value */
  uint64_t v[2] = {value, ~value};
  MPI_Request req;
  int rc = MPI_Iallreduce(MPI_IN_PLACE, v, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD, &req);
  pd_status st = wait_for(&req, rc, what, g.timeout, err);
  if (!st) *same = v[0] == ~v[1];
  return st;
}

pd_status pd_dist_agree(int my_code, int *first, int *code, pd_error *err) {
  *first = my_code ? g.rank : -1, *code = my_code;
  if (!g.joined || g.size == 1) return PD_OK;
  int *codes = calloc((size_t)g.size, sizeof *codes);
  if (!codes) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  MPI_Request req;
  int rc = MPI_Iallgather(&my_code, 1, MPI_INT, codes, 1, MPI_INT, MPI_COMM_WORLD, &req);
  pd_status st = wait_for(&req, rc, "the ranks' agreement on the setup", SETUP_TIMEOUT, err);
  for (int r = g.size - 1; !st && r >= 0; r--)
    if (codes[r]) *first = r, *code = codes[r];
  free(codes);
  return st;
}

#else /* no MPI in this build: always a single rank */

bool pd_dist_built(void) { return false; }
pd_status pd_dist_init(pd_error *err) {
  /* N copies of a build without MPI would each train alone and overwrite
   * each other's checkpoints */
  const char *n = getenv("OMPI_COMM_WORLD_SIZE");
  if (n && atoi(n) > 1)
    return pd_errorf(err, PD_ERR_INPUT,
                     "this paddle-run was built without MPI (make MPI=0), so it cannot train as one of %s "
                     "mpirun processes; rebuild it with Open MPI installed",
                     n);
  return PD_OK;
}
void pd_dist_finalize(void) {}
_Noreturn void pd_dist_abort(int code) { exit(code); }
pd_status pd_dist_allreduce_sum(void *buf, int64_t n, pd_dtype dtype, const char *what, pd_error *err) {
  (void)buf, (void)n, (void)dtype, (void)what, (void)err;
  return PD_OK;
}
pd_status pd_dist_bcast(void *buf, int64_t bytes, const char *what, pd_error *err) {
  (void)buf, (void)bytes, (void)what, (void)err;
  return PD_OK;
}
pd_status pd_dist_shared_region(int64_t bytes, void **bases, pd_error *err) {
  (void)bytes, (void)err;
  bases[0] = NULL;
  return PD_OK;
}
bool pd_dist_shared_bases(void **bases) {
  (void)bases;
  return false;
}
pd_status pd_dist_shared_wait(const char *what, pd_error *err) {
  (void)what, (void)err;
  return PD_OK;
}
const char *pd_dist_shared_why_not(void) { return "built without MPI"; }
pd_status pd_dist_shared_decide(pd_error *err) {
  (void)err;
  return PD_OK;
}
pd_status pd_dist_same(uint64_t value, bool *same, const char *what, pd_error *err) {
  (void)value, (void)what, (void)err;
  *same = true;
  return PD_OK;
}
pd_status pd_dist_agree(int my_code, int *first, int *code, pd_error *err) {
  (void)err;
  *first = my_code ? 0 : -1, *code = my_code;
  return PD_OK;
}

#endif
