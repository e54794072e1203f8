/* smallgemm.c — see smallgemm.h. A 4 x 16 block of C at a time in 8
 * AVX2 accumulators (two FMA units of 4 cycles' latency want 8 chains):
 * per step of p, a row of B's 16 columns in two loads and each of A's 4
 * elements broadcast, 8 FMAs. Blocks of 16 columns outside, of 4 rows
 * inside, so a 16-column panel of B stays in L1 while every row block
 * reads it. BLIS packs both operands every call, which for the Winograd
 * products (m 32, k 32, n 128: 131k multiply-adds) costs about as much as
 * the arithmetic: on a Zen 3 core (m, n, k) = (32, 128, 32) ran at 60
 * GFLOP/s through BLIS, 84 here; (64, 128, 64) at 81 and 88. The
 * products with B transposed (the Winograd filter gradient's Z V^T, k the
 * 128 tiles) transpose B first: a dot-product kernel reading both in
 * place reached only 53-58 GFLOP/s. */
#include "cpu/smallgemm.h"

#include "base/arch.h"
#include "cpu/features.h"

#ifdef PD_X86
#include <immintrin.h>

#include "cpu/lanes8.h"

#define AVX2 __attribute__((target("avx2,fma")))

/* C[i0 .. i0+3][j0 .. j0+15] (w of the 16 columns: 16, or fewer through
 * the masks m0, m1), from 0 or with add from C's values */
AVX2 static inline __attribute__((always_inline)) void block(int64_t k, const float *a, int64_t rsa, int64_t csa,
                                                             const float *b, int64_t ldb, float *c, int64_t ldc,
                                                             bool add, bool full, __m256i m0, __m256i m1) {
  __m256 r[8];
  for (int i = 0; i < 4; i++)
    for (int h = 0; h < 2; h++)
      r[2 * i + h] = !add   ? _mm256_setzero_ps()
                     : full ? _mm256_loadu_ps(c + i * ldc + 8 * h)
                            : _mm256_maskload_ps(c + i * ldc + 8 * h, h ? m1 : m0);
  __m256 c00 = r[0], c01 = r[1], c10 = r[2], c11 = r[3], c20 = r[4], c21 = r[5], c30 = r[6], c31 = r[7];
  const float *a0 = a, *a1 = a + rsa, *a2 = a + 2 * rsa, *a3 = a + 3 * rsa;
  for (int64_t p = 0; p < k; p++, b += ldb) {
    __m256 b0 = full ? _mm256_loadu_ps(b) : _mm256_maskload_ps(b, m0);
    __m256 b1 = full ? _mm256_loadu_ps(b + 8) : _mm256_maskload_ps(b + 8, m1);
    int64_t q = p * csa;
    __m256 x = _mm256_broadcast_ss(a0 + q);
    c00 = _mm256_fmadd_ps(x, b0, c00), c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a1 + q);
    c10 = _mm256_fmadd_ps(x, b0, c10), c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a2 + q);
    c20 = _mm256_fmadd_ps(x, b0, c20), c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a3 + q);
    c30 = _mm256_fmadd_ps(x, b0, c30), c31 = _mm256_fmadd_ps(x, b1, c31);
  }
  r[0] = c00, r[1] = c01, r[2] = c10, r[3] = c11, r[4] = c20, r[5] = c21, r[6] = c30, r[7] = c31;
  for (int i = 0; i < 4; i++, c += ldc) {
    if (full) {
      _mm256_storeu_ps(c, r[2 * i]), _mm256_storeu_ps(c + 8, r[2 * i + 1]);
    } else {
      _mm256_maskstore_ps(c, m0, r[2 * i]), _mm256_maskstore_ps(c + 8, m1, r[2 * i + 1]);
    }
  }
}

AVX2 static void run(int64_t m, int64_t n, int64_t k, const float *a, int64_t rsa, int64_t csa, const float *b,
                     int64_t ldb, float *c, int64_t ldc, bool add) {
  const __m256i all = _mm256_set1_epi32(-1);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int64_t i = 0; i < m; i += 4)
      block(k, a + i * rsa, rsa, csa, b + j, ldb, c + i * ldc + j, ldc, add, true, all, all);
  if (j < n) {
    __m256i m0 = pd_lanes_below8(n - j), m1 = pd_lanes_below8(n - j - 8);
    for (int64_t i = 0; i < m; i += 4)
      block(k, a + i * rsa, rsa, csa, b + j, ldb, c + i * ldc + j, ldc, add, false, m0, m1);
  }
}

/* t [k, n] = B^T for B [n, k] rows ldb apart, n a multiple of 8: 8 x 8
 * blocks through registers, the last k % 8 rows one element at a time */
AVX2 static void transpose(int64_t n, int64_t k, const float *b, int64_t ldb, float *t) {
  int64_t p = 0;
  for (; p + 8 <= k; p += 8)
    for (int64_t j = 0; j < n; j += 8) {
      __m256 r[8];
      for (int q = 0; q < 8; q++) r[q] = _mm256_loadu_ps(b + (j + q) * ldb + p);
      pd_tr8(r);
      for (int q = 0; q < 8; q++) _mm256_storeu_ps(t + (p + q) * n + j, r[q]);
    }
  for (; p < k; p++)
    for (int64_t j = 0; j < n; j++) t[p * n + j] = b[j * ldb + p];
}

bool pd_sgemm_small_ok(void) { return pd_cpu_avx2_fma(); }

bool pd_sgemm_small(int64_t m, int64_t n, int64_t k, const float *a, int64_t rsa, int64_t csa, const float *b,
                    int64_t ldb, float *c, int64_t ldc) {
  if (m % 4 || !pd_sgemm_small_ok()) return false;
  run(m, n, k, a, rsa, csa, b, ldb, c, ldc, false);
  return true;
}

bool pd_sgemm_small_nt_add(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                           float *c, int64_t ldc, float *t) {
  if (m % 4 || n % 8 || !pd_sgemm_small_ok()) return false;
  transpose(n, k, b, ldb, t);
  run(m, n, k, a, lda, 1, t, n, c, ldc, true);
  return true;
}

#else

bool pd_sgemm_small_ok(void) { return false; }

bool pd_sgemm_small(int64_t m, int64_t n, int64_t k, const float *a, int64_t rsa, int64_t csa, const float *b,
                    int64_t ldb, float *c, int64_t ldc) {
  (void)m, (void)n, (void)k, (void)a, (void)rsa, (void)csa, (void)b, (void)ldb, (void)c, (void)ldc;
  return false;
}

bool pd_sgemm_small_nt_add(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                           float *c, int64_t ldc, float *t) {
  (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb, (void)c, (void)ldc, (void)t;
  return false;
}

#endif
