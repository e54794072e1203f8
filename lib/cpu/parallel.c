/* parallel.c — the worker pool behind pd_parallel_run: threads started on
 * first use (and when the thread count grows), each watching for the next
 * job a moment and then waiting on a condition variable. A job is published
 * with a new generation number; part 0 runs on the caller and part w on
 * worker w, so that each part's data stays in the cache of the thread that
 * ran it last time. A worker slow to take its part (asleep, or on a virtual
 * CPU the host has descheduled) must not hold the caller up: the caller
 * takes a part nobody claimed within PD_GRACE_NS of the job's start and runs
 * it itself. Each part is claimed once, by a compare-and-swap of its claim
 * word; its result depends on its number only, never on the thread. One job
 * at a time (a lock around submission); a part that submits again runs that
 * job's parts itself, one after another. */
#include "cpu/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/arch.h"

static _Thread_local bool tls_inside;

#define PD_MAX_PARTS 512 /* pd_set_threads caps the thread count here */
#define PD_PARTS_BITS 20 /* the job word: generation << PD_PARTS_BITS | part count */

static struct {
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  int nworkers;      /* pool threads started; worker w runs part w */
  uint64_t job;      /* the current job: its generation (one more each job) << PD_PARTS_BITS | its part
                        count; what an idle worker watches */
  pd_parallel_fn fn; /* the current job (written before its job word, read after it) */
  void *arg;
  int remaining; /* parts 1 .. n-1 of the current job not yet finished */
  int sleepers;  /* workers waiting on wake (the caller signals only then) */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL, NULL, 0, 0};

/* claim[w]: the generation of the last job whose part w was claimed, one
 * cache line each (a claim writes it while another thread reads its own) */
static struct {
  uint64_t gen;
  char pad[56];
} claim[PD_MAX_PARTS] __attribute__((aligned(64)));

static pthread_mutex_t submit = PTHREAD_MUTEX_INITIALIZER;

/* A worker's part number and the job word current when it was made. */
typedef struct start {
  int id;
  uint64_t job;
} start;

/* Waking a thread asleep on a condition variable takes tens of
 * microseconds here, longer than a whole batch-1 matrix-vector product; so a
 * worker that finished a job watches for the next one for PD_SPIN_NS before
 * it sleeps, and the caller watches for its workers likewise. Between the
 * ops of one step the next job comes well within that (a hand-written
 * recurrent cell runs ~60 µs of small one-thread ops between its products:
 * at 50 µs the workers slept through every such gap, and the first product
 * of each step waited ~35 µs for one); an idle pool sleeps.
 * The spin gives the core up every 64th turn (cpu_relax), so a runnable
 * thread (another process's) is not kept from it for long. */
#define PD_SPIN_NS 200000
/* How long a part waits for its worker before the caller takes it: a worker
 * watching for jobs claims its part within a microsecond or two. */
#define PD_GRACE_NS 3000

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

/* Runs part w of the job in job word `job` if nobody has claimed it: the
 * claim succeeds only while that job is current and the part unclaimed, and
 * until then the caller cannot publish the next job, so fn and arg, read
 * after the job word, are that job's. */
static bool run_part(uint64_t job, int w) {
  uint64_t gen = job >> PD_PARTS_BITS;
  int n = (int)(job & ((1u << PD_PARTS_BITS) - 1));
  if (w <= 0 || w >= n) return false;
  pd_parallel_fn fn = __atomic_load_n(&pool.fn, __ATOMIC_RELAXED);
  void *arg = __atomic_load_n(&pool.arg, __ATOMIC_RELAXED);
  uint64_t v = __atomic_load_n(&claim[w].gen, __ATOMIC_ACQUIRE);
  if (v >= gen || !__atomic_compare_exchange_n(&claim[w].gen, &v, gen, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return false;
  fn(arg, w, n);
  if (__atomic_sub_fetch(&pool.remaining, 1, __ATOMIC_ACQ_REL) == 0) {
    /* under the lock, so a caller between its check and its wait hears it */
    pthread_mutex_lock(&pool.mu);
    pthread_cond_signal(&pool.done);
    pthread_mutex_unlock(&pool.mu);
  }
  return true;
}

static void *worker(void *p) {
  const start s = *(start *)p;
  free(p);
  uint64_t seen = s.job;
  tls_inside = true;
  for (;;) {
    /* the lock only to sleep: a worker that saw the job while watching
     * would otherwise queue for it behind the caller publishing it */
    if (!spin_while_eq_u64(&pool.job, seen)) {
      /* sleepers up, then the job read; the caller writes the job, then reads
       * sleepers (all sequentially consistent): one of them sees the other */
      pthread_mutex_lock(&pool.mu);
      __atomic_add_fetch(&pool.sleepers, 1, __ATOMIC_SEQ_CST);
      while (__atomic_load_n(&pool.job, __ATOMIC_SEQ_CST) == seen) pthread_cond_wait(&pool.wake, &pool.mu);
      __atomic_sub_fetch(&pool.sleepers, 1, __ATOMIC_SEQ_CST);
      pthread_mutex_unlock(&pool.mu);
    }
    seen = __atomic_load_n(&pool.job, __ATOMIC_ACQUIRE);
    run_part(seen, s.id);
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
  while (pool.nworkers < n - 1) {
    pthread_t th;
    pthread_attr_t at;
    start *s = malloc(sizeof *s);
    if (!s) break; /* a part without its worker: the caller takes it */
    *s = (start){pool.nworkers + 1, pool.job};
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
  uint64_t gen = (pool.job >> PD_PARTS_BITS) + 1, job = gen << PD_PARTS_BITS | (uint64_t)n;
  __atomic_store_n(&pool.fn, fn, __ATOMIC_RELAXED);
  __atomic_store_n(&pool.arg, arg, __ATOMIC_RELAXED);
  __atomic_store_n(&pool.remaining, n - 1, __ATOMIC_RELAXED);
  __atomic_store_n(&pool.job, job, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&pool.sleepers, __ATOMIC_SEQ_CST)) { /* a system call: only for a worker asleep */
    pthread_mutex_lock(&pool.mu);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);
  }
  const uint64_t grace = mono_ns() + PD_GRACE_NS;
  tls_inside = true;
  fn(arg, 0, n);
  /* the parts their workers have not claimed by now */
  for (int w = 1; w < n; w++) {
    for (unsigned i = 1; __atomic_load_n(&claim[w].gen, __ATOMIC_ACQUIRE) < gen && ((i & 15) || mono_ns() <= grace);
         i++)
      cpu_relax(i);
    run_part(job, w); /* nothing where its worker took it */
  }
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
  g_threads = n < PD_MAX_PARTS ? n : PD_MAX_PARTS; /* BLIS itself always runs one thread (blas.c) */
}

int pd_get_threads(void) {
  if (g_threads == 0) pd_set_threads(0);
  return g_threads;
}
