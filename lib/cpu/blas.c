/* blas.c — row-major GEMM through BLIS's typed API (strides let BLIS read
 * transposed operands in place, no copies). BLIS always runs on one thread:
 * a product big enough for several is split into blocks of C on the worker
 * pool (GEMM_SPLIT below). Small products run whole: waking threads costs
 * more than they save below ~2^18 multiply-adds; so do products inside a
 * part of pd_parallel_run, whose caller already split the work. A product
 * with one row (batch-1 inference) is a matrix-vector product, which BLIS
 * does without packing the matrix. */
#include "cpu/blas.h"

#include <blis.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "cpu/blisarch.h"
#include "cpu/gemv.h"
#include "cpu/parallel.h"

/* BLIS's kernel set is chosen (the CPU measured first, once) before the
 * first product: start_blis. A process that multiplies no matrices never
 * measures. */
static pthread_once_t g_blis_started = PTHREAD_ONCE_INIT;
static void start_blis(void) { pthread_once(&g_blis_started, pd_blis_arch_lock); }

#define PD_GEMM_SERIAL_BELOW (1 << 18)

static bool g_prof;                   /* read by the pool's threads too: atomic */
static _Thread_local bool tls_timing; /* inside a timed product */
static pd_blas_profile g_prof_acc;

static double prof_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void pd_blas_profile_start(void) {
  g_prof_acc = (pd_blas_profile){0};
  __atomic_store_n(&g_prof, true, __ATOMIC_RELAXED);
}

pd_blas_profile pd_blas_profile_stop(void) {
  __atomic_store_n(&g_prof, false, __ATOMIC_RELAXED);
  return g_prof_acc;
}

/* c[0, :] = alpha op(A)[0, :] op(B) + beta c[0, :]. With B [k, n] (the fc
 * layer's weights) the float product is lib/cpu/gemv.c's where the CPU has
 * AVX-512 (own_rows: false where it has not, and for double). */
