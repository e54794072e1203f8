/* test_op_cast.c — cast: Out[i] = X[i] converted to `dtype`, for all 25
 * (from, to) pairs of float32, float64, int32, int64, uint8. To an integer
 * type: truncate toward zero, saturate at the type's range, NaN -> 0; to a
 * float type: the nearest value. Checked against that rule written out in
 * float64, random data of 1, 3, 17, 129 rows for float32 <-> float64; errors;
 * gradient dX = dOut converted to X's dtype (finite differences for
 * float64 -> float64; float32 dOut to float64 dX exactly); integer X has no
 * gradient kernel. */
#include "optest.h"

static const char *const names[] = {"float32", "float64", "int32", "int64", "uint8"};

/* The rule, written independently of the op. */
static double ref_convert(double v, pd_dtype to) {
  double lo, hi;
  switch (to) {
  case PD_F32:
    return (double)(float)v;
  case PD_F64:
    return v;
  case PD_I32:
    lo = -2147483648.0, hi = 2147483647.0;
    break;
  case PD_I64:
    lo = -9223372036854775808.0, hi = 9223372036854775807.0;
    break;
  default:
    lo = 0, hi = 255;
    break;
  }
  if (isnan(v)) return 0;
  v = trunc(v);
  return v < lo ? lo : v > hi ? hi : v;
}

static pd_tensor *run_cast(pd_tensor *x, pd_dtype to) {
  char a[32];
  snprintf(a, sizeof a, "s: \"%s\"", names[to]);
  const char *attrs[] = {"dtype", a, NULL};
  pd_tensor *out = ot_out();
  ot_run("cast", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  assert_int_equal(out->dtype, to);
  assert_true(pd_dims_equal(out->ndim, out->dims, x->ndim, x->dims));
  return out;
}

/* Values that probe each conversion: fractions both sides of 0, the edges
 * of every integer range and past them, infinities and NaN. */
static const double probes[] = {0,           0.5,          -0.5,         1.9,    -1.9,     7,         -7,
                                254.6,       255,          255.5,        256,    1e3,      -129,      2147483647.,
                                2147483648., -2147483648., -2147483649., 3e9,    -3e9,     1e18,      -1e18,
                                1e19,        -1e19,        1e300,        -1e300, INFINITY, -INFINITY, NAN};
#define N_PROBES ((int64_t)(sizeof probes / sizeof probes[0]))

static void test_all_pairs(void **state) {
  (void)state;
  for (int from = 0; from < PD_NUM_DTYPES; from++) {
    /* the probes as stored in X's dtype (saturated the same way) */
    pd_tensor *x = ot_tensor((pd_dtype)from, 1, (int64_t[]){N_PROBES});
    for (int64_t i = 0; i < N_PROBES; i++) {
      double v = ref_convert(probes[i], (pd_dtype)from);
      if (from == PD_I64 && fabs(v) >= 9.2e18) v = v < 0 ? -9.2e18 : 9.2e18; /* exactly representable */
      pd_tensor_set(x, i, v);
    }
    for (int to = 0; to < PD_NUM_DTYPES; to++) {
      pd_tensor *out = run_cast(x, (pd_dtype)to);
      for (int64_t i = 0; i < N_PROBES; i++) {
        double in = pd_tensor_get(x, i), want = ref_convert(in, (pd_dtype)to), got = pd_tensor_get(out, i);
        if (!(got == want || (isnan(got) && isnan(want))))
          fail_msg("cast %s -> %s of %.17g: expected %.17g, got %.17g", names[from], names[to], in, want, got);
      }
      ot_free(out);
    }
    ot_free(x);
  }
}

/* int64 -> int64 keeps every bit, even past 2^53. */
static void test_int64_exact(void **state) {
  (void)state;
  pd_tensor *x = ot_tensor(PD_I64, 1, (int64_t[]){3});
  int64_t *v = PD_DATA(x, int64_t);
  v[0] = INT64_MAX, v[1] = (1ll << 62) + 1, v[2] = INT64_MIN;
  pd_tensor *out = run_cast(x, PD_I64);
  assert_memory_equal(PD_DATA(out, int64_t), v, 3 * sizeof(int64_t));
  ot_free(out);
  out = run_cast(x, PD_I32);
  assert_int_equal(PD_DATA(out, int32_t)[0], INT32_MAX);
  assert_int_equal(PD_DATA(out, int32_t)[1], INT32_MAX);
  assert_int_equal(PD_DATA(out, int32_t)[2], INT32_MIN);
  ot_free(out), ot_free(x);
}

static void test_float_sizes(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++)
    for (int from = 0; from < 2; from++)
      for (int to = 0; to < PD_NUM_DTYPES; to++) {
        pd_tensor *x = ot_rand((pd_dtype)from, 2, (int64_t[]){rows[r], 5}, 3, -300, 300, 0);
        pd_tensor *out = run_cast(x, (pd_dtype)to);
        double *ref = malloc(sizeof(double) * (size_t)(rows[r] * 5));
        for (int64_t i = 0; i < rows[r] * 5; i++) ref[i] = ref_convert(pd_tensor_get(x, i), (pd_dtype)to);
        ot_assert_close(out, ref, rows[r] * 5, 0);
        free(ref);
        ot_free(x), ot_free(out);
      }
}

static void test_errors(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 1, (int64_t[]){3}, 1, -1, 1, 0), *out = ot_out();
  const char *msg = ot_run_fail("cast", NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  assert_string_equal(msg, "attribute \"dtype\" is required");
  const char *bad[] = {"dtype", "s: \"float16\"", NULL};
  msg = ot_run_fail("cast", bad, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "attribute \"dtype\" must be one of \"float32\", \"float64\", \"int32\", \"int64\", "
                              "\"uint8\", got \"float16\""));
  ot_free(x), ot_free(out);
}

static void test_gradients(void **state) {
  (void)state;
  const char *f64[] = {"dtype", "s: \"float64\"", NULL};
  pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){3, 4}, 9, -1, 1, 0);
  ot_gradcheck("cast", f64, (pd_tensor *[]){x}, 1, 1);
  /* float64 -> float32: dX is dOut (float32) widened */
  const char *f32[] = {"dtype", "s: \"float32\"", NULL};
  pd_tensor *y = ot_rand(PD_F32, 2, (int64_t[]){3, 4}, 10, -1, 1, 0);
  pd_tensor *dy = ot_rand(PD_F32, 2, (int64_t[]){3, 4}, 11, -1, 1, 0), *dx = ot_out();
  ot_run("cast_grad", f32, (pd_tensor *[]){x, y, dy}, NULL, (pd_tensor *[]){dx}, NULL);
  assert_int_equal(dx->dtype, PD_F64);
  for (int i = 0; i < 12; i++) assert_true(pd_tensor_get(dx, i) == pd_tensor_get(dy, i));
  ot_free(x), ot_free(y), ot_free(dy), ot_free(dx);
  /* integer inputs: no gradient kernel */
  const pd_op_def *g = pd_op_grad_def(pd_op_find("cast"));
  assert_non_null(g);
  for (int t = PD_I32; t <= PD_U8; t++) assert_null(pd_op_kernel(g, PD_CPU, (pd_dtype)t));
  assert_non_null(pd_op_kernel(g, PD_CPU, PD_F32));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_pairs), cmocka_unit_test(test_int64_exact), cmocka_unit_test(test_float_sizes),
      cmocka_unit_test(test_errors),    cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
