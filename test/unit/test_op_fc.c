/* test_op_fc.c — fc: Out[i,j] = act(sum_k X[i,k] W[k,j] + B[j]), checked
 * against a plain float64 loop, in float32 and float64, for batch sizes
 * 1, 3, 17, 129; then its gradients against finite differences. */
#include "optest.h"
#include "cpu/parallel.h"

static double act_ref(const char *act, double v) {
  if (!strcmp(act, "relu")) return v > 0 ? v : 0;
  if (!strcmp(act, "sigmoid")) return 1 / (1 + exp(-v));
  if (!strcmp(act, "tanh")) return tanh(v);
  return v;
}

static void check_forward(pd_dtype dt, int64_t n, int64_t k, int64_t m, const char *act, bool bias) {
  pd_tensor *x = ot_rand(dt, 2, (int64_t[]){n, k}, 1, -1, 1, 0);
  pd_tensor *w = ot_rand(dt, 2, (int64_t[]){k, m}, 2, -1, 1, 0);
  pd_tensor *b = bias ? ot_rand(dt, 1, (int64_t[]){m}, 3, -1, 1, 0) : NULL;
  pd_tensor *y = ot_out();
  char size[32], acts[32];
  snprintf(size, sizeof size, "i: %lld", (long long)m);
  snprintf(acts, sizeof acts, "s: \"%s\"", act);
  const char *attrs[] = {"size", size, "act", acts, NULL};
  ot_run("fc", attrs, (pd_tensor *[]){x, w, b}, NULL, (pd_tensor *[]){y}, NULL);
  assert_int_equal(y->ndim, 2);
  assert_int_equal(y->dims[0], n);
  assert_int_equal(y->dims[1], m);
  double *ref = malloc(sizeof(double) * (size_t)(n * m));
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) {
      double s = b ? pd_tensor_get(b, j) : 0;
      for (int64_t q = 0; q < k; q++) s += pd_tensor_get(x, i * k + q) * pd_tensor_get(w, q * m + j);
      ref[i * m + j] = act_ref(act, s);
    }
  ot_assert_close(y, ref, n * m, dt == PD_F32 ? 1e-5 : 1e-12);
  free(ref);
  ot_free(x), ot_free(w), ot_free(b), ot_free(y);
}

static void test_forward_sizes(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++) {
    check_forward(PD_F32, rows[r], 7, 5, "none", true);
    check_forward(PD_F64, rows[r], 7, 5, "relu", true);
    check_forward(PD_F32, rows[r], 33, 9, "sigmoid", false);
    check_forward(PD_F64, rows[r], 4, 3, "tanh", true);
  }
}

/* X of rank 4 is flattened to [N, C*H*W]; W's shape is inferred. */
static void test_flatten_and_param_inference(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 4, (int64_t[]){2, 3, 2, 2}, 1, -1, 1, 0);
  pd_tensor w, *y = ot_out();
  pd_tensor_init(&w, PD_F32);
  /* shape of W unknown: infer only (no run) via a declared shape instead */
  pd_tensor *wd = ot_rand(PD_F32, 2, (int64_t[]){12, 4}, 2, -1, 1, 0);
  const char *attrs[] = {"size", "i: 4", NULL};
  ot_run("fc", attrs, (pd_tensor *[]){x, wd, NULL}, NULL, (pd_tensor *[]){y}, NULL);
  assert_int_equal(y->dims[1], 4);
  ot_free(x), ot_free(wd), ot_free(y);
  (void)w;
}

static void test_bad_weight_shape(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){2, 5}, 1, -1, 1, 0);
  pd_tensor *w = ot_rand(PD_F32, 2, (int64_t[]){4, 3}, 2, -1, 1, 0);
  pd_tensor *y = ot_out();
  const char *attrs[] = {"size", "i: 3", NULL};
  const char *msg = ot_run_fail("fc", attrs, (pd_tensor *[]){x, w, NULL}, NULL, (pd_tensor *[]){y}, NULL);
  assert_non_null(strstr(msg, "has shape [4, 3], but the op needs [5, 3]"));
  ot_free(x), ot_free(w), ot_free(y);
}

static void test_bad_size_attr(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){2, 5}, 1, -1, 1, 0), *y = ot_out();
  const char *attrs[] = {"size", "i: -3", NULL};
  const char *msg = ot_run_fail("fc", attrs, (pd_tensor *[]){x, NULL, NULL}, NULL, (pd_tensor *[]){y}, NULL);
  assert_string_equal(msg, "attribute \"size\" must be > 0, got -3");
  ot_free(x), ot_free(y);
}

static void test_gradients(void **state) {
  (void)state;
  const char *acts[] = {"none", "relu", "sigmoid", "tanh"};
  for (int a = 0; a < 4; a++) {
    char acts_attr[32];
    snprintf(acts_attr, sizeof acts_attr, "s: \"%s\"", acts[a]);
    const char *attrs[] = {"size", "i: 4", "act", acts_attr, NULL};
    pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){3, 5}, 11, -1, 1, 0.05);
    pd_tensor *w = ot_rand(PD_F64, 2, (int64_t[]){5, 4}, 12, -1, 1, 0.05);
    pd_tensor *b = ot_rand(PD_F64, 1, (int64_t[]){4}, 13, -1, 1, 0.05);
    ot_gradcheck("fc", attrs, (pd_tensor *[]){x, w, b}, 3, 1);
    /* without bias */
    ot_gradcheck("fc", attrs, (pd_tensor *[]){x, w, NULL}, 3, 1);
    ot_free(x), ot_free(w), ot_free(b);
  }
}

