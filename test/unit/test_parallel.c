/* test_parallel.c — the worker pool (lib/cpu/parallel.c) and the kernels that
 * split their work with it.
 *
 * Pool: every part of a job runs exactly once, with the job's part count,
 * on the caller and pool threads at once; a part that submits again runs
 * that job's parts itself; products inside a part are told to stay on one
 * thread; ranges of pd_parallel_for cover [0, n) once.
 *
 * Kernels: elementwise ops (activations, pooling, optimizer updates) give
 * the same bits with one thread and with two, on arrays long enough to be
 * split (convolution, whose split changes the summation order, has its own
 * test in test_op_conv2d.c). */
#include "cpu/blas.h"
#include "optest.h"
#include "cpu/parallel.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

typedef struct count_job {
  atomic_int calls[8];
  atomic_int bad_nparts;
  atomic_int inside;
  atomic_int arrived; /* parts that have started: each waits for all, so they overlap */
  int expect;
} count_job;

static void count_part(void *arg, int part, int nparts) {
  count_job *j = arg;
  atomic_fetch_add(&j->calls[part], 1);
  if (nparts != j->expect) atomic_fetch_add(&j->bad_nparts, 1);
  if (pd_parallel_inside()) atomic_fetch_add(&j->inside, 1);
  atomic_fetch_add(&j->arrived, 1);
  /* all parts run at once: none finishes before every one has started */
  while (atomic_load(&j->arrived) < nparts) sched_yield();
}

static void test_run_parts(void **state) {
  (void)state;
  for (int threads = 1; threads <= 4; threads++) {
    pd_set_threads(threads);
    for (int n = 1; n <= 6; n++) {
      count_job j = {.expect = n < threads ? n : threads};
      pd_parallel_run(n, count_part, &j);
      for (int p = 0; p < 8; p++) assert_int_equal(atomic_load(&j.calls[p]), p < j.expect ? 1 : 0);
      assert_int_equal(atomic_load(&j.bad_nparts), 0);
      assert_int_equal(atomic_load(&j.inside), j.expect > 1 ? j.expect : 0);
      assert_false(pd_parallel_inside());
    }
  }
  pd_set_threads(0);
}

typedef struct nest_job {
  atomic_int inner_calls;
  atomic_int bad;
} nest_job;

static void inner_part(void *arg, int part, int nparts) {
  nest_job *j = arg;
  (void)part;
  if (nparts != 2 || !pd_parallel_inside()) atomic_fetch_add(&j->bad, 1);
  atomic_fetch_add(&j->inner_calls, 1);
}

static void outer_part(void *arg, int part, int nparts) {
  (void)part, (void)nparts;
  nest_job *j = arg;
  if (pd_parallel_parts(1 << 30, 1) != 1) atomic_fetch_add(&j->bad, 1);
  pd_parallel_run(2, inner_part, j);
}

static void test_nested(void **state) {
  (void)state;
  pd_set_threads(2);
  nest_job j = {0};
  pd_parallel_run(2, outer_part, &j);
  assert_int_equal(atomic_load(&j.inner_calls), 4);
  assert_int_equal(atomic_load(&j.bad), 0);
  pd_set_threads(0);
}

typedef struct cover_job {
  atomic_int *hits;
} cover_job;

static void cover_range(void *arg, int64_t lo, int64_t hi) {
  cover_job *j = arg;
  for (int64_t i = lo; i < hi; i++) atomic_fetch_add(&j->hits[i], 1);
}

static void test_for_covers(void **state) {
  (void)state;
  pd_set_threads(3);
  const int64_t sizes[] = {0, 1, 7, 100, 1001};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int64_t grain = 1; grain <= 64; grain *= 8) {
      int64_t n = sizes[s];
      atomic_int *hits = calloc((size_t)n + 1, sizeof *hits);
      cover_job j = {hits};
      pd_parallel_for(n, grain, cover_range, &j);
      for (int64_t i = 0; i < n; i++) assert_int_equal(atomic_load(&hits[i]), 1);
      free(hits);
    }
  assert_int_equal(pd_parallel_parts(10, 4), 2);
  assert_int_equal(pd_parallel_parts(1000, 1), 3);
  assert_int_equal(pd_parallel_parts(3, 4), 1);
  pd_set_threads(0);
}

