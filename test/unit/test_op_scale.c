/* test_op_scale.c — scale: Out = scale * X + bias when bias_after_scale
 * (the default), Out = scale * (X + bias) otherwise; checked against a
 * float64 loop in float32 and float64 for 1, 3, 17 and 129 rows; defaults;
 * errors; gradient dX = scale * dOut by finite differences. */
#include "optest.h"

static void check_forward(pd_dtype dt, int64_t rows, double scale, double bias, int after) {
  pd_tensor *x = ot_rand(dt, 2, (int64_t[]){rows, 5}, 1, -10, 10, 0), *out = ot_out();
  char s[64], b[64];
  snprintf(s, sizeof s, "f: %.17g", scale);
  snprintf(b, sizeof b, "f: %.17g", bias);
  const char *attrs[] = {"scale", s, "bias", b, "bias_after_scale", after ? "b: true" : "b: false", NULL};
  ot_run("scale", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  assert_int_equal(out->ndim, 2);
  assert_int_equal(out->dims[0], rows);
  assert_int_equal(out->dims[1], 5);
  assert_int_equal(out->dtype, dt);
  int64_t n = rows * 5;
  double *ref = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    double v = pd_tensor_get(x, i);
    ref[i] = after ? scale * v + bias : scale * (v + bias);
  }
  /* compared absolutely below 1: a + b may cancel */
  double e = ot_max_err(out, ref, n, 1.0), tol = dt == PD_F32 ? 1e-6 : 1e-14;
  if (!(e <= tol)) fail_msg("scale %g bias %g: max error %g > %g", scale, bias, e, tol);
  free(ref);
  ot_free(x), ot_free(out);
}

static void test_forward(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++)
    for (int after = 0; after < 2; after++) {
      check_forward(PD_F32, rows[r], 0.0039215686, 0, after);
      check_forward(PD_F32, rows[r], -2.5, 0.75, after);
      check_forward(PD_F64, rows[r], -2.5, 0.75, after);
      check_forward(PD_F64, rows[r], 3, -1e3, after);
    }
}

/* scale 1, bias 0: Out = X exactly. */
static void test_defaults(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 1, (int64_t[]){17}, 2, -1, 1, 0), *out = ot_out();
  ot_run("scale", NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  for (int i = 0; i < 17; i++) assert_true(pd_tensor_get(out, i) == pd_tensor_get(x, i));
  ot_free(x), ot_free(out);
}

static void test_errors(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 1, (int64_t[]){3}, 2, -1, 1, 0), *xi = ot_rand(PD_U8, 1, (int64_t[]){3}, 2, 0, 9, 0);
  pd_tensor *out = ot_out();
  const char *msg = ot_run_fail("scale", NULL, (pd_tensor *[]){xi}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "input X must be float32 or float64, got uint8 (add a cast op)"));
  const char *bad[] = {"scale", "s: \"two\"", NULL};
  msg = ot_run_fail("scale", bad, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "attribute \"scale\" must be a float"));
  ot_free(x), ot_free(xi), ot_free(out);
}

static void test_gradients(void **state) {
  (void)state;
  const char *after[] = {"scale", "f: -1.5", "bias", "f: 0.25", NULL};
  const char *before[] = {"scale", "f: 2.5", "bias", "f: -3", "bias_after_scale", "b: false", NULL};
  pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){3, 4}, 3, -1, 1, 0);
  ot_gradcheck("scale", after, (pd_tensor *[]){x}, 1, 1);
  ot_gradcheck("scale", before, (pd_tensor *[]){x}, 1, 1);
  ot_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