/* Large enough to be split on the worker pool (lib/cpu/blas.c: by rows of Out
 * when it has fewer columns than rows, else by columns), where each part adds
 * the bias and applies the activation to its own block (the product's
 * epilogue) and the backward's dPre and dB are split by columns: Out and the
 * gradients against float64 loops, each element to 1e-5 of the size of its
 * terms (sums of 65 products cancel). */
static void assert_near(const pd_tensor *t, const double *ref, const double *size, int64_t n, const char *what) {
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(pd_tensor_get(t, i) - ref[i]) <= 1e-5 * (1 + size[i])))
      fail_msg("%s[%lld] = %.9g, want %.9g", what, (long long)i, pd_tensor_get(t, i), ref[i]);
}

static void check_split(pd_dtype dt, int64_t n, int64_t k, int64_t m, const char *act, bool bias) {
  pd_tensor *x = ot_rand(dt, 2, (int64_t[]){n, k}, 21, -1, 1, 0);
  pd_tensor *w = ot_rand(dt, 2, (int64_t[]){k, m}, 22, -1, 1, 0);
  pd_tensor *b = bias ? ot_rand(dt, 1, (int64_t[]){m}, 23, -1, 1, 0) : NULL;
  pd_tensor *dy = ot_rand(dt, 2, (int64_t[]){n, m}, 24, -1, 1, 0), *y = ot_out();
  char size[32], acts[32];
  snprintf(size, sizeof size, "i: %lld", (long long)m);
  snprintf(acts, sizeof acts, "s: \"%s\"", act);
  const char *attrs[] = {"size", size, "act", acts, NULL};
  ot_run("fc", attrs, (pd_tensor *[]){x, w, b}, NULL, (pd_tensor *[]){y}, NULL);
  pd_tensor *d[3] = {ot_out(), ot_out(), bias ? ot_out() : NULL}; /* no B: no dB */
  for (int run = 0; run < 2; run++) /* the second into the first's outputs: overwritten, not added to */
    ot_run("fc_grad", attrs, (pd_tensor *[]){x, w, b, y, dy}, NULL, d, NULL);
  double *ry = malloc(sizeof(double) * (size_t)(n * m)), *sy = malloc(sizeof(double) * (size_t)(n * m));
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) {
      double v = b ? pd_tensor_get(b, j) : 0, a = fabs(v);
      for (int64_t q = 0; q < k; q++) {
        double t = pd_tensor_get(x, i * k + q) * pd_tensor_get(w, q * m + j);
        v += t, a += fabs(t);
      }
      ry[i * m + j] = act_ref(act, v), sy[i * m + j] = a;
    }
  assert_near(y, ry, sy, n * m, "Out");
  /* gradients, with act' taken at Out as computed (as the op does) */
  double *pre = malloc(sizeof(double) * (size_t)(n * m));
  double *rdx = calloc((size_t)(n * k), sizeof(double)), *sdx = calloc((size_t)(n * k), sizeof(double));
  double *rdw = calloc((size_t)(k * m), sizeof(double)), *sdw = calloc((size_t)(k * m), sizeof(double));
  double *rdb = calloc((size_t)m, sizeof(double)), *sdb = calloc((size_t)m, sizeof(double));
  for (int64_t i = 0; i < n * m; i++) {
    double yv = pd_tensor_get(y, i), g = pd_tensor_get(dy, i);
    pre[i] = !strcmp(act, "relu") ? (yv > 0 ? g : 0) : !strcmp(act, "sigmoid") ? g * yv * (1 - yv) : g;
  }
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) {
      double p = pre[i * m + j];
      rdb[j] += p, sdb[j] += fabs(p);
      for (int64_t q = 0; q < k; q++) {
        double xw = pd_tensor_get(x, i * k + q) * p, pw = p * pd_tensor_get(w, q * m + j);
        rdw[q * m + j] += xw, sdw[q * m + j] += fabs(xw);
        rdx[i * k + q] += pw, sdx[i * k + q] += fabs(pw);
      }
    }
  assert_near(d[0], rdx, sdx, n * k, "dX");
  assert_near(d[1], rdw, sdw, k * m, "dW");
  if (bias) assert_near(d[2], rdb, sdb, m, "dB");
  free(ry), free(sy), free(pre), free(rdx), free(sdx), free(rdw), free(sdw), free(rdb), free(sdb);
  for (int q = 0; q < 3; q++) ot_free(d[q]);
  ot_free(x), ot_free(w), ot_free(b), ot_free(dy), ot_free(y);
}

static void test_split(void **state) {
  (void)state;
  for (int t = 1; t <= 3; t++) {
    pd_set_threads(t);
    check_split(PD_F32, 600, 65, 150, "relu", true);    /* split by rows */
    check_split(PD_F32, 200, 65, 400, "sigmoid", true); /* by columns */
    check_split(PD_F32, 200, 65, 400, "none", false);
    check_split(PD_F64, 600, 65, 150, "relu", false);
    check_split(PD_F64, 200, 65, 400, "none", true);
  }
  pd_set_threads(0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward_sizes),    cmocka_unit_test(test_flatten_and_param_inference),
      cmocka_unit_test(test_bad_weight_shape), cmocka_unit_test(test_bad_size_attr),
      cmocka_unit_test(test_gradients),        cmocka_unit_test(test_split),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
