/* bench_gemm.c — the GEMM-bound limit of fashion_mlp training: times bare
 * BLIS sgemm (bli_sgemm_ex with THREADS threads of BLIS's own, the
 * transposes ops/fc.c uses; with a 4th argument `pd`, through pd_gemm_float
 * instead: one-thread BLIS products split on our worker pool, as the
 * runner calls them) on the matrix products of one training step of a 784-512-256-10 MLP at
 * batch B: forward X·W per layer, dW = Xᵀ·dY per layer, dX = dY·Wᵀ for
 * layers 2 and 3 (the first layer's input needs no gradient). Prints, per
 * shape, the median GFLOP/s (each shape repeated, its operands warm in
 * cache) and the sum of those medians; then one line per run with the time
 * of the whole set of products one after another (one "step" of GEMMs,
 * each product's operands its own, as cold as the set's size makes them).
 *   bench_gemm THREADS BATCH RUNS [pd] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <blis.h>

#include "cpu/blas.h"
#include "cpu/blisarch.h"
#include "core/tensor.h"
#include "cpu/parallel.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct shape {
  const char *what;
  bool ta, tb;
  int64_t m, n, k;
  float *a, *b, *c;
} shape;

static float *buf(int64_t n) {
  float *p = malloc(sizeof *p * (size_t)n);
  if (!p) exit(1);
  for (int64_t i = 0; i < n; i++) p[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
  return p;
}

static bool through_pd;
static int bare_threads;

static void gemm(const shape *s) {
  /* row-major: A is m×k (k×m when transposed), B is k×n (n×k when transposed) */
  int64_t lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
  if (through_pd) {
    pd_gemm_float(s->ta, s->tb, s->m, s->n, s->k, 1, s->a, lda, s->b, ldb, 0, s->c, s->n);
    return;
  }
  float one = 1, zero = 0;
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads(bare_threads, &rntm);
  bli_sgemm_ex(s->ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, s->tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, s->m, s->n, s->k,
               &one, s->a, lda, 1, s->b, ldb, 1, &zero, s->c, s->n, 1, NULL, &rntm);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  pd_blis_arch_lock(); /* BLIS's kernels as paddle-run picks them for large products */
  if (argc != 4 && !(argc == 5 && strcmp(argv[4], "pd") == 0)) {
    fprintf(stderr, "usage: bench_gemm THREADS BATCH RUNS [pd]\n");
    return 2;
  }
  int threads = atoi(argv[1]), runs = atoi(argv[3]);
  through_pd = argc == 5;
  bare_threads = threads;
  int64_t B = atoll(argv[2]);
  pd_set_threads(threads);
  const int64_t dims[] = {784, 512, 256, 10};
  shape s[8];
  int ns = 0;
  for (int l = 0; l < 3; l++) {
    int64_t in = dims[l], out = dims[l + 1];
    char *w = malloc(64);
    snprintf(w, 64, "fwd  [%lld,%lld]x[%lld,%lld]", (long long)B, (long long)in, (long long)in, (long long)out);
    s[ns++] = (shape){w, false, false, B, out, in, buf(B * in), buf(in * out), buf(B * out)};
    w = malloc(64);
    snprintf(w, 64, "dW   [%lld,%lld]T x[%lld,%lld]", (long long)B, (long long)in, (long long)B, (long long)out);
    s[ns++] = (shape){w, true, false, in, out, B, buf(B * in), buf(B * out), buf(in * out)};
    if (l > 0) {
      w = malloc(64);
      snprintf(w, 64, "dX   [%lld,%lld]x[%lld,%lld]T", (long long)B, (long long)out, (long long)in, (long long)out);
      s[ns++] = (shape){w, false, true, B, in, out, buf(B * out), buf(in * out), buf(B * in)};
    }
  }
  double flops_step = 0;
  for (int i = 0; i < ns; i++) flops_step += 2.0 * (double)s[i].m * (double)s[i].n * (double)s[i].k;
  /* warm-up: BLIS's thread pool and packing buffers */
  for (int w = 0; w < 3; w++)
    for (int i = 0; i < ns; i++) gemm(&s[i]);
  /* per shape: enough repetitions for ~20 ms, `runs` times, median; the
   * medians' sum is the set of products each run in a warm cache */
  double hot_sum = 0;
  for (int i = 0; i < ns; i++) {
    int reps = 1;
    for (;;) {
      double t0 = now();
      for (int r = 0; r < reps; r++) gemm(&s[i]);
      if (now() - t0 > 0.02 || reps > (1 << 20)) break;
      reps *= 2;
    }
    double *t = malloc(sizeof *t * (size_t)runs);
    for (int r = 0; r < runs; r++) {
      double t0 = now();
      for (int k = 0; k < reps; k++) gemm(&s[i]);
      t[r] = (now() - t0) / reps;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp);
    double f = 2.0 * (double)s[i].m * (double)s[i].n * (double)s[i].k;
    printf("# shape %s | %.2f %.2f %.2f GFLOP/s (median min max)\n", s[i].what, f / t[runs / 2] * 1e-9,
           f / t[runs - 1] * 1e-9, f / t[0] * 1e-9);
    hot_sum += t[runs / 2];
    free(t);
  }
  printf("# flops_per_step %.0f batch %lld\n", flops_step, (long long)B);
  printf("# shapes_warm_seconds %.9f\n", hot_sum);
  /* the whole set of products of one step, `runs` times */
  int reps = 1;
  for (;;) {
    double t0 = now();
    for (int r = 0; r < reps; r++)
      for (int i = 0; i < ns; i++) gemm(&s[i]);
    if (now() - t0 > 0.05) break;
    reps *= 2;
  }
  for (int r = 0; r < runs; r++) {
    double t0 = now();
    for (int k = 0; k < reps; k++)
      for (int i = 0; i < ns; i++) gemm(&s[i]);
    printf("%.9f\n", (now() - t0) / reps);
    fflush(stdout);
  }
  return 0;
}
