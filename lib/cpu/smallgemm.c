/* smallgemm.c — see smallgemm.h. A 4 x 16 block of C at a time in 8
 * AVX2 accumulators (two FMA units of 4 cycles' latency want 8 chains):
 * per step of p, a row of B's 16 columns in two loads and each of A's 4
 * elements broadcast, 8 FMAs. Blocks of 16 columns outside, of 4 rows
 * inside, so a 16-column panel of B stays in L1 while every row block
 * reads it. BLIS packs both operands every call, which for the Winograd
 * products (m 32, k 32, n 128: 131k multiply-adds) costs about as much as
 * the arithmetic: on a Zen 3 core (m, n, k) = (32, 128, 32) ran at 60
 * GFLOP/s through BLIS, 84 here; (64, 128, 64) at 81 and 88. */
#include "cpu/smallgemm.h"

#include "base/arch.h"
#include "cpu/features.h"

#ifdef PD_X86
#include <immintrin.h>

#include "cpu/lanes8.h"

#define AVX2 __attribute__((target("avx2,fma")))

/* C[i0 .. i0+3][j0 .. j0+15] (w of the 16 columns: 16, or fewer through
 * the masks m0, m1) */
AVX2 static inline __attribute__((always_inline)) void block(int64_t k, const float *a, int64_t rsa, int64_t csa,
                                                             const float *b, int64_t ldb, float *c, int64_t ldc,
                                                             bool full, __m256i m0, __m256i m1) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
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
  __m256 r[8] = {c00, c01, c10, c11, c20, c21, c30, c31};
  for (int i = 0; i < 4; i++, c += ldc) {
    if (full) {
      _mm256_storeu_ps(c, r[2 * i]), _mm256_storeu_ps(c + 8, r[2 * i + 1]);
    } else {
      _mm256_maskstore_ps(c, m0, r[2 * i]), _mm256_maskstore_ps(c + 8, m1, r[2 * i + 1]);
    }
  }
}

AVX2 static void run(int64_t m, int64_t n, int64_t k, const float *a, int64_t rsa, int64_t csa, const float *b,
                     int64_t ldb, float *c, int64_t ldc) {
  const __m256i all = _mm256_set1_epi32(-1);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int64_t i = 0; i < m; i += 4)
      block(k, a + i * rsa, rsa, csa, b + j, ldb, c + i * ldc + j, ldc, true, all, all);
  if (j < n) {
    __m256i m0 = pd_lanes_below8(n - j), m1 = pd_lanes_below8(n - j - 8);
    for (int64_t i = 0; i < m; i += 4) block(k, a + i * rsa, rsa, csa, b + j, ldb, c + i * ldc + j, ldc, false, m0, m1);
  }
}

bool pd_sgemm_small_ok(void) { return pd_cpu_avx2_fma(); }

bool pd_sgemm_small(int64_t m, int64_t n, int64_t k, const float *a, int64_t rsa, int64_t csa, const float *b,
                    int64_t ldb, float *c, int64_t ldc) {
  if (m % 4 || !pd_sgemm_small_ok()) return false;
  run(m, n, k, a, rsa, csa, b, ldb, c, ldc);
  return true;
}

#else

bool pd_sgemm_small_ok(void) { return false; }

bool pd_sgemm_small(int64_t m, int64_t n, int64_t k, const float *a, int64_t rsa, int64_t csa, const float *b,
                    int64_t ldb, float *c, int64_t ldc) {
  (void)m, (void)n, (void)k, (void)a, (void)rsa, (void)csa, (void)b, (void)ldb, (void)c, (void)ldc;
  return false;
}

#endif
