/* test_op_cross_entropy.c — cross_entropy of probabilities X [N, C]:
 * Out[i] = -log(X[i, label_i]), soft_label: Out[i] = -sum_j L[i, j] log(X[i, j]);
 * checked against a float64 loop (float32 and float64; 1, 3, 17, 129 rows; Label [N, 1] and
 * [N]); X = 0 gives the clamped, finite -log(TINY); a label outside [0, C) is an error naming
 * it; shapes with the batch -1; gradients (X kept away from 0) against finite differences. */
#include <float.h>

#include "optest.h"

/* Rows of positive numbers that sum to 1. */
static pd_tensor *rand_probs(pd_dtype dt, int64_t n, int64_t k, uint64_t seed, double lo) {
  pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){n, k}, seed, lo, 1, 0), *p = ot_tensor(dt, 2, (int64_t[]){n, k});
  for (int64_t i = 0; i < n; i++) {
    double s = 0;
    for (int64_t j = 0; j < k; j++) s += pd_tensor_get(x, i * k + j);
    for (int64_t j = 0; j < k; j++) pd_tensor_set(p, i * k + j, pd_tensor_get(x, i * k + j) / s);
  }
  ot_free(x);
  return p;
}

static pd_tensor *rand_labels(int ndim, int64_t n, int64_t k, uint64_t seed) {
  pd_tensor *l = ot_tensor(PD_I64, ndim, (int64_t[]){n, 1});
  uint64_t s = seed;
  for (int64_t i = 0; i < n; i++) PD_DATA(l, int64_t)[i] = (int64_t)(pd_rng_next(&s) % (uint64_t)k);
  return l;
}

static void check_hard(pd_dtype dt, int64_t n, int64_t k, int label_ndim) {
  pd_tensor *x = rand_probs(dt, n, k, 1 + (uint64_t)n, 0.01), *l = rand_labels(label_ndim, n, k, 7), *y = ot_out();
  ot_run("cross_entropy", NULL, (pd_tensor *[]){x, l}, NULL, (pd_tensor *[]){y}, NULL);
  ot_assert_dims(y, n, 1);
  assert_int_equal(y->dtype, dt);
  double *ref = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) ref[i] = -log(pd_tensor_get(x, i * k + PD_DATA(l, int64_t)[i]));
  ot_assert_close(y, ref, n, dt == PD_F32 ? 1e-6 : 1e-14);
  free(ref);
  ot_free(x), ot_free(l), ot_free(y);
}

static void check_soft(pd_dtype dt, int64_t n, int64_t k) {
  pd_tensor *x = rand_probs(dt, n, k, 2 + (uint64_t)n, 0.01), *l = rand_probs(dt, n, k, 99, 0), *y = ot_out();
  const char *attrs[] = {"soft_label", "b: true", NULL};
  ot_run("cross_entropy", attrs, (pd_tensor *[]){x, l}, NULL, (pd_tensor *[]){y}, NULL);
  ot_assert_dims(y, n, 1);
  double *ref = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    ref[i] = 0;
    for (int64_t j = 0; j < k; j++) ref[i] -= pd_tensor_get(l, i * k + j) * log(pd_tensor_get(x, i * k + j));
  }
  ot_assert_close(y, ref, n, dt == PD_F32 ? 1e-5 : 1e-13);
  free(ref);
  ot_free(x), ot_free(l), ot_free(y);
}

static void test_forward_sizes(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++)
    for (int t = 0; t < 2; t++) {
      pd_dtype dt = t ? PD_F64 : PD_F32;
      check_hard(dt, rows[r], 10, 2);
      check_hard(dt, rows[r], 3, 1);
      check_hard(dt, rows[r], 1, 2);
      check_soft(dt, rows[r], 7);
    }
}

