/* test_op_fill.c — the ops that make a tensor from attributes alone:
 *   fill_constant:   Out[i] = value, dims `shape`, any dtype
 *   uniform_random:  Out[i] ~ U[min, max)
 *   gaussian_random: Out[i] ~ N(mean, std^2)
 * The random ones draw from the run's seed (per op and step) or from the
 * `seed` attribute: the same seed gives the same numbers, another seed other
 * numbers; over 100k draws the sample mean and standard deviation lie within
 * 5 standard errors of the distribution's. */
#include "optest.h"

static void expect_dims(const pd_tensor *t, int ndim, const int64_t *dims) {
  char a[128], b[128];
  if (!pd_dims_equal(t->ndim, t->dims, ndim, dims))
    fail_msg("expected shape %s, got %s", pd_dims_str(ndim, dims, a, sizeof a),
             pd_dims_str(t->ndim, t->dims, b, sizeof b));
}

/* Runs a no-input op under a given run seed and step. */
static pd_tensor *run_seeded(const char *type, const char *const *attrs, uint64_t seed, int64_t step) {
  pd_tensor *out = ot_out();
  pd_opcall call;
  pd_error err = {0};
  pd_exec exec = {.training = true, .seed = seed, .step = step, .threads = 1};
  pd_status st = pd_opcall_init(&call, type, attrs, NULL, NULL, (pd_tensor *[]){out}, NULL, &err);
  if (!st) st = pd_opcall_run(&call, &exec, &err);
  pd_opcall_free(&call);
  if (st) fail_msg("%s: %s", type, err.msg);
  return out;
}

static bool same_values(const pd_tensor *a, const pd_tensor *b) {
  return pd_tensor_numel(a) == pd_tensor_numel(b) &&
         memcmp(pd_tensor_data(a), pd_tensor_data(b), pd_tensor_bytes(a)) == 0;
}

/* ---- fill_constant ---- */

static void test_fill_constant(void **state) {
  (void)state;
  const char *dts[] = {"float32", "float64", "int32", "int64", "uint8"};
  const char *vals[] = {"f: -2.5", "f: 0.1", "f: -7", "i: 123456789012", "f: 255"};
  const double want[] = {-2.5, 0.1, -7, 123456789012.0, 255};
  const int64_t rows[] = {1, 3, 17, 129};
  for (int t = 0; t < 5; t++)
    for (int r = 0; r < 4; r++) {
      char shape[64], dt[32];
      snprintf(shape, sizeof shape, "ints: [%lld, 3]", (long long)rows[r]);
      snprintf(dt, sizeof dt, "s: \"%s\"", dts[t]);
      const char *attrs[] = {"shape", shape, "dtype", dt, "value", vals[t], NULL};
      pd_tensor *out = run_seeded("fill_constant", attrs, 1, 0);
      expect_dims(out, 2, (int64_t[]){rows[r], 3});
      assert_int_equal(out->dtype, (pd_dtype)t);
      double w = t == PD_F32 ? (double)(float)want[t] : want[t];
      for (int64_t i = 0; i < rows[r] * 3; i++)
        if (pd_tensor_get(out, i) != w) fail_msg("%s [%lld]: %g != %g", dts[t], (long long)i, pd_tensor_get(out, i), w);
      ot_free(out);
    }
  /* defaults: float32 zeros; an empty shape is a scalar */
  const char *scalar[] = {"shape", "ints: []", NULL};
  pd_tensor *out = run_seeded("fill_constant", scalar, 1, 0);
  assert_int_equal(out->ndim, 0);
  assert_int_equal(out->dtype, PD_F32);
  assert_true(pd_tensor_get(out, 0) == 0);
  ot_free(out);
}

