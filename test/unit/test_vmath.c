/* test_vmath.c — the float exp, sigmoid and tanh of lib/cpu/vmath.h
 * (softmax_with_cross_entropy's, the activation ops' and fc's on the CPU)
 * against float64 libm:
 *   - every 256th float bit pattern (2^24 values: both signs, subnormals,
 *     infinities, NaNs) is within 3 ulp of the exact value (an ulp of a
 *     float of the exact value's size; subnormal results 2^-149);
 *   - NaN gives NaN, the infinities saturate, tanh keeps -0's sign;
 *   - an element's bits do not depend on where it sits: whole vectors, the
 *     tail, every length 1..40 and offset, in place or not.
 * On a CPU without AVX2 (or the no-x86 build) the same checks hold libm to
 * the bound. */
#include "optest.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/vmath.h"

#define MAX_ULP 3.0
#define CHUNK 65536

typedef void vfun(const float *, float *, int64_t);

static double ref_sigmoid(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }

/* The error of y in ulps of a float of r's size. */
static double ulps(float y, double r) {
  if (isnan(r)) return isnan(y) ? 0 : INFINITY;
  if (isinf(r)) return (double)y == r ? 0 : INFINITY;
  double a = fabs(r), ulp;
  if (a >= 0x1.ffffffp127) return isinf(y) && (y > 0) == (r > 0) ? 0 : INFINITY; /* rounds past FLT_MAX */
  if (a < FLT_MIN) {
    ulp = ldexp(1, -149);
  } else {
    int e;
    frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
    ulp = ldexp(1, e - 24);
  }
  return fabs((double)y - r) / ulp;
}

static float from_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static void sweep(const char *name, vfun *f, double (*ref)(double)) {
  static float x[CHUNK], y[CHUNK];
  double worst = 0;
  float worst_x = 0;
  for (uint64_t base = 0; base < (1ull << 32); base += (uint64_t)CHUNK << 8) {
    for (int i = 0; i < CHUNK; i++) x[i] = from_bits((uint32_t)(base + ((uint64_t)i << 8) + 0x5b));
    f(x, y, CHUNK);
    for (int i = 0; i < CHUNK; i++) {
      double e = ulps(y[i], ref((double)x[i]));
      if (!(e <= worst)) worst = e, worst_x = x[i];
    }
  }
  print_message("%s: worst %.2f ulp at x = %.9g\n", name, worst, (double)worst_x);
  if (!(worst <= MAX_ULP)) fail_msg("%s: %.2f ulp at x = %.9g (bound %g)", name, worst, (double)worst_x, MAX_ULP);
}

static void test_sigmoid_ulp(void **state) {
  (void)state;
  sweep("sigmoid", pd_vsigmoid_f32, ref_sigmoid);
}

static void test_exp_ulp(void **state) {
  (void)state;
  sweep("exp", pd_vexp_f32, exp);
}

static void test_tanh_ulp(void **state) {
  (void)state;
  sweep("tanh", pd_vtanh_f32, tanh);
}

/* Where each function changes formula, and the special values. */
static void test_special(void **state) {
  (void)state;
  const float v[] = {NAN,        -NAN,        INFINITY, -INFINITY, 0.0f,       -0.0f,  0.625f,
                     -0.625f,    0.62499994f, 43.0f,    -43.0f,    43.000004f, 87.0f,  -87.0f,
                     -87.00001f, 88.7f,       -88.7f,   -103.0f,   -104.0f,    1e-30f, -1e-40f};
  const int n = (int)(sizeof v / sizeof v[0]);
  float ys[32], yt[32], ye[32];
  pd_vsigmoid_f32(v, ys, n);
  pd_vtanh_f32(v, yt, n);
  pd_vexp_f32(v, ye, n);
  for (int i = 0; i < n; i++) {
    double x = (double)v[i];
    if (isnan(x)) {
      assert_true(isnan(ys[i]) && isnan(yt[i]) && isnan(ye[i]));
      continue;
    }
    if (!(ulps(ys[i], ref_sigmoid(x)) <= MAX_ULP)) fail_msg("sigmoid(%.9g) = %.9g", x, (double)ys[i]);
    if (!(ulps(yt[i], tanh(x)) <= MAX_ULP)) fail_msg("tanh(%.9g) = %.9g", x, (double)yt[i]);
    if (!(ulps(ye[i], exp(x)) <= MAX_ULP)) fail_msg("exp(%.9g) = %.9g", x, (double)ye[i]);
  }
  assert_true(ye[2] == INFINITY && ye[3] == 0.0f && ye[4] == 1.0f && ye[5] == 1.0f);
  assert_true(ye[18] == 0.0f); /* exp(-104) rounds to 0 */
  assert_true(ys[2] == 1.0f && ys[3] == 0.0f && yt[2] == 1.0f && yt[3] == -1.0f);
  assert_true(ys[4] == 0.5f && ys[5] == 0.5f);
  assert_true(yt[4] == 0.0f && !signbit(yt[4]) && yt[5] == 0.0f && signbit(yt[5]));
  assert_true(yt[19] == 1e-30f); /* tanh(x) = x this small: relative, not absolute, accuracy */
}

/* The bits of an element, wherever it sits. */
static void test_position(void **state) {
  (void)state;
  enum { N = 64 };
  float x[N], whole[3][N];
  uint64_t s = 7;
  for (int i = 0; i < N; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 20 - 10); /* [-10, 10) */
  }
  x[5] = NAN, x[9] = 60.0f, x[13] = -100.0f, x[17] = 88.0f; /* lanes libm computes */
  vfun *fs[3] = {pd_vsigmoid_f32, pd_vtanh_f32, pd_vexp_f32};
  for (int k = 0; k < 3; k++) {
    fs[k](x, whole[k], N);
    for (int off = 0; off < 9; off++)
      for (int n = 1; n <= 40 && off + n <= N; n++) {
        float y[N], z[N];
        fs[k](x + off, y, n);
        memcpy(z, x + off, sizeof(float) * (size_t)n);
        fs[k](z, z, n); /* in place */
        for (int i = 0; i < n; i++) {
          assert_memory_equal(&y[i], &whole[k][off + i], sizeof(float));
          assert_memory_equal(&z[i], &whole[k][off + i], sizeof(float));
        }
      }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sigmoid_ulp), cmocka_unit_test(test_tanh_ulp), cmocka_unit_test(test_exp_ulp),
      cmocka_unit_test(test_special),     cmocka_unit_test(test_position),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