/* ---- kernels: one thread and two give the same bits ---- */

typedef struct op_case {
  const char *type;
  const char *const *attrs;
  int n_in, n_out;
} op_case;

/* Runs `type` on copies of ins with 1 and 2 threads; outputs must be identical. */
static void check_same_bits(const char *type, const char *const *attrs, pd_tensor *const *ins, int n_in, int n_out,
                            const int *out_aliases_in) {
  pd_tensor *res[2][OT_MAX] = {{0}};
  for (int run = 0; run < 2; run++) {
    pd_set_threads(run + 1);
    pd_tensor *in[OT_MAX] = {0}, *out[OT_MAX]; /* past n_in: slots left out */
    for (int k = 0; k < n_in; k++) {
      in[k] = ot_out();
      pd_tensor_copy(in[k], ins[k], NULL);
    }
    for (int k = 0; k < n_out; k++)
      out[k] = out_aliases_in && out_aliases_in[k] >= 0 ? in[out_aliases_in[k]] : ot_out();
    ot_run(type, attrs, in, NULL, out, NULL);
    for (int k = 0; k < n_out; k++) {
      res[run][k] = ot_out();
      pd_tensor_copy(res[run][k], out[k], NULL);
    }
    for (int k = 0; k < n_out; k++)
      if (!(out_aliases_in && out_aliases_in[k] >= 0)) ot_free(out[k]);
    for (int k = 0; k < n_in; k++) ot_free(in[k]);
  }
  pd_set_threads(0);
  for (int k = 0; k < n_out; k++) {
    size_t bytes = pd_tensor_bytes(res[0][k]);
    assert_true(bytes > 0);
    assert_int_equal(bytes, pd_tensor_bytes(res[1][k]));
    if (memcmp(pd_tensor_data(res[0][k]), pd_tensor_data(res[1][k]), bytes))
      fail_msg("%s output %d differs between one thread and two", type, k);
    ot_free(res[0][k]), ot_free(res[1][k]);
  }
}

/* A one-row product (batch-1 inference): every layout of A and B, against
 * a plain sum in double, on 1, 2 and 3 threads (a large matrix is split into
 * column blocks, each element one thread's whole sum) and twice on each
 * (lib/cpu/gemv.c walks the rows the other way on every call): the same bits in
 * all six. Shapes: n no multiple of the 16-float block or below it; k of
 * one block of rows, of several, of the most blocks (so longer ones), and
 * below one vector; beta 0 with NaN in C (C must not be read). */
