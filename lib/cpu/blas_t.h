/* blas_t.h — blas.c's products for one element type T (base/tmpl.h): blas.c
 * includes this file once for float and once for double, with BLIS's typed
 * functions named PD_BLI_GEMV_T, PD_BLI_GEMM_T and its type PD_BLI_DT_T. */

static void PD_T(gemv_row)(bool ta, bool tb, int64_t n, int64_t k, T alpha, const T *a, int64_t lda, const T *b,
                           int64_t ldb, T beta, T *c) {
  int64_t incx = ta ? lda : 1;
  if (tb) { /* op(B) = B^T, B is [n, k]: c = B x */
    if (!PD_T(own_dots)(n, k, alpha, a, incx, b, ldb, beta, c))
      PD_T(PD_BLI_GEMV)(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, n, k, &alpha, (T *)b, ldb, 1, (T *)a, incx, &beta, c, 1);
  } else if (!PD_T(own_rows)(n, k, alpha, a, incx, b, ldb, beta, c)) /* B is [k, n]: c = B^T x */
    PD_T(PD_BLI_GEMV)(BLIS_TRANSPOSE, BLIS_NO_CONJUGATE, k, n, &alpha, (T *)b, ldb, 1, (T *)a, incx, &beta, c, 1);
}

typedef struct PD_T(gemv_job) {
  bool ta, tb;
  int64_t n, k, lda, ldb;
  T alpha, beta;
  const T *a, *b;
  T *c;
} PD_T(gemv_job);

static void PD_T(gemv_part)(void *arg, int part, int nparts) {
  const PD_T(gemv_job) *j = arg;
  const int64_t line = 64 / (int64_t)sizeof(T), blocks = (j->n + line - 1) / line;
  int64_t lo, hi;
  pd_parallel_range(blocks, part, nparts, &lo, &hi);
  lo *= line, hi *= line;
  if (hi > j->n) hi = j->n;
  if (lo >= hi) return;
  const T *b = j->tb ? j->b + lo * j->ldb : j->b + lo; /* rows of B [n,k], or columns of B [k,n] */
  PD_T(gemv_row)(j->ta, j->tb, hi - lo, j->k, j->alpha, j->a, j->lda, b, j->ldb, j->beta, j->c + lo);
}

/* The one-row product, split by columns (PD_GEMV_SPLIT_FROM) */
static void PD_T(gemv)(bool ta, bool tb, int64_t n, int64_t k, T alpha, const T *a, int64_t lda, const T *b,
                       int64_t ldb, T beta, T *c) {
  int parts = n * k >= PD_GEMV_SPLIT_FROM ? pd_parallel_parts(n, 64 / (int64_t)sizeof(T)) : 1;
  if (parts <= 1) {
    PD_T(gemv_row)(ta, tb, n, k, alpha, a, lda, b, ldb, beta, c);
    return;
  }
  PD_T(gemv_job) j = {ta, tb, n, k, lda, ldb, alpha, beta, a, b, c};
  pd_parallel_run(parts, PD_T(gemv_part), &j);
}

/* A product big enough for threads is split on the worker pool, not by BLIS:
 * BLIS 0.9 starts and joins its threads in every call, and a thread it starts
 * often waits on the caller's core for the scheduler's next balancing tick,
 * many times a product's own time. The pool's threads are already running. The
 * rows of C (or its columns: whichever leaves the smaller operand to be packed
 * by every part) are split into blocks (split_unit apart), one per part, each
 * a one-thread BLIS product over the whole K: every element of C is one part's
 * sum, in BLIS's one-thread order. */
typedef struct PD_T(gemm_job) {
  bool ta, tb, by_rows;
  int64_t unit, m, n, k, lda, ldb, ldc;
  T alpha, beta;
  const T *a, *b;
  T *c;
  pd_gemm_epilogue ep;
  void *ep_arg;
} PD_T(gemm_job);

