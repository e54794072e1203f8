/* test_op_accuracy.c — accuracy: row i is correct when #{j : S[i, j] > S[i, label_i]} < k;
 * Accuracy = Correct / Total. Checked against a float64 count (float32 and float64; 1, 3, 17,
 * 129 rows; k = 1, 3), on hand-made ties for top-1, top-2 and top-3; Correct and Total
 * (int64) and their leaving out; k = 0 and labels outside [0, C) rejected; shapes with -1. */
#include "optest.h"

static pd_tensor *labels(int64_t n, const int64_t *v) {
  pd_tensor *l = ot_tensor(PD_I64, 2, (int64_t[]){n, 1});
  for (int64_t i = 0; i < n; i++) PD_DATA(l, int64_t)[i] = v[i];
  return l;
}

/* Runs accuracy with top-k; returns Correct and checks Accuracy and Total agree with it. */
static int64_t run_accuracy(pd_tensor *scores, pd_tensor *label, int k) {
  char kattr[32];
  snprintf(kattr, sizeof kattr, "i: %d", k);
  const char *attrs[] = {"k", kattr, NULL};
  pd_tensor *acc = ot_out(), *correct = ot_out(), *total = ot_out();
  ot_run("accuracy", attrs, (pd_tensor *[]){scores, label}, NULL, (pd_tensor *[]){acc, correct, total}, NULL);
  ot_assert_dims(acc, 1);
  ot_assert_dims(correct, 1);
  assert_int_equal(acc->dtype, scores->dtype);
  assert_int_equal(correct->dtype, PD_I64);
  assert_int_equal(total->dtype, PD_I64);
  int64_t n = scores->dims[0], c = PD_DATA(correct, int64_t)[0];
  assert_int_equal(PD_DATA(total, int64_t)[0], n);
  double want = (double)c / (double)n;
  ot_assert_close(acc, &want, 1, 1e-7);
  ot_free(acc), ot_free(correct), ot_free(total);
  return c;
}

static void test_random_scores(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  const int ks[] = {1, 3};
  for (int r = 0; r < 4; r++)
    for (int t = 0; t < 2; t++) {
      pd_dtype dt = t ? PD_F64 : PD_F32;
      int64_t n = rows[r], cls = 10;
      pd_tensor *s = ot_rand(dt, 2, (int64_t[]){n, cls}, 1 + (uint64_t)n, 0, 1, 0);
      pd_tensor *l = ot_tensor(PD_I64, 2, (int64_t[]){n, 1});
      uint64_t seed = 5;
      for (int64_t i = 0; i < n; i++) PD_DATA(l, int64_t)[i] = (int64_t)(pd_rng_next(&seed) % (uint64_t)cls);
      for (int q = 0; q < 2; q++) {
        int64_t want = 0;
        for (int64_t i = 0; i < n; i++) {
          double mine = pd_tensor_get(s, i * cls + PD_DATA(l, int64_t)[i]);
          int above = 0;
          for (int64_t j = 0; j < cls; j++) above += pd_tensor_get(s, i * cls + j) > mine;
          want += above < ks[q];
        }
        assert_int_equal(run_accuracy(s, l, ks[q]), want);
      }
      ot_free(s), ot_free(l);
    }
}