static void test_fill_constant_errors(void **state) {
  (void)state;
  pd_tensor *out = ot_out();
  struct {
    const char *const attrs[7];
    const char *msg;
  } cases[] = {
      {{"shape", "ints: [2]", "dtype", "s: \"int32\"", "value", "f: 3.5", NULL},
       "value 3.5 cannot be stored as int32: it must be a whole number in [-2147483648, 2147483647]"},
      {{"shape", "ints: [2]", "dtype", "s: \"uint8\"", "value", "f: 256", NULL},
       "value 256 cannot be stored as uint8: it must be a whole number in [0, 255]"},
      {{"shape", "ints: [2]", "dtype", "s: \"int64\"", "value", "f: nan", NULL}, "value nan cannot be stored as int64"},
      {{"shape", "ints: [-1, 3]", NULL}, "attribute \"shape\": every element must be >= 0, got [-1, 3]"},
      {{"shape", "ints: [2]", "dtype", "s: \"bool\"", NULL}, "attribute \"dtype\" must be one of \"float32\""},
      {{"value", "f: 1", NULL}, "attribute \"shape\" is required"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *msg = ot_run_fail("fill_constant", cases[i].attrs, NULL, NULL, (pd_tensor *[]){out}, NULL);
    if (!strstr(msg, cases[i].msg)) fail_msg("case %zu: expected \"%s\" in \"%s\"", i, cases[i].msg, msg);
  }
  ot_free(out);
}

/* ---- random ops ---- */

static void moments(const pd_tensor *t, double *mean, double *std) {
  int64_t n = pd_tensor_numel(t);
  double s = 0, ss = 0;
  for (int64_t i = 0; i < n; i++) s += pd_tensor_get(t, i);
  *mean = s / (double)n;
  for (int64_t i = 0; i < n; i++) ss += (pd_tensor_get(t, i) - *mean) * (pd_tensor_get(t, i) - *mean);
  *std = sqrt(ss / (double)(n - 1));
}

static void test_uniform_statistics(void **state) {
  (void)state;
  const double lo = -2, hi = 3, n = 100000;
  for (int t = 0; t < 2; t++) {
    const char *attrs[] = {
        "shape", "ints: [100, 1000]", "dtype", t ? "s: \"float64\"" : "s: \"float32\"", "min", "f: -2", "max", "f: 3",
        NULL};
    pd_tensor *out = run_seeded("uniform_random", attrs, 7, 0);
    expect_dims(out, 2, (int64_t[]){100, 1000});
    assert_int_equal(out->dtype, t ? PD_F64 : PD_F32);
    for (int64_t i = 0; i < (int64_t)n; i++) {
      double v = pd_tensor_get(out, i);
      if (!(v >= lo && v <= hi)) fail_msg("value %g outside [%g, %g)", v, lo, hi);
    }
    double mean, std, sd = (hi - lo) / sqrt(12); /* U's standard deviation */
    moments(out, &mean, &std);
    /* std error of the mean: sd / sqrt(n); of the std: about sd * sqrt(0.8 / 4n)
     * for a uniform (kurtosis 1.8) — within 5 of them */
    if (fabs(mean - (lo + hi) / 2) > 5 * sd / sqrt(n)) fail_msg("mean %g, expected %g", mean, (lo + hi) / 2);
    if (fabs(std - sd) > 5 * sd * sqrt(0.8 / (4 * n))) fail_msg("std %g, expected %g", std, sd);
    ot_free(out);
  }
}

static void test_gaussian_statistics(void **state) {
  (void)state;
  const double mu = 1.5, sigma = 2, n = 100000;
  for (int t = 0; t < 2; t++) {
    const char *attrs[] = {"shape", "ints: [100000]", "dtype", t ? "s: \"float64\"" : "s: \"float32\"",
                           "mean",  "f: 1.5",         "std",   "f: 2",
                           NULL};
    pd_tensor *out = run_seeded("gaussian_random", attrs, 7, 0);
    assert_int_equal(out->dtype, t ? PD_F64 : PD_F32);
    double mean, std;
    moments(out, &mean, &std);
    if (fabs(mean - mu) > 5 * sigma / sqrt(n)) fail_msg("mean %g, expected %g", mean, mu);
    if (fabs(std - sigma) > 5 * sigma / sqrt(2 * n)) fail_msg("std %g, expected %g", std, sigma);
    /* and the shape: about 68.27% within one std */
    int64_t inside = 0;
    for (int64_t i = 0; i < (int64_t)n; i++) inside += fabs(pd_tensor_get(out, i) - mu) < sigma;
    double p = 0.682689492, frac = (double)inside / n;
    if (fabs(frac - p) > 5 * sqrt(p * (1 - p) / n)) fail_msg("%g within one std, expected %g", frac, p);
    ot_free(out);
  }
}

static void test_reproducible(void **state) {
  (void)state;
  const char *types[] = {"uniform_random", "gaussian_random"};
  for (int k = 0; k < 2; k++) {
    /* seed 0: the run's seed decides */
    const char *run[] = {"shape", "ints: [3, 17]", NULL};
    pd_tensor *a = run_seeded(types[k], run, 42, 3), *b = run_seeded(types[k], run, 42, 3);
    pd_tensor *c = run_seeded(types[k], run, 43, 3), *d = run_seeded(types[k], run, 42, 4);
    assert_true(same_values(a, b));
    assert_false(same_values(a, c)); /* another run seed */
    assert_false(same_values(a, d)); /* the next step */
    ot_free(a), ot_free(b), ot_free(c), ot_free(d);
    /* a fixed seed attribute: the same numbers whatever the run */
    const char *s5[] = {"shape", "ints: [3, 17]", "seed", "i: 5", NULL};
    const char *s6[] = {"shape", "ints: [3, 17]", "seed", "i: 6", NULL};
    a = run_seeded(types[k], s5, 42, 3), b = run_seeded(types[k], s5, 1, 0), c = run_seeded(types[k], s6, 42, 3);
    assert_true(same_values(a, b));
    assert_false(same_values(a, c));
    ot_free(a), ot_free(b), ot_free(c);
  }
  assert_true(pd_op_find("uniform_random")->random);
  assert_true(pd_op_find("gaussian_random")->random);
}

static void test_random_errors(void **state) {
  (void)state;
  pd_tensor *out = ot_out();
  struct {
    const char *type;
    const char *const attrs[7];
    const char *msg;
  } cases[] = {
      {"gaussian_random", {"shape", "ints: [2]", "std", "f: 0", NULL}, "attribute \"std\" must be > 0, got 0"},
      {"gaussian_random", {"shape", "ints: [2]", "mean", "f: inf", NULL}, "mean and std must be finite, got mean inf"},
      {"uniform_random",
       {"shape", "ints: [2]", "min", "f: 2", "max", "f: 1", NULL},
       "min and max must be finite with min <= max, got min 2 and max 1"},
      {"uniform_random",
       {"shape", "ints: [2]", "dtype", "s: \"int32\"", NULL},
       "attribute \"dtype\" must be one of \"float32\", \"float64\", got \"int32\""},
      {"uniform_random", {"shape", "ints: [2]", "seed", "i: -1", NULL}, "attribute \"seed\" must be >= 0, got -1"},
      {"gaussian_random", {"shape", "ints: [2, -1]", NULL}, "attribute \"shape\": every element must be >= 0"},
      {"uniform_random", {NULL}, "attribute \"shape\" is required"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *msg = ot_run_fail(cases[i].type, cases[i].attrs, NULL, NULL, (pd_tensor *[]){out}, NULL);
    if (!strstr(msg, cases[i].msg)) fail_msg("case %zu: expected \"%s\" in \"%s\"", i, cases[i].msg, msg);
  }
  ot_free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fill_constant),      cmocka_unit_test(test_fill_constant_errors),
      cmocka_unit_test(test_uniform_statistics), cmocka_unit_test(test_gaussian_statistics),
      cmocka_unit_test(test_reproducible),       cmocka_unit_test(test_random_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
