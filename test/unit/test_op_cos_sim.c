/* test_op_cos_sim.c — cos_sim: Out[i] = scale <x_i, y_i> / (|x_i| |y_i|), XNorm[i] = |x_i|,
 * YNorm = |y_i|, for Y [N, D] and for one row Y [1, D] against every row of X; checked against
 * a float64 loop (float32 and float64; 1, 3, 17, 129 rows); a zero row gives 0; scale <= 0 is
 * rejected; shapes with the batch -1; gradients of all three outputs, broadcast Y included,
 * against finite differences. */
#include "optest.h"

static void check_forward(pd_dtype dt, int64_t n, int64_t d, bool broadcast, const char *scale_attr, double scale) {
  int64_t yn = broadcast ? 1 : n;
  pd_tensor *x = ot_rand(dt, 2, (int64_t[]){n, d}, 1 + (uint64_t)n, -1, 1, 0);
  pd_tensor *y = ot_rand(dt, 2, (int64_t[]){yn, d}, 2 + (uint64_t)n, -1, 1, 0);
  pd_tensor *out = ot_out(), *xn = ot_out(), *ynorm = ot_out();
  const char *attrs[] = {"scale", scale_attr, NULL};
  ot_run("cos_sim", attrs, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out, xn, ynorm}, NULL);
  ot_assert_dims(out, n, 1);
  ot_assert_dims(xn, n, 1);
  ot_assert_dims(ynorm, yn, 1);
  double *r_out = malloc(sizeof(double) * (size_t)n), *r_xn = malloc(sizeof(double) * (size_t)n);
  double *r_yn = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    int64_t yi = broadcast ? 0 : i;
    double xy = 0, xx = 0, yy = 0;
    for (int64_t j = 0; j < d; j++) {
      double a = pd_tensor_get(x, i * d + j), b = pd_tensor_get(y, yi * d + j);
      xy += a * b, xx += a * a, yy += b * b;
    }
    r_out[i] = scale * xy / sqrt(xx * yy);
    r_xn[i] = sqrt(xx);
    r_yn[yi] = sqrt(yy);
  }
  double tol = dt == PD_F32 ? 1e-5 : 1e-13;
  ot_assert_close(out, r_out, n, tol);
  ot_assert_close(xn, r_xn, n, tol);
  ot_assert_close(ynorm, r_yn, yn, tol);
  free(r_out), free(r_xn), free(r_yn);
  ot_free(x), ot_free(y), ot_free(out), ot_free(xn), ot_free(ynorm);
}

static void test_forward_sizes(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++)
    for (int t = 0; t < 2; t++) {
      pd_dtype dt = t ? PD_F64 : PD_F32;
      check_forward(dt, rows[r], 7, false, "f: 1.0", 1.0);
      check_forward(dt, rows[r], 7, true, "f: 1.0", 1.0);
      check_forward(dt, rows[r], 1, false, "f: 2.5", 2.5);
      check_forward(dt, rows[r], 65, true, "f: 0.5", 0.5);
    }
}

/* |x| = 0: the cosine is undefined; the op gives 0, without NaN, and XNorm/YNorm may be left out. */
static void test_zero_row(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){2, 3}, 3, -1, 1, 0.1),
            *y = ot_rand(PD_F64, 2, (int64_t[]){1, 3}, 4, -1, 1, 0.1);
  for (int j = 0; j < 3; j++) pd_tensor_set(x, 3 + j, 0);
  pd_tensor *out = ot_out(), *dout = ot_rand(PD_F64, 2, (int64_t[]){2, 1}, 5, -1, 1, 0), *dx = ot_out();
  ot_run("cos_sim", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out, NULL, NULL}, NULL);
  assert_true(pd_tensor_get(out, 1) == 0);
  assert_true(isfinite(pd_tensor_get(out, 0)) && pd_tensor_get(out, 0) != 0);
  ot_run("cos_sim_grad", NULL, (pd_tensor *[]){x, y, out, NULL, NULL, dout, NULL, NULL}, NULL,
         (pd_tensor *[]){dx, NULL}, NULL);
  for (int j = 0; j < 3; j++) assert_true(pd_tensor_get(dx, 3 + j) == 0);
  ot_free(x), ot_free(y), ot_free(out), ot_free(dout), ot_free(dx);
}