static bool own_rows_float(int64_t n, int64_t k, float alpha, const float *x, int64_t incx, const float *b, int64_t ldb,
                           float beta, float *c) {
  return pd_gemv_rows_float(n, k, alpha, x, incx, b, ldb, beta, c);
}
static bool own_rows_double(int64_t n, int64_t k, double alpha, const double *x, int64_t incx, const double *b,
                            int64_t ldb, double beta, double *c) {
  (void)n, (void)k, (void)alpha, (void)x, (void)incx, (void)b, (void)ldb, (void)beta, (void)c;
  return false;
}
#define GEMV_ROW(T, fn)                                                                                          \
  static void gemv_row_##T(bool ta, bool tb, int64_t n, int64_t k, T alpha, const T *a, int64_t lda, const T *b, \
                           int64_t ldb, T beta, T *c) {                                                          \
    int64_t incx = ta ? lda : 1;                                                                                 \
    if (tb) /* op(B) = B^T, B is [n, k]: c = B x */                                                              \
      fn(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, n, k, &alpha, (T *)b, ldb, 1, (T *)a, incx, &beta, c, 1);         \
    else if (!own_rows_##T(n, k, alpha, a, incx, b, ldb, beta, c)) /* B is [k, n]: c = B^T x */                  \
      fn(BLIS_TRANSPOSE, BLIS_NO_CONJUGATE, k, n, &alpha, (T *)b, ldb, 1, (T *)a, incx, &beta, c, 1);            \
  }
GEMV_ROW(float, bli_sgemv)
GEMV_ROW(double, bli_dgemv)

/* A matrix-vector product streams the whole matrix once and is bound by how
 * fast one core reads it from cache (784x512 floats: 19 us here, ~84 GB/s);
 * two cores read twice as fast. So with threads and a matrix of at least
 * PD_GEMV_SPLIT_FROM elements, the outputs are split into column blocks (64
 * bytes apart), one per part; each element is still one thread's whole sum,
 * so the result does not depend on the split. */
#define PD_GEMV_SPLIT_FROM ((int64_t)1 << 16)

#define GEMV_SPLIT(T)                                                                                        \
  typedef struct gemv_job_##T {                                                                              \
    bool ta, tb;                                                                                             \
    int64_t n, k, lda, ldb;                                                                                  \
    T alpha, beta;                                                                                           \
    const T *a, *b;                                                                                          \
    T *c;                                                                                                    \
  } gemv_job_##T;                                                                                            \
  static void gemv_part_##T(void *arg, int part, int nparts) {                                               \
    const gemv_job_##T *j = arg;                                                                             \
    const int64_t line = 64 / (int64_t)sizeof(T), blocks = (j->n + line - 1) / line;                         \
    int64_t lo, hi;                                                                                          \
    pd_parallel_range(blocks, part, nparts, &lo, &hi);                                                       \
    lo *= line, hi *= line;                                                                                  \
    if (hi > j->n) hi = j->n;                                                                                \
    if (lo >= hi) return;                                                                                    \
    const T *b = j->tb ? j->b + lo * j->ldb : j->b + lo; /* rows of B [n,k], or columns of B [k,n] */        \
    gemv_row_##T(j->ta, j->tb, hi - lo, j->k, j->alpha, j->a, j->lda, b, j->ldb, j->beta, j->c + lo);        \
  }                                                                                                          \
  static void gemv_##T(bool ta, bool tb, int64_t n, int64_t k, T alpha, const T *a, int64_t lda, const T *b, \
                       int64_t ldb, T beta, T *c) {                                                          \
    int parts = n * k >= PD_GEMV_SPLIT_FROM ? pd_parallel_parts(n, 64 / (int64_t)sizeof(T)) : 1;             \
    if (parts <= 1) {                                                                                        \
      gemv_row_##T(ta, tb, n, k, alpha, a, lda, b, ldb, beta, c);                                            \
      return;                                                                                                \
    }                                                                                                        \
    gemv_job_##T j = {ta, tb, n, k, lda, ldb, alpha, beta, a, b, c};                                         \
    pd_parallel_run(parts, gemv_part_##T, &j);                                                               \
  }
GEMV_SPLIT(float)
GEMV_SPLIT(double)

/* Parts split C at multiples of the micro-kernel's tile along the split
 * side (MR x NR), so the parts' tiles line up with those of the unsplit
 * product and no part ends in a partial tile. BLIS computes a row-stored C
 * through its transpose when the micro-kernel prefers column-stored C (the
 * AVX-512 'skx' one, 32 x 12): C's columns then run along MR. (A unit of
 * lcm(MR, NR), right either way, cut fashion_mlp's 256 columns into 192 +
 * 64 on two threads: 173 -> 242 GFLOP/s with 32.) The bits still differ
 * between thread counts where BLIS picks its small-matrix ("sup") path by a
 * part's size; for one thread count they are always the same. */
static int64_t split_unit(num_t dt, bool by_rows) {
  static int64_t unit[2][2];
  int i = dt == BLIS_DOUBLE, r = by_rows;
  int64_t u = __atomic_load_n(&unit[i][r], __ATOMIC_RELAXED);
  if (!u) {
    cntx_t *cntx = bli_gks_query_cntx();
    int64_t mr = (int64_t)bli_cntx_get_blksz_def_dt(dt, BLIS_MR, cntx);
    int64_t nr = (int64_t)bli_cntx_get_blksz_def_dt(dt, BLIS_NR, cntx);
    bool swapped = bli_cntx_l3_nat_ukr_prefers_cols_dt(dt, BLIS_GEMM_UKR, cntx);
    u = by_rows == swapped ? nr : mr;
    if (u <= 0) u = 16;
    __atomic_store_n(&unit[i][r], u, __ATOMIC_RELAXED);
  }
  return u;
}

/* A product big enough for threads is split on the worker pool, not by
 * BLIS: BLIS 0.9 starts and joins its threads in every call, and here a
 * thread it starts often waits on the caller's core for the scheduler's
 * next balancing tick (~4 ms), so a 0.5 ms product could take 10-50 ms (bare
 * bench_gemm, 2 threads: 4 ms warm per shape, 60-100 ms for the step's 8
 * products back to back). The pool's threads are already running. The rows
 * of C (or its columns: whichever leaves the smaller operand to be packed by
 * every part) are split into blocks (split_unit apart), one per part, each a
 * one-thread BLIS product over the whole K: every element of C is one
 * part's sum, in BLIS's one-thread order. */
#define GEMM_SPLIT(T, fn)                                                                                              \
  typedef struct gemm_job_##T {                                                                                        \
    bool ta, tb, by_rows;                                                                                              \
    int64_t unit, m, n, k, lda, ldb, ldc;                                                                              \
    T alpha, beta;                                                                                                     \
    const T *a, *b;                                                                                                    \
    T *c;                                                                                                              \
    pd_gemm_epilogue ep;                                                                                               \
    void *ep_arg;                                                                                                      \
  } gemm_job_##T;                                                                                                      \
  static void gemm_one_##T(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t lda,        \
                           const T *b, int64_t ldb, T beta, T *c, int64_t ldc) {                                       \
    rntm_t rntm = BLIS_RNTM_INITIALIZER;                                                                               \
    bli_rntm_set_num_threads(1, &rntm);                                                                                \
    fn(ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, k, &alpha, (T *)a, lda, \
       1, (T *)b, ldb, 1, &beta, c, ldc, 1, NULL, &rntm);                                                              \
  }                                                                                                                    \
  static void gemm_part_##T(void *arg, int part, int nparts) {                                                         \
    const gemm_job_##T *j = arg;                                                                                       \
    const int64_t unit = j->unit, total = j->by_rows ? j->m : j->n;                                                    \
    int64_t lo, hi;                                                                                                    \
    pd_parallel_range((total + unit - 1) / unit, part, nparts, &lo, &hi);                                              \
    lo *= unit, hi *= unit;                                                                                            \
    if (hi > total) hi = total;                                                                                        \
    if (lo >= hi) return;                                                                                              \
    if (j->by_rows) { /* rows lo..hi of op(A) and of C */                                                              \
      gemm_one_##T(j->ta, j->tb, hi - lo, j->n, j->k, j->alpha, j->ta ? j->a + lo : j->a + lo * j->lda, j->lda, j->b,  \
                   j->ldb, j->beta, j->c + lo * j->ldc, j->ldc);                                                       \
      if (j->ep) j->ep(j->ep_arg, j->c + lo * j->ldc, j->ldc, lo, hi - lo, 0, j->n);                                   \
    } else { /* columns lo..hi of op(B) and of C */                                                                    \
      gemm_one_##T(j->ta, j->tb, j->m, hi - lo, j->k, j->alpha, j->a, j->lda, j->tb ? j->b + lo * j->ldb : j->b + lo,  \
                   j->ldb, j->beta, j->c + lo, j->ldc);                                                                \
      if (j->ep) j->ep(j->ep_arg, j->c + lo, j->ldc, 0, j->m, lo, hi - lo);                                            \
    }                                                                                                                  \
  }