/* -log(0) is inf; X is clamped at TINY, so the loss is large and finite, and so is dX. */
static void test_log_zero_is_finite(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    double tiny = t ? 1e-20 : FLT_MIN;
    pd_tensor *x = ot_tensor(dt, 2, (int64_t[]){2, 3}), *l = ot_tensor(PD_I64, 2, (int64_t[]){2, 1});
    const double v[] = {0, 0.5, 0.5, 1, 0, 0};
    for (int i = 0; i < 6; i++) pd_tensor_set(x, i, v[i]);
    PD_DATA(l, int64_t)[0] = 0, PD_DATA(l, int64_t)[1] = 2;
    pd_tensor *y = ot_out(), *dy = ot_rand(dt, 2, (int64_t[]){2, 1}, 3, 0.5, 1, 0), *dx = ot_out();
    ot_run("cross_entropy", NULL, (pd_tensor *[]){x, l}, NULL, (pd_tensor *[]){y}, NULL);
    for (int i = 0; i < 2; i++) {
      assert_true(isfinite(pd_tensor_get(y, i)));
      assert_true(fabs(pd_tensor_get(y, i) + log(tiny)) < 1e-4); /* 46.05 / 87.34 */
    }
    assert_true(pd_tensor_get(y, 0) > 40);
    ot_run("cross_entropy_grad", NULL, (pd_tensor *[]){x, l, y, dy}, NULL, (pd_tensor *[]){dx, NULL}, NULL);
    for (int i = 0; i < 6; i++) assert_true(isfinite(pd_tensor_get(dx, i)));
    assert_true(pd_tensor_get(dx, 0) < 0 && pd_tensor_get(dx, 1) == 0);
    /* soft labels with a zero probability where the label has no mass: 0, not NaN */
    pd_tensor *sl = ot_tensor(dt, 2, (int64_t[]){2, 3});
    const double w[] = {0, 0.5, 0.5, 1, 0, 0};
    for (int i = 0; i < 6; i++) pd_tensor_set(sl, i, w[i]);
    const char *attrs[] = {"soft_label", "b: true", NULL};
    ot_run("cross_entropy", attrs, (pd_tensor *[]){x, sl}, NULL, (pd_tensor *[]){y}, NULL);
    assert_true(fabs(pd_tensor_get(y, 0) - log(2.0)) < 1e-6);
    assert_true(fabs(pd_tensor_get(y, 1)) < 1e-12);
    ot_free(x), ot_free(l), ot_free(y), ot_free(dy), ot_free(dx), ot_free(sl);
  }
}

static void test_label_out_of_range(void **state) {
  (void)state;
  pd_tensor *x = rand_probs(PD_F32, 6, 10, 4, 0.01), *l = rand_labels(2, 6, 10, 5), *y = ot_out();
  PD_DATA(l, int64_t)[5] = 12;
  const char *msg = ot_run_fail("cross_entropy", NULL, (pd_tensor *[]){x, l}, NULL, (pd_tensor *[]){y}, NULL);
  assert_string_equal(msg, "op #0 \"cross_entropy\": label 12 at row 5 is out of range [0, 10)");
  PD_DATA(l, int64_t)[5] = 3, PD_DATA(l, int64_t)[2] = -1;
  msg = ot_run_fail("cross_entropy", NULL, (pd_tensor *[]){x, l}, NULL, (pd_tensor *[]){y}, NULL);
  assert_non_null(strstr(msg, "label -1 at row 2 is out of range [0, 10)"));
  ot_free(x), ot_free(l), ot_free(y);
}

static void test_shapes(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *x = ot_shaped(PD_F32, 2, (int64_t[]){-1, 10}), *l = ot_shaped(PD_I64, 2, (int64_t[]){-1, 1});
  pd_tensor *y = ot_out();
  assert_int_equal(ot_infer("cross_entropy", NULL, (pd_tensor *[]){x, l}, NULL, (pd_tensor *[]){y}, NULL, NULL), PD_OK);
  ot_assert_dims(y, -1, 1);
  ot_free(l);
  l = ot_shaped(PD_I64, 1, (int64_t[]){-1}); /* [N] labels */
  assert_int_equal(ot_infer("cross_entropy", NULL, (pd_tensor *[]){x, l}, NULL, (pd_tensor *[]){y}, NULL, NULL), PD_OK);
  ot_free(l), ot_free(x);
  x = ot_shaped(PD_F32, 2, (int64_t[]){3, 10});
  l = ot_shaped(PD_I64, 2, (int64_t[]){4, 1});
  assert_int_equal(ot_infer("cross_entropy", NULL, (pd_tensor *[]){x, l}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "Label must be [N, 1] or [N], one class per row of the scores [3, 10]; got [4, 1]"));
  ot_free(l);
  l = ot_shaped(PD_F32, 2, (int64_t[]){3, 1});
  assert_int_equal(ot_infer("cross_entropy", NULL, (pd_tensor *[]){x, l}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "Label must be int64 class indices, got float32"));
  const char *soft[] = {"soft_label", "b: true", NULL};
  assert_int_equal(ot_infer("cross_entropy", soft, (pd_tensor *[]){x, l}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "shaped like the scores [3, 10]; got float32 [3, 1]"));
  ot_free(l), ot_free(x), ot_free(y);
}

static void test_gradients(void **state) {
  (void)state;
  const bool check[] = {true, false};
  pd_tensor *x = rand_probs(PD_F64, 4, 5, 21, 0.2), *l = rand_labels(2, 4, 5, 22);
  ot_gradcheck_ex("cross_entropy", NULL, (pd_tensor *[]){x, l}, 2, 1, check, NULL, 1e-6);
  ot_free(l);
  l = rand_probs(PD_F64, 4, 5, 23, 0);
  const char *soft[] = {"soft_label", "b: true", NULL};
  ot_gradcheck_ex("cross_entropy", soft, (pd_tensor *[]){x, l}, 2, 1, check, NULL, 1e-6);
  ot_free(x), ot_free(l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward_sizes),      cmocka_unit_test(test_log_zero_is_finite),
      cmocka_unit_test(test_label_out_of_range), cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
