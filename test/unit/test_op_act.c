/* test_op_act.c — the activations, element by element:
 *   relu:    Out = max(X, 0)             dX = dOut * (Out > 0)
 *   sigmoid: Out = 1 / (1 + exp(-X))     dX = dOut * Out * (1 - Out)
 *   tanh:    Out = tanh(X)               dX = dOut * (1 - Out^2)
 * Checked against float64 formulas in float32 and float64 for 1, 3, 17 and 129
 * rows; sigmoid and tanh stay finite and saturate for |X| up to 1000; gradients
 * by finite differences (inputs kept off relu's kink). */
#include "optest.h"

static const char *const acts[] = {"relu", "sigmoid", "tanh"};

static double ref_act(int a, double v) {
  if (a == 0) return v > 0 ? v : 0;
  if (a == 1) return 1 / (1 + exp(-v));
  return tanh(v);
}

static void check_forward(int a, pd_dtype dt, int64_t rows) {
  pd_tensor *x = ot_rand(dt, 2, (int64_t[]){rows, 9}, 1 + (uint64_t)rows, -6, 6, 0), *out = ot_out();
  ot_run(acts[a], NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  assert_int_equal(out->ndim, 2);
  assert_int_equal(out->dims[0], rows);
  assert_int_equal(out->dims[1], 9);
  assert_int_equal(out->dtype, dt);
  double *ref = malloc(sizeof(double) * (size_t)(rows * 9));
  for (int64_t i = 0; i < rows * 9; i++) ref[i] = ref_act(a, pd_tensor_get(x, i));
  ot_assert_close(out, ref, rows * 9, dt == PD_F32 ? 2e-6 : 1e-14);
  free(ref);
  ot_free(x), ot_free(out);
}

static void test_forward(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int a = 0; a < 3; a++)
    for (int r = 0; r < 4; r++) {
      check_forward(a, PD_F32, rows[r]);
      check_forward(a, PD_F64, rows[r]);
    }
}

static void test_extremes(void **state) {
  (void)state;
  const double v[] = {-1000, -50, -0.0, 0, 50, 1000};
  for (int t = 0; t < 2; t++) {
    pd_tensor *x = ot_tensor(t ? PD_F64 : PD_F32, 1, (int64_t[]){6});
    for (int i = 0; i < 6; i++) pd_tensor_set(x, i, v[i]);
    for (int a = 0; a < 3; a++) {
      pd_tensor *out = ot_out();
      ot_run(acts[a], NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
      double ref[6];
      for (int i = 0; i < 6; i++) ref[i] = ref_act(a, v[i]);
      ot_assert_close(out, ref, 6, 1e-7);
      ot_free(out);
    }
    ot_free(x);
  }
}

static void test_errors(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_I32, 1, (int64_t[]){3}, 1, -5, 5, 0), *out = ot_out();
  for (int a = 0; a < 3; a++) {
    const char *msg = ot_run_fail(acts[a], NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
    assert_non_null(strstr(msg, "input X must be float32 or float64, got int32"));
  }
  ot_free(x), ot_free(out);
}

static void test_gradients(void **state) {
  (void)state;
  for (int a = 0; a < 3; a++) {
    pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){3, 7}, 5, -3, 3, 0.05);
    ot_gradcheck(acts[a], NULL, (pd_tensor *[]){x}, 1, 1);
    ot_free(x);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),
      cmocka_unit_test(test_extremes),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
