/* test_op_mse.c — mse: Out [1] = (1/n) sum_i (X_i - Y_i)^2 over all n elements, checked
 * against a float64 loop (float32 and float64; 1, 3, 17, 129 rows); shapes with the batch
 * -1; dX = 2 (X - Y) dOut / n and dY = -dX against finite differences. */
#include "optest.h"

static void check_forward(pd_dtype dt, int ndim, const int64_t *dims) {
  pd_tensor *x = ot_rand(dt, ndim, dims, 1 + (uint64_t)dims[0], -3, 3, 0);
  pd_tensor *y = ot_rand(dt, ndim, dims, 2, -3, 3, 0), *out = ot_out();
  ot_run("mse", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
  ot_assert_dims(out, 1);
  assert_int_equal(out->dtype, dt);
  int64_t n = pd_tensor_numel(x);
  double ref = 0;
  for (int64_t i = 0; i < n; i++) ref += pow(pd_tensor_get(x, i) - pd_tensor_get(y, i), 2);
  ref /= (double)n;
  ot_assert_close(out, &ref, 1, dt == PD_F32 ? 1e-6 : 1e-13);
  ot_free(x), ot_free(y), ot_free(out);
}

static void test_forward_sizes(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++)
    for (int t = 0; t < 2; t++) {
      pd_dtype dt = t ? PD_F64 : PD_F32;
      check_forward(dt, 2, (int64_t[]){rows[r], 1});
      check_forward(dt, 2, (int64_t[]){rows[r], 7});
      check_forward(dt, 3, (int64_t[]){rows[r], 3, 5});
    }
}

static void test_shapes(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *x = ot_shaped(PD_F64, 2, (int64_t[]){-1, 1}), *y = ot_shaped(PD_F64, 2, (int64_t[]){-1, 1});
  pd_tensor *out = ot_out();
  assert_int_equal(ot_infer("mse", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL, NULL), PD_OK);
  ot_assert_dims(out, 1);
  assert_int_equal(out->dtype, PD_F64);
  ot_free(y);
  y = ot_shaped(PD_F64, 1, (int64_t[]){-1});
  assert_int_equal(ot_infer("mse", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "X and Y must have the same shape, got [-1, 1] and [-1]"));
  ot_free(x), ot_free(y), ot_free(out);
}

static void test_gradients(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){5, 3}, 5, -2, 2, 0);
  pd_tensor *y = ot_rand(PD_F64, 2, (int64_t[]){5, 3}, 6, -2, 2, 0);
  ot_gradcheck("mse", NULL, (pd_tensor *[]){x, y}, 2, 1);
  ot_free(x), ot_free(y);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward_sizes),
      cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
