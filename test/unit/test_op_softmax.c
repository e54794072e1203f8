/* test_op_softmax.c — softmax over the last dim: Out[r, j] = exp(X[r, j]) / sum_k exp(X[r, k]),
 * checked against a float64 loop (in float32 and float64, 1, 3, 17, 129 rows, rank 2 and 3),
 * for huge inputs (1e4, -1e4: finite, exact), for shapes with the batch -1, and its
 * gradient dX = Out (dOut - <dOut, Out>) against finite differences. */
#include "optest.h"

/* Reference: the textbook formula in float64, the max subtracted (exp(1e4) is inf). */
static void softmax_ref(const pd_tensor *x, int64_t d, double *ref) {
  int64_t n = pd_tensor_numel(x);
  for (int64_t r = 0; r < n / d; r++) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < d; j++) m = fmax(m, pd_tensor_get(x, r * d + j));
    for (int64_t j = 0; j < d; j++) s += exp(pd_tensor_get(x, r * d + j) - m);
    for (int64_t j = 0; j < d; j++) ref[r * d + j] = exp(pd_tensor_get(x, r * d + j) - m) / s;
  }
}

static void check_forward(pd_dtype dt, int ndim, const int64_t *dims, uint64_t seed) {
  pd_tensor *x = ot_rand(dt, ndim, dims, seed, -4, 4, 0), *y = ot_out();
  ot_run("softmax", NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  assert_true(pd_dims_equal(y->ndim, y->dims, ndim, dims));
  assert_int_equal(y->dtype, dt);
  int64_t n = pd_tensor_numel(x), d = dims[ndim - 1];
  double *ref = malloc(sizeof(double) * (size_t)n);
  softmax_ref(x, d, ref);
  ot_assert_close(y, ref, n, dt == PD_F32 ? 1e-5 : 1e-13);
  free(ref);
  ot_free(x), ot_free(y);
}

static void test_forward_sizes(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++) {
    for (int t = 0; t < 2; t++) {
      pd_dtype dt = t ? PD_F64 : PD_F32;
      check_forward(dt, 2, (int64_t[]){rows[r], 10}, 1 + (uint64_t)r);
      check_forward(dt, 2, (int64_t[]){rows[r], 1}, 2); /* one class: all ones */
      check_forward(dt, 2, (int64_t[]){rows[r], 129}, 3);
      check_forward(dt, 3, (int64_t[]){rows[r], 3, 7}, 4); /* rows are the last dim */
    }
  }
}

/* exp(1e4) overflows; with the max subtracted the result is exact and finite. */
static void test_huge_inputs(void **state) {
  (void)state;
  const double v[] = {1e4, -1e4, 0, 1e4 - 1, /* row 2 */ -1e4, -1e4, -1e4 - 2, -1e4 + 3};
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    pd_tensor *x = ot_tensor(dt, 2, (int64_t[]){2, 4}), *y = ot_out();
    for (int i = 0; i < 8; i++) pd_tensor_set(x, i, v[i]);
    ot_run("softmax", NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
    double ref[8];
    softmax_ref(x, 4, ref);
    for (int i = 0; i < 8; i++) assert_true(isfinite(pd_tensor_get(y, i)));
    assert_true(fabs(pd_tensor_get(y, 0) - 1 / (1 + exp(-1.0))) < 1e-6);
    ot_assert_close(y, ref, 8, dt == PD_F32 ? 1e-5 : 1e-13);
    ot_free(x), ot_free(y);
  }
}

static void test_shape_with_batch(void **state) {
  (void)state;
  pd_tensor *x = ot_shaped(PD_F32, 2, (int64_t[]){-1, 10}), *y = ot_out();
  assert_int_equal(ot_infer("softmax", NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL, NULL), PD_OK);
  ot_assert_dims(y, -1, 10);
  ot_free(x);
  x = ot_shaped(PD_I64, 2, (int64_t[]){-1, 10});
  const char *msg;
  assert_int_equal(ot_infer("softmax", NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "input X must be float32 or float64, got int64"));
  ot_free(x), ot_free(y);
}

static void test_gradients(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){3, 5}, 11, -2, 2, 0);
  ot_gradcheck("softmax", NULL, (pd_tensor *[]){x}, 1, 1);
  ot_free(x);
  x = ot_rand(PD_F64, 3, (int64_t[]){2, 2, 3}, 12, -2, 2, 0);
  ot_gradcheck("softmax", NULL, (pd_tensor *[]){x}, 1, 1);
  ot_free(x);
  x = ot_rand(PD_F64, 2, (int64_t[]){1, 1}, 13, -2, 2, 0); /* one class: dX = 0 */
  ot_gradcheck("softmax", NULL, (pd_tensor *[]){x}, 1, 1);
  ot_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward_sizes),
      cmocka_unit_test(test_huge_inputs),
      cmocka_unit_test(test_shape_with_batch),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