static void test_scale_must_be_positive(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){2, 3}, 1, -1, 1, 0),
            *y = ot_rand(PD_F32, 2, (int64_t[]){2, 3}, 2, -1, 1, 0);
  pd_tensor *out = ot_out();
  const char *zero[] = {"scale", "f: 0", NULL}, *neg[] = {"scale", "f: -1.5", NULL};
  const char *msg = ot_run_fail("cos_sim", zero, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out, NULL, NULL}, NULL);
  assert_string_equal(msg, "attribute \"scale\" must be > 0, got 0");
  msg = ot_run_fail("cos_sim", neg, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out, NULL, NULL}, NULL);
  assert_string_equal(msg, "attribute \"scale\" must be > 0, got -1.5");
  ot_free(x), ot_free(y), ot_free(out);
}

static void test_shapes(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *x = ot_shaped(PD_F32, 2, (int64_t[]){-1, 5}), *y = ot_shaped(PD_F32, 2, (int64_t[]){1, 5});
  pd_tensor *out = ot_out(), *xn = ot_out(), *yn = ot_out();
  assert_int_equal(ot_infer("cos_sim", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out, xn, yn}, NULL, NULL),
                   PD_OK);
  ot_assert_dims(out, -1, 1);
  ot_assert_dims(xn, -1, 1);
  ot_assert_dims(yn, 1, 1);
  ot_free(y);
  y = ot_shaped(PD_F32, 2, (int64_t[]){-1, 5});
  assert_int_equal(ot_infer("cos_sim", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out, xn, yn}, NULL, NULL),
                   PD_OK);
  ot_assert_dims(yn, -1, 1);
  ot_free(x), ot_free(y);
  x = ot_shaped(PD_F32, 2, (int64_t[]){4, 5});
  y = ot_shaped(PD_F32, 2, (int64_t[]){3, 5});
  assert_int_equal(ot_infer("cos_sim", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out, xn, yn}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "X must be [N, D] and Y [N, D] or [1, D], got X [4, 5] and Y [3, 5]"));
  ot_free(x), ot_free(y), ot_free(out), ot_free(xn), ot_free(yn);
}

static void test_gradients(void **state) {
  (void)state;
  const char *scales[] = {"f: 1.0", "f: 3.0"};
  const bool both[] = {true, true};
  const int out_only[] = {1, 0, 0};
  for (int s = 0; s < 2; s++) {
    const char *attrs[] = {"scale", scales[s], NULL};
    pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){4, 5}, 41, -1, 1, 0);
    pd_tensor *y = ot_rand(PD_F64, 2, (int64_t[]){4, 5}, 42, -1, 1, 0);
    pd_tensor *y1 = ot_rand(PD_F64, 2, (int64_t[]){1, 5}, 43, -1, 1, 0);
    ot_gradcheck("cos_sim", attrs, (pd_tensor *[]){x, y}, 2, 3);  /* Out, XNorm, YNorm all weighted */
    ot_gradcheck("cos_sim", attrs, (pd_tensor *[]){x, y1}, 2, 3); /* broadcast Y [1, D] */
    ot_gradcheck_ex("cos_sim", attrs, (pd_tensor *[]){x, y1}, 2, 3, both, out_only, 1e-6);
    ot_free(x), ot_free(y), ot_free(y1);
  }
  /* one row each: N = 1 with Y [1, D] */
  pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){1, 3}, 44, -1, 1, 0),
            *y = ot_rand(PD_F64, 2, (int64_t[]){1, 3}, 45, -1, 1, 0);
  ot_gradcheck("cos_sim", NULL, (pd_tensor *[]){x, y}, 2, 3);
  ot_free(x), ot_free(y);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward_sizes),
      cmocka_unit_test(test_zero_row),
      cmocka_unit_test(test_scale_must_be_positive),
      cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