static void test_gemv_split(void **state) {
  (void)state;
  const int64_t shapes[][2] = {{300, 1000}, {3001, 517}, {129, 33}, {5, 7}, {700, 16}}; /* k, n */
  for (int sh = 0; sh < 5; sh++) {
    const int64_t K = shapes[sh][0], N = shapes[sh][1];
    float *a = malloc(sizeof *a * (size_t)(K * 2)), *b = malloc(sizeof *b * (size_t)(K * N)), *c[6];
    for (int64_t i = 0; i < K * 2; i++) a[i] = (float)((i * 37) % 19) / 19.0f - 0.5f;
    for (int64_t i = 0; i < K * N; i++) b[i] = (float)((i * 101) % 23) / 23.0f - 0.5f;
    for (int t = 0; t < 6; t++) c[t] = malloc(sizeof(float) * (size_t)N);
    for (int beta = 0; beta < 3; beta += 2)
      for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
          /* A is [1,K] (lda K), or stored transposed as [K,1] with row stride 2 */
          int64_t lda = ta ? 2 : K, ldb = tb ? K : N;
          for (int t = 0; t < 6; t++) {
            pd_set_threads(t / 2 + 1);
            for (int64_t j = 0; j < N; j++) c[t][j] = beta ? 1.0f : NAN;
            pd_gemm_float(ta, tb, 1, N, K, 0.5f, a, lda, b, ldb, (float)beta, c[t], N);
          }
          for (int64_t j = 0; j < N; j++) {
            double want = beta;
            for (int64_t k = 0; k < K; k++)
              want += 0.5 * (double)a[ta ? k * 2 : k] * (double)(tb ? b[j * K + k] : b[k * N + j]);
            if (!(fabs(c[0][j] - want) <= 1e-5 * (1 + fabs(want)) * sqrt((double)K)))
              fail_msg("k %lld n %lld ta %d tb %d beta %d: c[%lld] = %.9g, want %.9g", (long long)K, (long long)N, ta,
                       tb, beta, (long long)j, c[0][j], want);
          }
          for (int t = 1; t < 6; t++) assert_memory_equal(c[0], c[t], sizeof(float) * (size_t)N);
        }
    pd_set_threads(0);
    for (int t = 0; t < 6; t++) free(c[t]);
    free(a), free(b);
  }
}

/* Products big enough for threads are split on the pool, by rows of C when
 * op(B) has fewer columns than C has rows, else by columns (lib/cpu/blas.c):
 * all four transposes, sizes that are no multiple of a block, alpha and
 * beta, against a double reference on 1, 2 and 3 threads, and the same bits
 * when run again with the same thread count. (Not across thread counts:
 * BLIS picks its small-matrix path by the size of each part.) */
static void test_gemm_split(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{300, 77, 129}, {45, 333, 90}, {129, 130, 131}}; /* m, n, k */
  for (int sh = 0; sh < 3; sh++) {
    const int64_t M = shapes[sh][0], N = shapes[sh][1], K = shapes[sh][2];
    float *a = malloc(sizeof *a * (size_t)(M * K)), *b = malloc(sizeof *b * (size_t)(K * N)), *c[3], *again;
    for (int64_t i = 0; i < M * K; i++) a[i] = (float)((i * 37) % 19) / 19.0f - 0.5f;
    for (int64_t i = 0; i < K * N; i++) b[i] = (float)((i * 101) % 23) / 23.0f - 0.5f;
    for (int t = 0; t < 3; t++) c[t] = malloc(sizeof(float) * (size_t)(M * N));
    again = malloc(sizeof(float) * (size_t)(M * N));
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        int64_t lda = ta ? M : K, ldb = tb ? K : N;
        for (int t = 0; t < 3; t++) {
          pd_set_threads(t + 1);
          for (int64_t i = 0; i < M * N; i++) c[t][i] = again[i] = (float)(i % 5);
          pd_gemm_float(ta, tb, M, N, K, 0.5f, a, lda, b, ldb, 2.0f, c[t], N);
          pd_gemm_float(ta, tb, M, N, K, 0.5f, a, lda, b, ldb, 2.0f, again, N);
          assert_memory_equal(c[t], again, sizeof(float) * (size_t)(M * N));
          for (int64_t i = 0; i < M; i += 7)
            for (int64_t j = 0; j < N; j++) {
              double want = 2.0 * (double)((i * N + j) % 5);
              for (int64_t k = 0; k < K; k++)
                want += 0.5 * (double)(ta ? a[k * M + i] : a[i * K + k]) * (double)(tb ? b[j * K + k] : b[k * N + j]);
              assert_true(fabs(c[t][i * N + j] - want) <= 1e-4 * (1 + fabs(want)));
            }
        }
      }
    for (int t = 0; t < 3; t++) free(c[t]);
    free(a), free(b), free(again);
  }
  pd_set_threads(0);
}

