/* test_op_square_error.c — square_error: Out = (X - Y)^2 elementwise, X and Y of one shape,
 * checked against a float64 loop (float32 and float64; 1, 3, 17, 129 rows); shapes with the
 * batch -1 and a mismatch; dX = 2 (X - Y) dOut and dY = -dX against finite differences. */
#include "optest.h"

static void check_forward(pd_dtype dt, int ndim, const int64_t *dims) {
  pd_tensor *x = ot_rand(dt, ndim, dims, 1 + (uint64_t)dims[0], -3, 3, 0);
  pd_tensor *y = ot_rand(dt, ndim, dims, 2, -3, 3, 0), *out = ot_out();
  ot_run("square_error", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
  assert_true(pd_dims_equal(out->ndim, out->dims, ndim, dims));
  assert_int_equal(out->dtype, dt);
  int64_t n = pd_tensor_numel(x);
  double *ref = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) ref[i] = pow(pd_tensor_get(x, i) - pd_tensor_get(y, i), 2);
  ot_assert_close(out, ref, n, dt == PD_F32 ? 1e-5 : 1e-14);
  free(ref);
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
  pd_tensor *x = ot_shaped(PD_F32, 2, (int64_t[]){-1, 4}), *y = ot_shaped(PD_F32, 2, (int64_t[]){-1, 4});
  pd_tensor *out = ot_out();
  assert_int_equal(ot_infer("square_error", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL, NULL),
                   PD_OK);
  ot_assert_dims(out, -1, 4);
  ot_free(y);
  y = ot_shaped(PD_F32, 2, (int64_t[]){-1, 3});
  assert_int_equal(ot_infer("square_error", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "X and Y must have the same shape, got [-1, 4] and [-1, 3]"));
  ot_free(y);
  y = ot_shaped(PD_F64, 2, (int64_t[]){-1, 4});
  assert_int_equal(ot_infer("square_error", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "X and Y must both be float32 or both float64, got float32 and float64"));
  ot_free(x), ot_free(y), ot_free(out);
}

static void test_gradients(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){3, 4}, 5, -2, 2, 0);
  pd_tensor *y = ot_rand(PD_F64, 2, (int64_t[]){3, 4}, 6, -2, 2, 0);
  ot_gradcheck("square_error", NULL, (pd_tensor *[]){x, y}, 2, 1);
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
