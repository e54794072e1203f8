/* test_op_mean.c — mean: Out = [ (1/n) sum_i X[i] ] over all n elements of
 * X, shape [1]; checked against a float64 loop in float32 and float64 for 1,
 * 3, 17 and 129 rows; shape [1] even with a -1 batch at load; an empty X gives
 * NaN; gradient dX[i] = dOut[0] / n by finite differences. */
#include "optest.h"

static void check_forward(pd_dtype dt, int64_t rows, int64_t cols) {
  pd_tensor *x = ot_rand(dt, 2, (int64_t[]){rows, cols}, 1, -3, 5, 0), *out = ot_out();
  ot_run("mean", NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  assert_int_equal(out->ndim, 1);
  assert_int_equal(out->dims[0], 1);
  assert_int_equal(out->dtype, dt);
  double s = 0;
  for (int64_t i = 0; i < rows * cols; i++) s += pd_tensor_get(x, i);
  double ref = s / (double)(rows * cols);
  ot_assert_close(out, &ref, 1, dt == PD_F32 ? 1e-6 : 1e-14);
  ot_free(x), ot_free(out);
}

static void test_forward(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++) {
    check_forward(PD_F32, rows[r], 1);
    check_forward(PD_F32, rows[r], 33);
    check_forward(PD_F64, rows[r], 7);
  }
  check_forward(PD_F32, 1000, 1000); /* a million floats: accumulated in double */
}

static void test_shape_at_load_and_empty(void **state) {
  (void)state;
  pd_tensor *x = ot_shaped(PD_F32, 2, (int64_t[]){-1, 10}), *out = ot_out();
  assert_int_equal(ot_infer("mean", NULL, &x, NULL, &out, NULL, NULL), PD_OK);
  ot_assert_dims(out, 1);
  ot_free(x), ot_free(out);
  pd_tensor *e = ot_rand(PD_F64, 2, (int64_t[]){0, 10}, 1, -1, 1, 0), *o = ot_out();
  ot_run("mean", NULL, (pd_tensor *[]){e}, NULL, (pd_tensor *[]){o}, NULL);
  assert_true(isnan(pd_tensor_get(o, 0)));
  pd_tensor *xi = ot_rand(PD_I64, 1, (int64_t[]){3}, 1, 0, 9, 0);
  const char *msg = ot_run_fail("mean", NULL, (pd_tensor *[]){xi}, NULL, (pd_tensor *[]){o}, NULL);
  assert_non_null(strstr(msg, "input X must be float32 or float64, got int64"));
  ot_free(e), ot_free(o), ot_free(xi);
}

static void test_gradients(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F64, 3, (int64_t[]){3, 2, 4}, 7, -1, 1, 0);
  ot_gradcheck("mean", NULL, (pd_tensor *[]){x}, 1, 1);
  ot_free(x);
  x = ot_rand(PD_F64, 1, (int64_t[]){1}, 8, -1, 1, 0);
  ot_gradcheck("mean", NULL, (pd_tensor *[]){x}, 1, 1);
  ot_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),
      cmocka_unit_test(test_shape_at_load_and_empty),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