static void test_activations(void **state) {
  (void)state;
  const char *acts[] = {"relu", "sigmoid", "tanh"};
  for (int dt = 0; dt < 2; dt++) {
    pd_dtype t = dt ? PD_F64 : PD_F32;
    pd_tensor *x = ot_rand(t, 2, (int64_t[]){301, 1001}, 1, -3, 3, 0);
    pd_tensor *dy = ot_rand(t, 2, (int64_t[]){301, 1001}, 2, -1, 1, 0);
    for (int a = 0; a < 3; a++) {
      check_same_bits(acts[a], NULL, (pd_tensor *[]){x}, 1, 1, NULL);
      pd_tensor *y = ot_out();
      ot_run(acts[a], NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
      char grad[32];
      snprintf(grad, sizeof grad, "%s_grad", acts[a]);
      check_same_bits(grad, NULL, (pd_tensor *[]){x, y, dy}, 3, 1, NULL);
      ot_free(y);
    }
    ot_free(x), ot_free(dy);
  }
}

static void test_pooling(void **state) {
  (void)state;
  const char *const max2x2[] = {"ksize", "ints: [2, 2]", "strides", "ints: [2, 2]", NULL};
  const char *const max3[] = {"ksize", "ints: [3, 3]", "strides", "ints: [2, 1]", "paddings", "ints: [1, 1]", NULL};
  const char *const avg[] = {"pooling_type", "s: \"avg\"",   "ksize", "ints: [3, 2]", "strides", "ints: [2, 2]",
                             "paddings",     "ints: [1, 0]", NULL};
  const char *const *cases[] = {max2x2, max3, avg};
  for (int dt = 0; dt < 2; dt++) {
    pd_dtype t = dt ? PD_F64 : PD_F32;
    pd_tensor *x = ot_rand(t, 4, (int64_t[]){16, 12, 28, 27}, 3, -1, 1, 0);
    for (int k = 0; k < 3; k++) {
      check_same_bits("pool2d", cases[k], (pd_tensor *[]){x}, 1, 1, NULL);
      pd_tensor *y = ot_out();
      ot_run("pool2d", cases[k], (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
      pd_tensor *dy = ot_rand(t, 4, y->dims, 4, -1, 1, 0);
      check_same_bits("pool2d_grad", cases[k], (pd_tensor *[]){x, y, dy}, 3, 1, NULL);
      ot_free(y), ot_free(dy);
    }
    ot_free(x);
  }
}

static pd_tensor *scalar64(double v) {
  pd_tensor *t = ot_tensor(PD_F64, 1, (int64_t[]){1});
  pd_tensor_set(t, 0, v);
  return t;
}

static void test_optimizers(void **state) {
  (void)state;
  const char *const wd[] = {"weight_decay", "f: 0.01", NULL};
  const char *const nesterov[] = {"use_nesterov", "b: true", "weight_decay", "f: 0.01", NULL};
  for (int dt = 0; dt < 2; dt++) {
    pd_dtype t = dt ? PD_F64 : PD_F32;
    const int64_t dims[] = {257, 1003};
    pd_tensor *p = ot_rand(t, 2, dims, 5, -1, 1, 0), *g = ot_rand(t, 2, dims, 6, -1, 1, 0);
    pd_tensor *m = ot_rand(t, 2, dims, 7, -1, 1, 0), *v = ot_rand(t, 2, dims, 8, 0, 1, 0);
    pd_tensor *lr = scalar64(0.01), *step = scalar64(3);
    check_same_bits("sgd", wd, (pd_tensor *[]){p, g, lr}, 3, 1, NULL);
    check_same_bits("momentum", nesterov, (pd_tensor *[]){p, g, m, lr}, 4, 2, NULL);
    check_same_bits("momentum", nesterov, (pd_tensor *[]){p, g, m, lr}, 4, 2, (const int[]){0, 2}); /* in place */
    check_same_bits("adam", wd, (pd_tensor *[]){p, g, m, v, lr, step}, 6, 3, NULL);
    check_same_bits("adam", wd, (pd_tensor *[]){p, g, m, v, lr, step}, 6, 3, (const int[]){0, 2, 3});
    ot_free(p), ot_free(g), ot_free(m), ot_free(v), ot_free(lr), ot_free(step);
  }
}

/* scale and cast split long tensors in ranges on the pool: the same bits
 * on one thread and two, and every element right (a range left out would
 * show in both runs alike). */
static void test_elementwise(void **state) {
  (void)state;
  const int64_t dims[] = {301, 1001};
  const char *const after[] = {"scale", "f: 0.5", "bias", "f: -3", NULL};
  const char *const before[] = {"scale", "f: 0.5", "bias", "f: -3", "bias_after_scale", "b: false", NULL};
  for (int dt = 0; dt < 2; dt++) {
    pd_dtype t = dt ? PD_F64 : PD_F32;
    pd_tensor *x = ot_rand(t, 2, dims, 1, -3, 3, 0), *dy = ot_rand(t, 2, dims, 2, -1, 1, 0);
    check_same_bits("scale", after, (pd_tensor *[]){x}, 1, 1, NULL);
    check_same_bits("scale", before, (pd_tensor *[]){x}, 1, 1, NULL);
    pd_tensor *y = ot_out();
    pd_set_threads(2);
    ot_run("scale", before, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
    for (int64_t i = 0; i < pd_tensor_numel(x); i++) {
      double want = dt ? 0.5 * pd_tensor_get(x, i) + -1.5 : (double)(0.5f * (float)pd_tensor_get(x, i) + -1.5f);
      if (pd_tensor_get(y, i) != want)
        fail_msg("scale element %lld: %.17g, want %.17g", (long long)i, pd_tensor_get(y, i), want);
    }
    pd_set_threads(0);
    check_same_bits("scale_grad", after, (pd_tensor *[]){x, y, dy}, 3, 1, NULL);
    ot_free(y), ot_free(x), ot_free(dy);
  }
  const char *const to_f32[] = {"dtype", "s: \"float32\"", NULL}, *const to_f64[] = {"dtype", "s: \"float64\"", NULL};
  const char *const to_i32[] = {"dtype", "s: \"int32\"", NULL};
  pd_tensor *u8 = ot_tensor(PD_U8, 2, dims), *f = ot_rand(PD_F32, 2, dims, 3, -1e3, 1e3, 0);
  for (int64_t i = 0; i < pd_tensor_numel(u8); i++) pd_tensor_set(u8, i, (double)((i * 7) % 256));
  check_same_bits("cast", to_f32, (pd_tensor *[]){u8}, 1, 1, NULL);
  check_same_bits("cast", to_f64, (pd_tensor *[]){f}, 1, 1, NULL);
  check_same_bits("cast", to_f32, (pd_tensor *[]){f}, 1, 1, NULL); /* the same dtype: a copy */
  check_same_bits("cast", to_i32, (pd_tensor *[]){f}, 1, 1, NULL);
  pd_tensor *y = ot_out();
  pd_set_threads(2);
  ot_run("cast", to_f32, (pd_tensor *[]){u8}, NULL, (pd_tensor *[]){y}, NULL);
  assert_int_equal(y->dtype, PD_F32);
  for (int64_t i = 0; i < pd_tensor_numel(u8); i++) assert_true(pd_tensor_get(y, i) == (double)((i * 7) % 256));
  pd_set_threads(0);
  ot_free(y), ot_free(u8), ot_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run_parts),  cmocka_unit_test(test_nested),     cmocka_unit_test(test_for_covers),
      cmocka_unit_test(test_gemv_split), cmocka_unit_test(test_gemm_split), cmocka_unit_test(test_activations),
      cmocka_unit_test(test_pooling),    cmocka_unit_test(test_optimizers), cmocka_unit_test(test_elementwise),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
