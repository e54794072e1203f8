/* parallel.c — the worker pool behind pd_parallel_run: threads started on
 * first use (and when the thread count grows), each watching for the next
 * job a moment and then waiting on a condition variable; a job is published under the pool's lock with
 * a new generation number, and the caller waits until every worker part
 * has finished. One job at a time (a lock around submission); a part that
 * submits again runs that job's parts itself, one after another. */
#include "cpu/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/arch.h"

static _Thread_local bool tls_inside;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  int nworkers;      /* pool threads started; worker w runs part w (1-based) */
  uint64_t gen;      /* bumped for each job */
  pd_parallel_fn fn; /* the current job */
  void *arg;
  int nparts;    /* parts 0 .. nparts-1 run on the caller and the pool */
  int total;     /* the job's part count, given to fn */
  int remaining; /* worker parts of the current job not yet finished */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL, NULL, 0, 0, 0};

static pthread_mutex_t submit = PTHREAD_MUTEX_INITIALIZER;

/* A worker's part number and the generation current when it was made: its
 * first job is the next one, published right after. */
typedef struct start {
  int id;
  uint64_t gen;
} start;

/* Waking a thread asleep on a condition variable takes tens of
 * microseconds here, longer than a whole batch-1 matrix-vector product; so a
 * worker that finished a job watches for the next one for PD_SPIN_NS before
 * it sleeps, and the caller watches for its workers likewise. Between the
 * ops of one step the next job comes well within that; an idle pool sleeps.
 * The spin yields the core on every turn, so a runnable thread (BLIS's
 * own, another process) is not kept from it. */
#define PD_SPIN_NS 50000

/* a pause on most turns, the core given up on every 64th */
static inline void cpu_relax(unsigned i) {
  if ((i & 63) == 63) {
    sched_yield();
    return;
  }
#ifdef PD_X86
  __builtin_ia32_pause();
#endif
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One turn of a spin that has run i turns: false once PD_SPIN_NS passed
 * since its first turn (*until starts at 0; the clock is read every 64th). */
static bool spin_turn(unsigned i, uint64_t *until) {
  if ((i & 63) == 0) {
    uint64_t t = mono_ns();
    if (!*until)
      *until = t + PD_SPIN_NS;
    else if (t > *until)
      return false;
  }
  cpu_relax(i);
  return true;
}

/* Spin until *p != not / *p == 0 (true) or PD_SPIN_NS passed (false). */
static bool spin_while_eq_u64(const uint64_t *p, uint64_t not ) {
  uint64_t until = 0;
  for (unsigned i = 0; __atomic_load_n(p, __ATOMIC_ACQUIRE) == not ; i++)
    if (!spin_turn(i, &until)) return false;
  return true;
}

static bool spin_while_nonzero(const int *p) {
  uint64_t until = 0;
  for (unsigned i = 0; __atomic_load_n(p, __ATOMIC_ACQUIRE) != 0; i++)
    if (!spin_turn(i, &until)) return false;
  return true;
}

static void *worker(void *p) {
  const start s = *(start *)p;
  free(p);
  const int id = s.id;
  uint64_t seen = s.gen;
  tls_inside = true;
  for (;;) {
    spin_while_eq_u64(&pool.gen, seen);
    pthread_mutex_lock(&pool.mu);
    while (__atomic_load_n(&pool.gen, __ATOMIC_ACQUIRE) == seen) pthread_cond_wait(&pool.wake, &pool.mu);
    seen = pool.gen;
    bool mine = id < pool.nparts;
    pd_parallel_fn fn = pool.fn;
    void *arg = pool.arg;
    int n = pool.total;
    pthread_mutex_unlock(&pool.mu);
    if (!mine) continue;
    fn(arg, id, n);
    if (__atomic_sub_fetch(&pool.remaining, 1, __ATOMIC_ACQ_REL) == 0) {
      /* under the lock, so a caller between its check and its wait hears it */
      pthread_mutex_lock(&pool.mu);
      pthread_cond_signal(&pool.done);
      pthread_mutex_unlock(&pool.mu);
    }
  }
  return NULL;
}

bool pd_parallel_inside(void) { return tls_inside; }

int pd_parallel_parts(int64_t work, int64_t grain) {
  if (tls_inside || work <= 0) return 1;
  int64_t n = grain > 0 ? work / grain : work, max = pd_get_threads();
  if (n > max) n = max;
  return n < 1 ? 1 : (int)n;
}

void pd_parallel_run(int n, pd_parallel_fn fn, void *arg) {
  if (n > pd_get_threads()) n = pd_get_threads();
  if (n <= 1 || tls_inside) {
    for (int t = 0; t < n; t++) fn(arg, t, n);
    return;
  }
  pthread_mutex_lock(&submit);
  pthread_mutex_lock(&pool.mu);
  while (pool.nworkers < n - 1) {
    pthread_t th;
    pthread_attr_t at;
    start *s = malloc(sizeof *s);
    if (!s) break;
    *s = (start){pool.nworkers + 1, pool.gen};
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &at, worker, s);
    pthread_attr_destroy(&at);
    if (rc) {
      free(s);
      break;
    }
    pool.nworkers++;
  }
  /* parts without a worker (thread creation failed) run on the caller */
  int pooled = n - 1 < pool.nworkers ? n - 1 : pool.nworkers;
  pool.fn = fn, pool.arg = arg, pool.nparts = 1 + pooled, pool.total = n;
  __atomic_store_n(&pool.remaining, pooled, __ATOMIC_RELEASE);
  __atomic_store_n(&pool.gen, pool.gen + 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.mu);
  tls_inside = true;
  fn(arg, 0, n);
  for (int t = 1 + pooled; t < n; t++) fn(arg, t, n);
  tls_inside = false;
  if (!spin_while_nonzero(&pool.remaining)) {
    pthread_mutex_lock(&pool.mu);
    while (__atomic_load_n(&pool.remaining, __ATOMIC_ACQUIRE)) pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
  }
  pthread_mutex_unlock(&submit);
}

typedef struct range_job {
  int64_t n;
  pd_range_fn fn;
  void *arg;
} range_job;

static void range_part(void *arg, int part, int nparts) {
  const range_job *j = arg;
  int64_t lo, hi;
  pd_parallel_range(j->n, part, nparts, &lo, &hi);
  if (lo < hi) j->fn(j->arg, lo, hi);
}

void pd_parallel_for(int64_t n, int64_t grain, pd_range_fn fn, void *arg) {
  int parts = pd_parallel_parts(n, grain);
  if (parts <= 1) {
    if (n > 0) fn(arg, 0, n);
    return;
  }
  range_job j = {n, fn, arg};
  pd_parallel_run(parts, range_part, &j);
}

static int g_threads = 0;

void pd_set_threads(int n) {
  if (n <= 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (int)c : 1;
  }
  g_threads = n; /* BLIS itself always runs one thread (blas.c) */
}

int pd_get_threads(void) {
  if (g_threads == 0) pd_set_threads(0);
  return g_threads;
}
