/* parallel.h — a fixed pool of worker threads for kernels that split their
 * work themselves (a convolution over the images of the batch, an
 * elementwise pass over a long array).
 *
 * pd_parallel_run(n, fn, arg) calls fn(arg, t, n) for t = 0 .. n-1, part 0
 * on the calling thread and the rest on pool threads, and returns when all
 * have finished. Which part does which work is decided by the caller from
 * t alone, so results do not depend on scheduling: a kernel that reduces
 * per-part results in part order gives the same bits on every run with the
 * same thread count.
 *
 * Inside a part, matrix products run on one thread (pd_gemm_* asks
 * pd_parallel_inside()), so the parts do not each start BLIS's threads.
 * A nested pd_parallel_run runs its parts one after another on the caller. */
#ifndef PD_PARALLEL_H
#define PD_PARALLEL_H

#include <stdbool.h>
#include <stdint.h>

typedef void (*pd_parallel_fn)(void *arg, int part, int nparts);

/* Runs fn for parts 0 .. n-1 (n is capped at the pool size, pd_get_threads()). */
void pd_parallel_run(int n, pd_parallel_fn fn, void *arg);

/* Whether the calling thread is running a part of pd_parallel_run. */
bool pd_parallel_inside(void);

/* How many parts to split `work` units into so that each part has at least
 * `grain` units, at most the thread count (1 inside a part). */
int pd_parallel_parts(int64_t work, int64_t grain);

/* Calls fn(arg, lo, hi) for consecutive ranges covering [0, n), in parallel
 * when n holds at least two `grain`s (elementwise loops: the ranges are
 * fixed by n and the thread count alone). */
typedef void (*pd_range_fn)(void *arg, int64_t lo, int64_t hi);
void pd_parallel_for(int64_t n, int64_t grain, pd_range_fn fn, void *arg);

/* Grain of the optimizers' elementwise updates. */
#define PD_UPDATE_GRAIN ((int64_t)1 << 15)
/* Grain of the other elementwise kernels split on the pool (activations,
 * cast, scale, same-shape broadcast ops): elements a part at least. A part
 * of 4096 pays while the workers watch for jobs (parallel.c's PD_SPIN_NS):
 * a recurrent cell's [64, 128] gates go in two. */
#define PD_ELEMENTWISE_GRAIN ((int64_t)1 << 12)
/* Of the kernels that work out an index per element (pad, resize_nearest,
 * slice). */
#define PD_INDEXED_GRAIN ((int64_t)1 << 13)
/* Of the kernels over whole rows (layer_norm): elements a part at least. */
#define PD_ROWS_GRAIN ((int64_t)1 << 16)

/* The range [*lo, *hi) of n items that part `part` of `nparts` takes. */
static inline void pd_parallel_range(int64_t n, int part, int nparts, int64_t *lo, int64_t *hi) {
  *lo = n * part / nparts;
  *hi = n * (part + 1) / nparts;
}

/* Set the number of threads BLIS (and our threaded loops) may use; 0 = all cores. */
void pd_set_threads(int n);
int pd_get_threads(void);

#endif
