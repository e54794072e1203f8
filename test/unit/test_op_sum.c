/* test_op_sum.c — sum: Out[i] = sum_k X_k[i] over 1 to 5 inputs of one
 * shape, checked against a float64 loop in float32 and float64 for 1, 3, 17
 * and 129 rows; Out written over one of its inputs; -1 dims at load; errors;
 * gradients dX_k = dOut for 3 inputs by finite differences. */
#include "optest.h"

static void expect_dims(const pd_tensor *t, int ndim, const int64_t *dims) {
  char a[128], b[128];
  if (!pd_dims_equal(t->ndim, t->dims, ndim, dims))
    fail_msg("expected shape %s, got %s", pd_dims_str(ndim, dims, a, sizeof a),
             pd_dims_str(t->ndim, t->dims, b, sizeof b));
}

static void check_forward(pd_dtype dt, int k, int64_t rows, int64_t cols) {
  pd_tensor *xs[5], *out = ot_out();
  int64_t dims[2] = {rows, cols}, n = rows * cols;
  for (int i = 0; i < k; i++) xs[i] = ot_rand(dt, 2, dims, 1 + (uint64_t)i, -1, 1, 0);
  ot_run("sum", NULL, xs, (int[]){k}, (pd_tensor *[]){out}, NULL);
  expect_dims(out, 2, dims);
  double *ref = calloc((size_t)n + 1, sizeof(double));
  for (int i = 0; i < k; i++)
    for (int64_t j = 0; j < n; j++) ref[j] += pd_tensor_get(xs[i], j);
  /* partial sums round; where they cancel to near 0, compare absolutely */
  double e = ot_max_err(out, ref, n, 1.0), tol = dt == PD_F32 ? 1e-6 : 1e-15;
  if (!(e <= tol)) fail_msg("sum of %d %s: max error %g > %g", k, pd_dtype_name(dt), e, tol);
  free(ref);
  for (int i = 0; i < k; i++) ot_free(xs[i]);
  ot_free(out);
}

static void test_forward(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++)
    for (int k = 1; k <= 5; k++) {
      check_forward(PD_F32, k, rows[r], 7);
      check_forward(PD_F64, k, rows[r], 7);
    }
}

/* Gradients are summed in place: Out may be one of the inputs. */
static void test_out_is_an_input(void **state) {
  (void)state;
  for (int at = 0; at < 3; at++) {
    pd_tensor *xs[3];
    for (int i = 0; i < 3; i++) xs[i] = ot_rand(PD_F64, 2, (int64_t[]){17, 3}, 5 + (uint64_t)i, -1, 1, 0);
    double ref[51];
    for (int j = 0; j < 51; j++) ref[j] = pd_tensor_get(xs[0], j) + pd_tensor_get(xs[1], j) + pd_tensor_get(xs[2], j);
    ot_run("sum", NULL, xs, (int[]){3}, (pd_tensor *[]){xs[at]}, NULL);
    ot_assert_close(xs[at], ref, 51, 1e-15);
    for (int i = 0; i < 3; i++) ot_free(xs[i]);
  }
}

static void test_infer_with_batch(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *a = ot_shaped(PD_F32, 2, (int64_t[]){-1, 4}), *b = ot_shaped(PD_F32, 2, (int64_t[]){-1, 4});
  pd_tensor *c = ot_shaped(PD_F32, 2, (int64_t[]){-1, 5}), *out = ot_out();
  assert_int_equal(ot_infer("sum", NULL, (pd_tensor *[]){a, b}, (int[]){2}, &out, NULL, NULL), PD_OK);
  ot_assert_dims(out, -1, 4);
  assert_int_equal(ot_infer("sum", NULL, (pd_tensor *[]){a, c}, (int[]){2}, &out, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "input X[1] (\"\") has shape [-1, 5] but X[0] (\"\") has shape [-1, 4]"));
  ot_free(a), ot_free(b), ot_free(c), ot_free(out);
}

