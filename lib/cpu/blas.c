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

#include "base/tmpl.h"
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

bool pd_blas_profiling(void) { return __atomic_load_n(&g_prof, __ATOMIC_RELAXED); }

void pd_blas_profile_add(double seconds, double flops) {
  g_prof_acc.seconds += seconds;
  g_prof_acc.flops += flops;
  g_prof_acc.calls++;
}

void pd_blas_profile_count_in_part(void) { __atomic_add_fetch(&g_prof_acc.calls_in_parts, 1, __ATOMIC_RELAXED); }

double pd_blas_now(void) { return prof_now(); }

/* c[0, :] = alpha op(A)[0, :] op(B) + beta c[0, :]. With B [k, n] (the fc
 * layer's weights) the float product is lib/cpu/gemv.c's where the CPU has
 * AVX-512 or AVX2 with FMA (own_rows: false where it has neither, and for
 * double). */
static bool own_rows_float(int64_t n, int64_t k, float alpha, const float *x, int64_t incx, const float *b, int64_t ldb,
                           float beta, float *c) {
  return pd_gemv_rows_float(n, k, alpha, x, incx, b, ldb, beta, c);
}
/* c = alpha B x + beta c with B [n, k] (an RNN's recurrent weights, a
 * product with a transposed right operand): lib/cpu/gemv.c's dot form,
 * where x is contiguous and the CPU has AVX-512 or AVX2 with FMA. */
static bool own_dots_float(int64_t n, int64_t k, float alpha, const float *x, int64_t incx, const float *b, int64_t ldb,
                           float beta, float *c) {
  return incx == 1 && pd_gemv_dots_float(n, k, alpha, x, b, ldb, beta, c);
}
static bool own_dots_double(int64_t n, int64_t k, double alpha, const double *x, int64_t incx, const double *b,
                            int64_t ldb, double beta, double *c) {
  (void)n, (void)k, (void)alpha, (void)x, (void)incx, (void)b, (void)ldb, (void)beta, (void)c;
  return false;
}
static bool own_rows_double(int64_t n, int64_t k, double alpha, const double *x, int64_t incx, const double *b,
                            int64_t ldb, double beta, double *c) {
  (void)n, (void)k, (void)alpha, (void)x, (void)incx, (void)b, (void)ldb, (void)beta, (void)c;
  return false;
}

/* A matrix-vector product streams the whole matrix once and is bound by how
 * fast one core reads it from cache; two cores read about twice as fast. So
 * with threads and a matrix of at least PD_GEMV_SPLIT_FROM elements, the
 * outputs are split into column blocks (64 bytes apart), one per part; each
 * element is still one thread's whole sum, so the result does not depend on
 * the split. */
#define PD_GEMV_SPLIT_FROM ((int64_t)1 << 16)

/* Parts split C at multiples of the micro-kernel's tile along the split side
 * (MR x NR), so the parts' tiles line up with those of the unsplit product and
 * no part ends in a partial tile. BLIS computes a row-stored C through its
 * transpose when the micro-kernel prefers column-stored C (the AVX-512 'skx'
 * one, 32 x 12): C's columns then run along MR. (lcm(MR, NR), right either
 * way, splits unevenly: 256 columns into 192 + 64.) The bits still differ
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

/* Whether a product goes to BLIS's native path (packed A and B, its
 * micro-kernel) rather than the small-matrix ("sup") path BLIS picks by its
 * thresholds (any dim under a few hundred). With B transposed, sup runs
 * dot-product kernels that reached half of native's rate or less; timed on
 * an AMD EPYC Zen 3 (BLIS 'zen3', one thread, each the best of 20 runs or
 * more), sup against native in GFLOP/s: the fused LSTM's input projection
 * (1792 x 512 x 28) 24 and 73, the char LM's (2048 x 1024 x 64) 47 and 82,
 * a Winograd dX (3136 x 64 x 64) 48 and 75, fashion_cnn's conv dW (800 x 64
 * x 1568) 71 and 81, fashion_mlp's dX2 at batch 256 77 and 92 (at batch
 * 64: 79 and 78). With A transposed, native is ahead once C is 128 by 128
 * and the shared dim long: the LSTM's dR (512 x 128 x 1792) 57 and 82, the
 * hand-written cell's stacked dW (156 x 128 x 1792) 70 and 86. Elsewhere
 * sup stays: untransposed products of these nets' shapes ran as fast or
 * faster on it (a conv's 64 x 1568 x 800: 86 and 76), and so does any with
 * a side of C under 64 (a 10-class layer). Shapes alone decide, so a
 * product's bits do not change from run to run. */
static bool pd_blis_native(bool ta, bool tb, int64_t m, int64_t n, int64_t k) {
  if (m < 64 || n < 64) return false;
  return (tb && !ta) || (ta && !tb && m >= 128 && n >= 128 && k >= 512);
}

/* BLIS's typed functions and type, for the template. */
#define PD_BLI_GEMV_float bli_sgemv
#define PD_BLI_GEMV_double bli_dgemv
#define PD_BLI_GEMM_float bli_sgemm_ex
#define PD_BLI_GEMM_double bli_dgemm_ex
#define PD_BLI_DT_float BLIS_FLOAT
#define PD_BLI_DT_double BLIS_DOUBLE

/* gemv, the split GEMM and pd_gemm_T, pd_gemm_ep_T: blas_t.h. */
#define T float
#include "cpu/blas_t.h"
#undef T
#define T double
#include "cpu/blas_t.h"
#undef T

void pd_ukr_float(pd_ukr *u) {
  start_blis();
  cntx_t *cntx = bli_gks_query_cntx();
  u->mr = (int64_t)bli_cntx_get_blksz_max_dt(BLIS_FLOAT, BLIS_MR, cntx); /* the packing sizes */
  u->nr = (int64_t)bli_cntx_get_blksz_max_dt(BLIS_FLOAT, BLIS_NR, cntx);
  u->fn = (void (*)(void))bli_cntx_get_l3_nat_ukr_dt(BLIS_FLOAT, BLIS_GEMM_UKR, cntx);
  u->cntx = cntx;
}

void pd_ukr_run_ex_float(const pd_ukr *u, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float beta,
                         float *c, int64_t rs, int64_t cs) {
  float one = 1;
  auxinfo_t aux;
  memset(&aux, 0, sizeof aux);
  bli_auxinfo_set_next_a((void *)a, &aux);
  bli_auxinfo_set_next_b((void *)b, &aux);
  sgemm_ukr_ft fn = (sgemm_ukr_ft)(void (*)(void))u->fn;
  fn(m, n, k, &one, (float *)a, (float *)b, &beta, c, rs, cs, &aux, (cntx_t *)u->cntx);
}

void pd_ukr_run_float(const pd_ukr *u, int64_t k, const float *a, const float *b, float *c) {
  pd_ukr_run_ex_float(u, u->mr, u->nr, k, a, b, 0, c, 1, u->mr);
}
