/* test_op_fc.c — fc: Out[i,j] = act(sum_k X[i,k] W[k,j] + B[j]), checked
 * against a plain float64 loop, in float32 and float64, for batch sizes
 * 1, 3, 17, 129; then its gradients against finite differences. */
#include "optest.h"

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward_sizes),    cmocka_unit_test(test_flatten_and_param_inference),
      cmocka_unit_test(test_bad_weight_shape), cmocka_unit_test(test_bad_size_attr),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
