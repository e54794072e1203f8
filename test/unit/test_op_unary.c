/* test_op_unary.c — leaky_relu, gelu (erf and tanh), softplus and clip,
 * element by element: forward against float64 formulas in float32 and
 * float64, over rows that fill the threads' ranges and the tails; a NaN
 * gives NaN (clip of NaN too) and the infinities what they should;
 * gradients against finite differences for every attribute path (inputs
 * kept off the kinks); the load-time errors (clip's min > max, an integer
 * input, an unknown approximation). */
#include "optest.h"

typedef struct ucase {
  const char *type;
  const char *attrs[5];
} ucase;

static const ucase cases[] = {
    {"leaky_relu", {NULL}},
    {"leaky_relu", {"alpha", "f: 0.2", NULL}},
    {"gelu", {NULL}},
    {"gelu", {"approximate", "s: \"tanh\"", NULL}},
    {"softplus", {NULL}},
    {"clip", {"min", "f: -1", "max", "f: 0.5", NULL}},
    {"clip", {"min", "f: -1", NULL}},
    {"clip", {"max", "f: 0.5", NULL}},
    {"clip", {NULL}},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static double ref(int k, double x) {
  switch (k) {
  case 0:
    return x > 0 ? x : 0.01 * x;
  case 1:
    return x > 0 ? x : 0.2 * x;
  case 2:
    return 0.5 * x * erfc(-x / sqrt(2.0));
  case 3:
    return x / (1 + exp(-2 * sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); /* 0.5 x (1 + tanh u) */
  case 4:
    return x > 30 ? x : x < -30 ? exp(x) : log1p(exp(x));
  case 5:
    return x < -1 ? -1 : x > 0.5 ? 0.5 : x;
  case 6:
    return x < -1 ? -1 : x;
  case 7:
    return x > 0.5 ? 0.5 : x;
  default:
    return x;
  }
}

static void check_forward(int k, pd_dtype dt, int64_t rows) {
  pd_tensor *x = ot_rand(dt, 2, (int64_t[]){rows, 9}, 7 + (uint64_t)rows, -6, 6, 0), *out = ot_out();
  ot_run(cases[k].type, cases[k].attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  ot_assert_dims(out, rows, 9);
  assert_int_equal(out->dtype, dt);
  double *r = malloc(sizeof(double) * (size_t)(rows * 9));
  for (int64_t i = 0; i < rows * 9; i++) r[i] = ref(k, pd_tensor_get(x, i));
  double e = ot_max_err(out, r, rows * 9, 1e-6);
  if (!(e <= (dt == PD_F32 ? 2e-6 : 1e-13)))
    fail_msg("%s case %d %s: max relative error %g", cases[k].type, k, pd_dtype_name(dt), e);
  free(r);
  ot_free(x), ot_free(out);
}

static void test_forward(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 7500}; /* the last is split among threads */
  for (int k = 0; k < N_CASES; k++)
    for (int r = 0; r < 4; r++) {
      check_forward(k, PD_F32, rows[r]);
      check_forward(k, PD_F64, rows[r]);
    }
}

/* NaN in, NaN out, for every op and path; the infinities and large values
 * where the formulas could overflow (softplus) or lose the result. */
static void test_nan_inf(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    pd_tensor *x = ot_tensor(dt, 1, (int64_t[]){3});
    pd_tensor_set(x, 0, NAN), pd_tensor_set(x, 1, -NAN), pd_tensor_set(x, 2, 0.25);
    for (int k = 0; k < N_CASES; k++) {
      pd_tensor *out = ot_out();
      ot_run(cases[k].type, cases[k].attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
      for (int i = 0; i < 2; i++)
        if (!isnan(pd_tensor_get(out, i)))
          fail_msg("%s case %d: NaN in gave %g", cases[k].type, k, pd_tensor_get(out, i));
      assert_true(isfinite(pd_tensor_get(out, 2)));
      ot_free(out);
    }
    ot_free(x);
    const double v[] = {-INFINITY, -1000, -50, 50, 1000, INFINITY};
    x = ot_tensor(dt, 1, (int64_t[]){6});
    for (int i = 0; i < 6; i++) pd_tensor_set(x, i, v[i]);
    const int finite_cases[] = {0, 1, 4, 5, 6, 7, 8}; /* gelu(-inf) is -inf * 0, NaN in PyTorch too */
    for (int c = 0; c < 7; c++) {
      int k = finite_cases[c];
      pd_tensor *out = ot_out();
      ot_run(cases[k].type, cases[k].attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
      double r[6];
      for (int i = 0; i < 6; i++) r[i] = ref(k, v[i]);
      ot_assert_close(out, r, 6, 1e-7);
      ot_free(out);
    }
    ot_free(x);
  }
}

static void test_gradients(void **state) {
  (void)state;
  for (int k = 0; k < N_CASES; k++) {
    pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){5, 7}, 11 + (uint64_t)k, -3, 3, 0.05);
    for (int64_t i = 0; i < 35; i++) { /* off clip's bounds */
      double v = pd_tensor_get(x, i);
      if (fabs(v + 1) < 0.05 || fabs(v - 0.5) < 0.05) pd_tensor_set(x, i, v + 0.1);
    }
    ot_gradcheck(cases[k].type, cases[k].attrs, (pd_tensor *[]){x}, 1, 1);
    ot_free(x);
  }
}

/* At clip's bounds the gradient passes (PyTorch's clamp); leaky_relu's at 0
 * is alpha; a NaN input's is 0 for clip. */
static void test_grad_edges(void **state) {
  (void)state;
  pd_tensor *x = ot_tensor(PD_F64, 1, (int64_t[]){4}), *y = ot_out(), *dy = ot_tensor(PD_F64, 1, (int64_t[]){4});
  const double xv[] = {-1, 0.5, 0, NAN};
  for (int i = 0; i < 4; i++) pd_tensor_set(x, i, xv[i]), pd_tensor_set(dy, i, 3);
  pd_tensor *dx = ot_out();
  ot_run("clip", cases[5].attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  ot_run("clip_grad", cases[5].attrs, (pd_tensor *[]){x, y, dy}, NULL, (pd_tensor *[]){dx}, NULL);
  assert_true(pd_tensor_get(dx, 0) == 3 && pd_tensor_get(dx, 1) == 3 && pd_tensor_get(dx, 2) == 3);
  assert_true(pd_tensor_get(dx, 3) == 0);
  ot_free(y), ot_free(dx);
  y = ot_out(), dx = ot_out();
  ot_run("leaky_relu", cases[1].attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  ot_run("leaky_relu_grad", cases[1].attrs, (pd_tensor *[]){x, y, dy}, NULL, (pd_tensor *[]){dx}, NULL);
  assert_true(fabs(pd_tensor_get(dx, 2) - 0.6) < 1e-15 && pd_tensor_get(dx, 1) == 3);
  ot_free(x), ot_free(y), ot_free(dy), ot_free(dx);
}

static void test_errors(void **state) {
  (void)state;
  pd_tensor *xi = ot_rand(PD_I32, 1, (int64_t[]){3}, 1, -5, 5, 0), *x = ot_rand(PD_F32, 1, (int64_t[]){3}, 1, -5, 5, 0);
  pd_tensor *out = ot_out();
  for (int k = 0; k < N_CASES; k++) {
    const char *msg = ot_run_fail(cases[k].type, cases[k].attrs, (pd_tensor *[]){xi}, NULL, (pd_tensor *[]){out}, NULL);
    assert_non_null(strstr(msg, "input X must be float32 or float64, got int32"));
  }
  const char *bounds[] = {"min", "f: 1", "max", "f: 0.5", NULL};
  const char *msg = ot_run_fail("clip", bounds, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "attribute \"min\" (1) must be <= attribute \"max\" (0.5)"));
  const char *nan_min[] = {"min", "f: nan", NULL};
  msg = ot_run_fail("clip", nan_min, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "must be <= attribute \"max\""));
  const char *approx[] = {"approximate", "s: \"erf\"", NULL};
  msg = ot_run_fail("gelu", approx, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "\"none\", \"tanh\""));
  ot_free(xi), ot_free(x), ot_free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),    cmocka_unit_test(test_nan_inf), cmocka_unit_test(test_gradients),
      cmocka_unit_test(test_grad_edges), cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
