/* test_smallgemm.c — lib/cpu/smallgemm.c's product for small matrices
 * (the Winograd convolution's): each element must be exactly its k
 * products summed in order with fused multiply-adds from 0 (fmaf in a
 * plain loop gives the same bits), for A as stored and transposed, column
 * counts with and without a tail of fewer than 16, k of 0 and 1; C is not
 * read (NaN before), nothing past its n columns is written and B's columns
 * past n are not used (NaN there). The product with B transposed adds to
 * C: C's value, then the k products in order. */
#include "optest.h"

#include <math.h>

#include "cpu/smallgemm.h"

static void test_small_product(void **state) {
  (void)state;
  if (!pd_sgemm_small_ok()) {
    float a[4] = {0}, b[1] = {0}, c[4] = {0};
    assert_false(pd_sgemm_small(4, 1, 1, a, 1, 4, b, 1, c, 1));
    skip(); /* no AVX2 with FMA: the callers use BLIS */
  }
  const int64_t shapes[][3] = {{32, 128, 32}, {64, 128, 64}, {4, 1, 1},   {8, 37, 5},   {12, 130, 0},
                               {4, 15, 3},    {16, 16, 7},   {28, 9, 33}, {64, 144, 32}}; /* m, n, k */
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
    const int64_t ldb = n + 3, ldc = n + 5, na = (m * k > 0 ? m * k : 1);
    float *a = malloc(sizeof *a * (size_t)na), *b = malloc(sizeof *b * (size_t)((k ? k : 1) * ldb));
    float *c = malloc(sizeof *c * (size_t)(m * ldc));
    for (int64_t i = 0; i < m * k; i++) a[i] = (float)((i * 37) % 29) / 29.0f - 0.45f;
    for (int64_t p = 0; p < k; p++)
      for (int64_t j = 0; j < ldb; j++) b[p * ldb + j] = j < n ? (float)((p * 7 + j * 13) % 31) / 31.0f - 0.5f : NAN;
    for (int ta = 0; ta < 2; ta++) {
      /* A [m, k]: rows k apart, or stored as its transpose [k, m] */
      const int64_t rsa = ta ? 1 : k, csa = ta ? m : 1;
      for (int64_t i = 0; i < m * ldc; i++) c[i] = NAN;
      assert_true(pd_sgemm_small(m, n, k, a, rsa, csa, b, ldb, c, ldc));
      for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
          float want = 0;
          for (int64_t p = 0; p < k; p++) want = fmaf(a[i * rsa + p * csa], b[p * ldb + j], want);
          if (memcmp(&want, &c[i * ldc + j], sizeof want))
            fail_msg("m %lld n %lld k %lld ta %d: c[%lld][%lld] = %.9g, want %.9g", (long long)m, (long long)n,
                     (long long)k, ta, (long long)i, (long long)j, c[i * ldc + j], want);
        }
        for (int64_t j = n; j < ldc; j++)
          if (!isnan(c[i * ldc + j]))
            fail_msg("m %lld n %lld: column %lld written", (long long)m, (long long)n, (long long)j);
      }
    }
    free(a), free(b), free(c);
  }
  /* m not a multiple of 4: refused, C untouched */
  float a[6] = {1, 2, 3, 4, 5, 6}, b[2] = {1, 1}, c[6] = {7, 7, 7, 7, 7, 7};
  assert_false(pd_sgemm_small(6, 1, 1, a, 1, 6, b, 1, c, 1));
  for (int i = 0; i < 6; i++) assert_true(c[i] == 7);
}

static void test_small_product_nt_add(void **state) {
  (void)state;
  if (!pd_sgemm_small_ok()) {
    float a[4] = {0}, b[8] = {0}, c[32] = {0}, t[8] = {0};
    assert_false(pd_sgemm_small_nt_add(4, 8, 1, a, 1, b, 1, c, 8, t));
    skip(); /* no AVX2 with FMA: the callers use BLIS */
  }
  const int64_t shapes[][3] = {{32, 32, 128}, {64, 32, 128}, {32, 64, 100}, {4, 8, 1},
                               {8, 24, 7},    {12, 8, 0},    {64, 64, 17},  {4, 40, 9}}; /* m, n, k */
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
    const int64_t lda = k + 3, ldb = k + 5, ldc = n + 7, kk = k ? k : 1;
    float *a = malloc(sizeof *a * (size_t)(m * lda)), *b = malloc(sizeof *b * (size_t)(n * ldb));
    float *c = malloc(sizeof *c * (size_t)(m * ldc)), *c0 = malloc(sizeof *c0 * (size_t)(m * ldc));
    float *t = malloc(sizeof *t * (size_t)(kk * n));
    for (int64_t i = 0; i < m * lda; i++) a[i] = i % lda < k ? (float)((i * 37) % 29) / 29.0f - 0.45f : NAN;
    for (int64_t i = 0; i < n * ldb; i++) b[i] = i % ldb < k ? (float)((i * 11) % 31) / 31.0f - 0.5f : NAN;
    for (int64_t i = 0; i < m * ldc; i++) c0[i] = c[i] = i % ldc < n ? (float)((i * 5) % 17) / 17.0f - 0.3f : NAN;
    for (int64_t i = 0; i < kk * n; i++) t[i] = NAN;
    assert_true(pd_sgemm_small_nt_add(m, n, k, a, lda, b, ldb, c, ldc, t));
    for (int64_t i = 0; i < m; i++) {
      for (int64_t j = 0; j < n; j++) {
        float want = c0[i * ldc + j];
        for (int64_t p = 0; p < k; p++) want = fmaf(a[i * lda + p], b[j * ldb + p], want);
        if (memcmp(&want, &c[i * ldc + j], sizeof want))
          fail_msg("m %lld n %lld k %lld: c[%lld][%lld] = %.9g, want %.9g", (long long)m, (long long)n, (long long)k,
                   (long long)i, (long long)j, c[i * ldc + j], want);
      }
      for (int64_t j = n; j < ldc; j++)
        if (!isnan(c[i * ldc + j]))
          fail_msg("m %lld n %lld: column %lld written", (long long)m, (long long)n, (long long)j);
    }
    free(a), free(b), free(c), free(c0), free(t);
  }
  /* m not a multiple of 4, n not of 8: refused, C untouched */
  float a[8 * 2] = {0}, b[12 * 2] = {0}, c[8 * 12], t[2 * 12];
  for (int i = 0; i < 8 * 12; i++) c[i] = 7;
  assert_false(pd_sgemm_small_nt_add(6, 8, 2, a, 2, b, 2, c, 12, t));
  assert_false(pd_sgemm_small_nt_add(8, 12, 2, a, 2, b, 2, c, 12, t));
  for (int i = 0; i < 8 * 12; i++) assert_true(c[i] == 7);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_small_product), cmocka_unit_test(test_small_product_nt_add)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
