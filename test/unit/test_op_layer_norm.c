/* test_op_layer_norm.c — layer_norm over the last dim and over the last
 * two, with Scale and Bias, with one of them, with none: forward against a
 * float64 reference in float32 and float64 (rows enough to be split among
 * threads); gradients of X, Scale and Bias against finite differences for
 * each of those paths; a NaN makes its own row NaN and leaves the others
 * finite; the load-time errors (axis out of range, a wrong Scale shape). */
#include "optest.h"

/* Reference: X [rows, d] normalised per row, then scale and bias. */
static void ref(const pd_tensor *x, int64_t rows, int64_t d, const pd_tensor *s, const pd_tensor *b, double eps,
                double *y) {
  for (int64_t r = 0; r < rows; r++) {
    double m = 0, v = 0;
    for (int64_t k = 0; k < d; k++) m += pd_tensor_get(x, r * d + k);
    m /= (double)d;
    for (int64_t k = 0; k < d; k++) v += pow(pd_tensor_get(x, r * d + k) - m, 2);
    v /= (double)d;
    for (int64_t k = 0; k < d; k++) {
      double o = (pd_tensor_get(x, r * d + k) - m) / sqrt(v + eps);
      y[r * d + k] = o * (s ? pd_tensor_get(s, k) : 1) + (b ? pd_tensor_get(b, k) : 0);
    }
  }
}

/* X [n, 3, 5]: axis -1 normalises rows of 5, axis 1 rows of 15. */
static void check_forward(pd_dtype dt, int64_t n, int axis, bool with_s, bool with_b) {
  int64_t d = axis == 1 ? 15 : 5, rows = n * 15 / d;
  int64_t pdims[2] = {3, 5};
  pd_tensor *x = ot_rand(dt, 3, (int64_t[]){n, 3, 5}, 3 + (uint64_t)n, -2, 4, 0);
  pd_tensor *s = with_s ? ot_rand(dt, axis == 1 ? 2 : 1, axis == 1 ? pdims : pdims + 1, 5, 0.5, 2, 0) : NULL;
  pd_tensor *b = with_b ? ot_rand(dt, axis == 1 ? 2 : 1, axis == 1 ? pdims : pdims + 1, 6, -1, 1, 0) : NULL;
  pd_tensor *y = ot_out();
  const char *attrs[] = {"axis", axis == 1 ? "i: 1" : "i: -1", "epsilon", "f: 0.001", NULL};
  ot_run("layer_norm", attrs, (pd_tensor *[]){x, s, b}, NULL, (pd_tensor *[]){y}, NULL);
  ot_assert_dims(y, n, 3, 5);
  assert_int_equal(y->dtype, dt);
  double *r = malloc(sizeof(double) * (size_t)(n * 15));
  ref(x, rows, d, s, b, 0.001, r);
  ot_assert_close(y, r, n * 15, dt == PD_F32 ? 2e-6 : 1e-11); /* Y near 0: xhat Scale + Bias cancels */
  free(r);
  ot_free(x), ot_free(s), ot_free(b), ot_free(y);
}

static void test_forward(void **state) {
  (void)state;
  const int64_t ns[] = {1, 4, 9000};
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < 3; i++)
      for (int axis = 1; axis <= 2; axis++)
        for (int sb = 0; sb < 4; sb++) check_forward(t ? PD_F64 : PD_F32, ns[i], axis, sb & 1, sb & 2);
}

static void test_gradients(void **state) {
  (void)state;
  int64_t pdims[2] = {3, 4};
  for (int axis = 1; axis <= 2; axis++)
    for (int sb = 0; sb < 4; sb++) {
      int nd = axis == 1 ? 2 : 1;
      pd_tensor *x = ot_rand(PD_F64, 3, (int64_t[]){2, 3, 4}, 9 + (uint64_t)sb, -2, 2, 0);
      pd_tensor *s = sb & 1 ? ot_rand(PD_F64, nd, pdims + 2 - nd, 10, 0.5, 2, 0) : NULL;
      pd_tensor *b = sb & 2 ? ot_rand(PD_F64, nd, pdims + 2 - nd, 11, -1, 1, 0) : NULL;
      const char *attrs[] = {"axis", axis == 1 ? "i: -2" : "i: 2", "epsilon", "f: 0.01", NULL};
      ot_gradcheck("layer_norm", attrs, (pd_tensor *[]){x, s, b}, 3, 1);
      ot_free(x), ot_free(s), ot_free(b);
    }
}

static void test_nan(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    pd_tensor *x = ot_rand(t ? PD_F64 : PD_F32, 2, (int64_t[]){3, 6}, 4, -1, 1, 0), *y = ot_out();
    pd_tensor_set(x, 8, NAN); /* row 1 */
    ot_run("layer_norm", NULL, (pd_tensor *[]){x, NULL, NULL}, NULL, (pd_tensor *[]){y}, NULL);
    for (int64_t i = 0; i < 18; i++) {
      double v = pd_tensor_get(y, i);
      if (i / 6 == 1 ? !isnan(v) : !isfinite(v)) fail_msg("Y[%lld] = %g", (long long)i, v);
    }
    ot_free(x), ot_free(y);
  }
}

static void test_errors(void **state) {
  (void)state;
  pd_tensor *x = ot_shaped(PD_F32, 3, (int64_t[]){-1, 3, 5}), *y = ot_out();
  const char *msg;
  const char *a3[] = {"axis", "i: 3", NULL}, *am4[] = {"axis", "i: -4", NULL}, *a0[] = {"axis", "i: 0", NULL};
  assert_int_equal(ot_infer("layer_norm", a3, (pd_tensor *[]){x, NULL, NULL}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "attribute \"axis\" is 3, out of range for X of shape [-1, 3, 5] (rank 3: -3 to 2)"));
  assert_int_equal(ot_infer("layer_norm", am4, (pd_tensor *[]){x, NULL, NULL}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                   PD_ERR_INPUT);
  /* axis 0 with a batch of -1: Scale's shape is unknown */
  pd_tensor *s0 = ot_out();
  s0->ndim = -1; /* undeclared */
  assert_int_equal(ot_infer("layer_norm", a0, (pd_tensor *[]){x, s0, NULL}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "input Scale needs the normalised dims of X (from axis 0) known"));
  /* a declared Scale of the wrong shape */
  pd_tensor *s = ot_shaped(PD_F32, 1, (int64_t[]){4});
  assert_int_equal(ot_infer("layer_norm", NULL, (pd_tensor *[]){x, s, NULL}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                   PD_ERR_INPUT);
  /* none: axis 0 normalises everything */
  assert_int_equal(ot_infer("layer_norm", a0, (pd_tensor *[]){x, NULL, NULL}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                   PD_OK);
  ot_free(x), ot_free(y), ot_free(s), ot_free(s0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),
      cmocka_unit_test(test_gradients),
      cmocka_unit_test(test_nan),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