/* A tie with the label's score counts for it; only strictly higher scores count against it. */
static void test_ties(void **state) {
  (void)state;
  const double v[] = {
      0.5, 0.5, 0.1, 0.0, /* label 1 ties the max: correct at k = 1 */
      0.3, 0.3, 0.3, 0.3, /* all equal, label 3: correct at k = 1 */
      0.4, 0.4, 0.2, 0.2, /* label 2: two higher, so wrong at k = 1, 2; right at k = 3 */
      0.4, 0.3, 0.3, 0.1, /* label 2: one higher: wrong at k = 1, right at k = 2 */
      0.1, 0.2, 0.3, 0.4, /* label 0: three higher: wrong up to k = 3 */
  };
  const int64_t lab[] = {1, 3, 2, 2, 0};
  for (int t = 0; t < 2; t++) {
    pd_tensor *s = ot_tensor(t ? PD_F64 : PD_F32, 2, (int64_t[]){5, 4}), *l = labels(5, lab);
    for (int i = 0; i < 20; i++) pd_tensor_set(s, i, v[i]);
    assert_int_equal(run_accuracy(s, l, 1), 2);
    assert_int_equal(run_accuracy(s, l, 2), 3);
    assert_int_equal(run_accuracy(s, l, 3), 4);
    assert_int_equal(run_accuracy(s, l, 4), 5);
    assert_int_equal(run_accuracy(s, l, 9), 5); /* k > C: every row */
    ot_free(s), ot_free(l);
  }
}

/* Correct and Total may be left out. */
static void test_accuracy_only(void **state) {
  (void)state;
  pd_tensor *s = ot_tensor(PD_F32, 2, (int64_t[]){2, 2}), *l = labels(2, (int64_t[]){0, 0}), *acc = ot_out();
  const double v[] = {0.9, 0.1, 0.2, 0.8};
  for (int i = 0; i < 4; i++) pd_tensor_set(s, i, v[i]);
  ot_run("accuracy", NULL, (pd_tensor *[]){s, l}, NULL, (pd_tensor *[]){acc, NULL, NULL}, NULL);
  assert_true(pd_tensor_get(acc, 0) == 0.5);
  ot_free(s), ot_free(l), ot_free(acc);
}

static void test_bad_input(void **state) {
  (void)state;
  pd_tensor *s = ot_rand(PD_F32, 2, (int64_t[]){6, 10}, 1, 0, 1, 0), *acc = ot_out();
  pd_tensor *l = labels(6, (int64_t[]){0, 1, 2, 3, 4, 12});
  const char *msg = ot_run_fail("accuracy", NULL, (pd_tensor *[]){s, l}, NULL, (pd_tensor *[]){acc, NULL, NULL}, NULL);
  assert_string_equal(msg, "op #0 \"accuracy\": label 12 at row 5 is out of range [0, 10)");
  const char *k0[] = {"k", "i: 0", NULL};
  msg = ot_run_fail("accuracy", k0, (pd_tensor *[]){s, l}, NULL, (pd_tensor *[]){acc, NULL, NULL}, NULL);
  assert_string_equal(msg, "attribute \"k\" must be >= 1, got 0");
  ot_free(s), ot_free(l), ot_free(acc);
}

static void test_shapes(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *s = ot_shaped(PD_F32, 2, (int64_t[]){-1, 10}), *l = ot_shaped(PD_I64, 2, (int64_t[]){-1, 1});
  pd_tensor *acc = ot_out(), *correct = ot_out(), *total = ot_out();
  assert_int_equal(
      ot_infer("accuracy", NULL, (pd_tensor *[]){s, l}, NULL, (pd_tensor *[]){acc, correct, total}, NULL, NULL), PD_OK);
  ot_assert_dims(acc, 1);
  ot_assert_dims(total, 1);
  assert_int_equal(acc->dtype, PD_F32);
  assert_int_equal(total->dtype, PD_I64);
  ot_free(l);
  l = ot_shaped(PD_I32, 2, (int64_t[]){-1, 1});
  assert_int_equal(
      ot_infer("accuracy", NULL, (pd_tensor *[]){s, l}, NULL, (pd_tensor *[]){acc, correct, total}, NULL, &msg),
      PD_ERR_INPUT);
  assert_non_null(strstr(msg, "Label must be int64 class indices, got int32 (add a cast op)"));
  ot_free(s), ot_free(l), ot_free(acc), ot_free(correct), ot_free(total);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_scores), cmocka_unit_test(test_ties),   cmocka_unit_test(test_accuracy_only),
      cmocka_unit_test(test_bad_input),     cmocka_unit_test(test_shapes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