GEMM_SPLIT(float, bli_sgemm_ex)
GEMM_SPLIT(double, bli_dgemm_ex)

#define GEMM(T, fn, dt)                                                                                                \
  void pd_gemm_##T(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t lda, const T *b,    \
                   int64_t ldb, T beta, T *c, int64_t ldc) {                                                           \
    pd_gemm_ep_##T(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, NULL);                                  \
  }                                                                                                                    \
  void pd_gemm_ep_##T(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t lda, const T *b, \
                      int64_t ldb, T beta, T *c, int64_t ldc, pd_gemm_epilogue ep, void *ep_arg) {                     \
    if (m == 0 || n == 0) return;                                                                                      \
    start_blis();                                                                                                      \
    if (!tls_timing && __atomic_load_n(&g_prof, __ATOMIC_RELAXED)) {                                                   \
      if (pd_parallel_inside()) {                                                                                      \
        __atomic_add_fetch(&g_prof_acc.calls_in_parts, 1, __ATOMIC_RELAXED);                                           \
      } else {                                                                                                         \
        double t0 = prof_now();                                                                                        \
        tls_timing = true;                                                                                             \
        pd_gemm_ep_##T(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, ep, ep_arg);                              \
        tls_timing = false;                                                                                            \
        g_prof_acc.seconds += prof_now() - t0;                                                                         \
        g_prof_acc.flops += 2.0 * (double)m * (double)n * (double)k;                                                   \
        g_prof_acc.calls++;                                                                                            \
        return;                                                                                                        \
      }                                                                                                                \
    }                                                                                                                  \
    if (m == 1 && k > 0) {                                                                                             \
      gemv_##T(ta, tb, n, k, alpha, a, lda, b, ldb, beta, c);                                                          \
      if (ep) ep(ep_arg, c, ldc, 0, 1, 0, n);                                                                          \
      return;                                                                                                          \
    }                                                                                                                  \
    double work = (double)m * (double)n * (double)k;                                                                   \
    /* split the side whose other operand is smaller (each part packs all of it) */                                    \
    bool by_rows = n < m;                                                                                              \
    int64_t unit = split_unit(dt, by_rows);                                                                            \
    int parts = work < PD_GEMM_SERIAL_BELOW ? 1 : pd_parallel_parts(by_rows ? m : n, unit);                            \
    if (parts <= 1) {                                                                                                  \
      gemm_one_##T(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);                                              \
      if (ep) ep(ep_arg, c, ldc, 0, m, 0, n);                                                                          \
      return;                                                                                                          \
    }                                                                                                                  \
    gemm_job_##T j = {ta, tb, by_rows, unit, m, n, k, lda, ldb, ldc, alpha, beta, a, b, c, ep, ep_arg};                \
    pd_parallel_run(parts, gemm_part_##T, &j);                                                                         \
  }
GEMM(float, bli_sgemm_ex, BLIS_FLOAT)
GEMM(double, bli_dgemm_ex, BLIS_DOUBLE)

void pd_ukr_float(pd_ukr *u) {
  start_blis();
  cntx_t *cntx = bli_gks_query_cntx();
  u->mr = (int64_t)bli_cntx_get_blksz_max_dt(BLIS_FLOAT, BLIS_MR, cntx); /* the packing sizes */
  u->nr = (int64_t)bli_cntx_get_blksz_max_dt(BLIS_FLOAT, BLIS_NR, cntx);
  u->fn = (void (*)(void))bli_cntx_get_l3_nat_ukr_dt(BLIS_FLOAT, BLIS_GEMM_UKR, cntx);
}

void pd_ukr_run_float(const pd_ukr *u, int64_t k, const float *a, const float *b, float *c) {
  float one = 1, zero = 0;
  auxinfo_t aux;
  memset(&aux, 0, sizeof aux);
  bli_auxinfo_set_next_a((void *)a, &aux);
  bli_auxinfo_set_next_b((void *)b, &aux);
  sgemm_ukr_ft fn = (sgemm_ukr_ft)(void (*)(void))u->fn;
  fn(u->mr, u->nr, k, &one, (float *)a, (float *)b, &zero, c, 1, u->mr, &aux, bli_gks_query_cntx());
}