static void PD_T(gemm_one)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t lda,
                           const T *b, int64_t ldb, T beta, T *c, int64_t ldc) {
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads(1, &rntm);
  if (pd_blis_native(ta, tb, m, n, k)) bli_rntm_disable_l3_sup(&rntm);
  PD_T(PD_BLI_GEMM)
  (ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, k, &alpha, (T *)a, lda, 1,
   (T *)b, ldb, 1, &beta, c, ldc, 1, NULL, &rntm);
}

static void PD_T(gemm_part)(void *arg, int part, int nparts) {
  const PD_T(gemm_job) *j = arg;
  const int64_t unit = j->unit, total = j->by_rows ? j->m : j->n;
  int64_t lo, hi;
  pd_parallel_range((total + unit - 1) / unit, part, nparts, &lo, &hi);
  lo *= unit, hi *= unit;
  if (hi > total) hi = total;
  if (lo >= hi) return;
  if (j->by_rows) { /* rows lo..hi of op(A) and of C */
    PD_T(gemm_one)
    (j->ta, j->tb, hi - lo, j->n, j->k, j->alpha, j->ta ? j->a + lo : j->a + lo * j->lda, j->lda, j->b, j->ldb, j->beta,
     j->c + lo * j->ldc, j->ldc);
    if (j->ep) j->ep(j->ep_arg, j->c + lo * j->ldc, j->ldc, lo, hi - lo, 0, j->n);
  } else { /* columns lo..hi of op(B) and of C */
    PD_T(gemm_one)
    (j->ta, j->tb, j->m, hi - lo, j->k, j->alpha, j->a, j->lda, j->tb ? j->b + lo * j->ldb : j->b + lo, j->ldb, j->beta,
     j->c + lo, j->ldc);
    if (j->ep) j->ep(j->ep_arg, j->c + lo, j->ldc, 0, j->m, lo, hi - lo);
  }
}

void PD_T(pd_gemm)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t lda, const T *b,
                   int64_t ldb, T beta, T *c, int64_t ldc) {
  PD_T(pd_gemm_ep)(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, NULL);
}

void PD_T(pd_gemm_ep)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t lda, const T *b,
                      int64_t ldb, T beta, T *c, int64_t ldc, pd_gemm_epilogue ep, void *ep_arg) {
  if (m == 0 || n == 0) return;
  start_blis();
  if (!tls_timing && __atomic_load_n(&g_prof, __ATOMIC_RELAXED)) {
    if (pd_parallel_inside()) {
      __atomic_add_fetch(&g_prof_acc.calls_in_parts, 1, __ATOMIC_RELAXED);
    } else {
      double t0 = prof_now();
      tls_timing = true;
      PD_T(pd_gemm_ep)(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, ep, ep_arg);
      tls_timing = false;
      g_prof_acc.seconds += prof_now() - t0;
      g_prof_acc.flops += 2.0 * (double)m * (double)n * (double)k;
      g_prof_acc.calls++;
      return;
    }
  }
  if (m == 1 && k > 0) {
    PD_T(gemv)(ta, tb, n, k, alpha, a, lda, b, ldb, beta, c);
    if (ep) ep(ep_arg, c, ldc, 0, 1, 0, n);
    return;
  }
  double work = (double)m * (double)n * (double)k;
  /* split the side whose other operand is smaller (each part packs all of it) */
  bool by_rows = n < m;
  int64_t unit = split_unit(PD_T(PD_BLI_DT), by_rows);
  int parts = work < PD_GEMM_SERIAL_BELOW ? 1 : pd_parallel_parts(by_rows ? m : n, unit);
  if (parts <= 1) {
    PD_T(gemm_one)(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (ep) ep(ep_arg, c, ldc, 0, m, 0, n);
    return;
  }
  PD_T(gemm_job) j = {ta, tb, by_rows, unit, m, n, k, lda, ldb, ldc, alpha, beta, a, b, c, ep, ep_arg};
  pd_parallel_run(parts, PD_T(gemm_part), &j);
}
