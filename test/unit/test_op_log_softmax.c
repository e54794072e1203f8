/* test_op_log_softmax.c — log_softmax over the last dim: Out[r, j] =
 * X[r, j] - log(sum_k exp(X[r, k])), checked against that formula in long
 * double, for rows of 1, 3 and 1000 values, huge logits (finite, exact 0
 * for the dominant one) and ranks 1 to 3; the gradient by finite
 * differences. */
#include "optest.h"

static void check(pd_dtype dt, int nd, const int64_t *dims, double lo, double hi) {
  pd_tensor *x = ot_rand(dt, nd, dims, 7, lo, hi, 0), *out = ot_out();
  ot_run("log_softmax", NULL, &x, NULL, &out, NULL);
  int64_t n = pd_tensor_numel(x), d = dims[nd - 1];
  double *ref = malloc(sizeof(double) * (size_t)n);
  for (int64_t r = 0; r < n / d; r++) {
    long double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < d; j++) m = fmaxl(m, pd_tensor_get(x, r * d + j));
    for (int64_t j = 0; j < d; j++) s += expl(pd_tensor_get(x, r * d + j) - m);
    for (int64_t j = 0; j < d; j++) ref[r * d + j] = (double)(pd_tensor_get(x, r * d + j) - m - logl(s));
  }
  ot_assert_close(out, ref, n, dt == PD_F32 ? 1e-5 : 1e-12);
  free(ref);
  ot_free(x), ot_free(out);
}

static void test_forward(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    check(dt, 2, (int64_t[]){4, 3}, -3, 3);
    check(dt, 2, (int64_t[]){2, 1000}, -10, 10);
    check(dt, 1, (int64_t[]){1}, -3, 3);
    check(dt, 3, (int64_t[]){2, 3, 5}, -3, 3);
    check(dt, 2, (int64_t[]){3, 4}, 1e4, 2e4); /* exp would overflow */
  }
}

static void test_gradients(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F64, 3, (int64_t[]){2, 3, 4}, 5, -2, 2, 0);
  ot_gradcheck("log_softmax", NULL, &x, 1, 1);
  ot_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_forward), cmocka_unit_test(test_gradients)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