static void test_errors(void **state) {
  (void)state;
  pd_tensor *a = ot_rand(PD_F32, 2, (int64_t[]){2, 3}, 1, -1, 1, 0);
  pd_tensor *b = ot_rand(PD_F32, 2, (int64_t[]){2, 4}, 2, -1, 1, 0);
  pd_tensor *c = ot_rand(PD_F32, 1, (int64_t[]){6}, 3, -1, 1, 0);
  pd_tensor *d = ot_rand(PD_F64, 2, (int64_t[]){2, 3}, 4, -1, 1, 0);
  pd_tensor *i = ot_rand(PD_I64, 2, (int64_t[]){2, 3}, 4, -1, 1, 0);
  pd_tensor *out = ot_out();
  const char *msg = ot_run_fail("sum", NULL, (pd_tensor *[]){a, b}, (int[]){2}, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "input X[1] (\"\") has shape [2, 4] but X[0] (\"\") has shape [2, 3]"));
  msg = ot_run_fail("sum", NULL, (pd_tensor *[]){a, a, c}, (int[]){3}, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "input X[2] (\"\") has shape [6] but X[0] (\"\") has shape [2, 3]"));
  msg = ot_run_fail("sum", NULL, (pd_tensor *[]){a, d}, (int[]){2}, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "input X[1] (\"\") is float64 but X[0] (\"\") is float32"));
  msg = ot_run_fail("sum", NULL, (pd_tensor *[]){i, i}, (int[]){2}, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "inputs must be float32 or float64, got int64"));
  ot_free(a), ot_free(b), ot_free(c), ot_free(d), ot_free(i), ot_free(out);
}

/* ot_gradcheck takes one tensor per slot; X here holds three, so the same
 * check is spelled out: L = <Out, G>, dL/dX_k from sum_grad against
 * (L(x + h) - L(x - h)) / 2h for every element of every input. */
static void test_gradient_three_inputs(void **state) {
  (void)state;
  pd_tensor *xs[3];
  for (int i = 0; i < 3; i++) xs[i] = ot_rand(PD_F64, 2, (int64_t[]){3, 4}, 31 + (uint64_t)i, -1, 1, 0);
  pd_tensor *out = ot_out(), *g = ot_rand(PD_F64, 2, (int64_t[]){3, 4}, 40, -1, 1, 0);
  ot_run("sum", NULL, xs, (int[]){3}, (pd_tensor *[]){out}, NULL);
  pd_tensor *dx[3] = {ot_out(), ot_out(), ot_out()};
  ot_run("sum_grad", NULL, (pd_tensor *[]){xs[0], xs[1], xs[2], out, g}, (int[]){3, 1, 1}, dx, (int[]){3});
  const double h = 1e-5;
  for (int k = 0; k < 3; k++) {
    double *v = PD_DATA(xs[k], double);
    for (int64_t i = 0; i < 12; i++) {
      double keep = v[i];
      v[i] = keep + h;
      double lp = ot_loss("sum", NULL, xs, (int[]){3}, 1, &g);
      v[i] = keep - h;
      double lm = ot_loss("sum", NULL, xs, (int[]){3}, 1, &g);
      v[i] = keep;
      double num = (lp - lm) / (2 * h), ana = pd_tensor_get(dx[k], i);
      double e = fabs(ana - num) / fmax(fmax(fabs(ana), fabs(num)), 1e-3);
      if (!(e <= 1e-6)) fail_msg("sum: d/dX[%d] [%lld]: analytic %.12g, numeric %.12g", k, (long long)i, ana, num);
    }
  }
  for (int k = 0; k < 3; k++) ot_free(xs[k]), ot_free(dx[k]);
  ot_free(out), ot_free(g);
}

static void test_gradient_one_input(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){3, 5}, 50, -1, 1, 0);
  ot_gradcheck("sum", NULL, (pd_tensor *[]){x}, 1, 1);
  ot_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),
      cmocka_unit_test(test_out_is_an_input),
      cmocka_unit_test(test_infer_with_batch),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_gradient_three_inputs),
      cmocka_unit_test(test_gradient_one_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
