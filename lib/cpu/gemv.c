/* gemv.c — the one-row float product of batch-1 inference, c = alpha x B +
 * beta c with B [k, n] row-major, on AVX-512, or on AVX2 with FMA where the
 * CPU has no AVX-512 (lib/cpu/blas.c falls back to BLIS's gemv elsewhere).
 * The AVX2 kernels are the AVX-512 ones at 8 floats a vector: the same
 * blocks, walk and order of sums, so the AVX2 results do not depend on the
 * direction or the thread split either (they may differ from AVX-512's in
 * the last bits: lanes fold in another tree).
 *
 * Such a product streams the whole matrix and does two flops per element it
 * reads, so its speed is where the matrix comes from. Weights that just
 * exceed L2 (fashion_mlp's), read in the same order on every call, have each
 * line evicted shortly before it is needed again, so every call streams all
 * of them from L3. Here each call walks the rows in the opposite direction
 * to the thread's previous call, so it starts with what the previous one
 * read last, still in L2.
 *
 * Reversing the walk must not change the result, so the rows are cut into at
 * most PD_GEMV_BLOCKS blocks of consecutive rows; each block's sum (a
 * column of fused multiply-adds in row order) goes into its own partial row,
 * and the partials are added in block order at the end. An element's value
 * depends only on k (which fixes the blocks), never on the direction, the
 * columns' split across threads, or n. */
#include "cpu/gemv.h"

#include "base/arch.h"
#include "cpu/features.h"

#ifdef PD_X86
#include <immintrin.h>

#include "cpu/lanes8.h"

#define PD_GEMV_BLOCKS 16
#define PD_GEMV_MIN_ROWS 128 /* rows per block at least: fewer, and adding the partials shows */
#define PD_GEMV_COLS 512     /* columns per pass: the partials (16 x 512 floats) stay in L1 */

static _Thread_local unsigned tls_flip; /* the direction of this thread's next call */

/* p[0 : 16 U] = sum over rows r0..r1-1 of x_i B[i, 0 : 16 U], each column a
 * chain of fused multiply-adds in row order. U accumulators of 16 floats,
 * held in registers (the unroll pragma: GCC would keep them in memory). */
#define PANEL(U)                                                                                                      \
  __attribute__((target("avx512f"))) static void panel_##U(const float *x, int64_t incx, const float *b, int64_t ldb, \
                                                           int64_t r0, int64_t r1, float *p) {                        \
    __m512 acc[U];                                                                                                    \
    _Pragma("GCC unroll 16") for (int u = 0; u < U; u++) acc[u] = _mm512_setzero_ps();                                \
    for (int64_t i = r0; i < r1; i++) {                                                                               \
      const __m512 xi = _mm512_set1_ps(x[i * incx]);                                                                  \
      const float *row = b + i * ldb;                                                                                 \
      _Pragma("GCC unroll 16") for (int u = 0; u < U; u++) acc[u] =                                                   \
          _mm512_fmadd_ps(xi, _mm512_loadu_ps(row + 16 * u), acc[u]);                                                 \
    }                                                                                                                 \
    _Pragma("GCC unroll 16") for (int u = 0; u < U; u++) _mm512_storeu_ps(p + 16 * u, acc[u]);                        \
  }
PANEL(16)
PANEL(4)
PANEL(1)

/* the last w < 16 columns: the same chain, masked loads */
__attribute__((target("avx512f"))) static void panel_tail(const float *x, int64_t incx, const float *b, int64_t ldb,
                                                          int64_t r0, int64_t r1, int64_t w, float *p) {
  const __mmask16 m = (__mmask16)((1u << w) - 1);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = r0; i < r1; i++)
    acc = _mm512_fmadd_ps(_mm512_set1_ps(x[i * incx]), _mm512_maskz_loadu_ps(m, b + i * ldb), acc);
  _mm512_mask_storeu_ps(p, m, acc);
}

/* one block of rows over the w columns of a pass */
static void block(const float *x, int64_t incx, const float *b, int64_t ldb, int64_t r0, int64_t r1, int64_t w,
                  float *p) {
  int64_t j = 0;
  for (; j + 256 <= w; j += 256) panel_16(x, incx, b + j, ldb, r0, r1, p + j);
  for (; j + 64 <= w; j += 64) panel_4(x, incx, b + j, ldb, r0, r1, p + j);
  for (; j + 16 <= w; j += 16) panel_1(x, incx, b + j, ldb, r0, r1, p + j);
  if (j < w) panel_tail(x, incx, b + j, ldb, r0, r1, w - j, p + j);
}

/* c[0:w] = alpha (p[0] + p[1] + ... + p[nb-1]) + beta c, in block order */
__attribute__((target("avx512f"))) static void combine(const float *p, int64_t nb, int64_t w, float alpha, float beta,
                                                       float *c) {
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int64_t j = 0; j < w; j += 16) {
    const __mmask16 m = w - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (w - j)) - 1);
    __m512 s = _mm512_setzero_ps();
    for (int64_t q = 0; q < nb; q++) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, p + q * PD_GEMV_COLS + j));
    s = _mm512_mul_ps(va, s);
    if (beta != 0) /* beta 0: c is not read (it may hold anything, NaN included) */
      s = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m, c + j), s);
    _mm512_mask_storeu_ps(c + j, m, s);
  }
}

/* The dot form: 16 rows of B [n, k] at a time, one accumulator each (a
 * column of fused multiply-adds over k in steps of 16, the last step
 * masked), then the 16 accumulators folded into one vector of 16 sums by a
 * fixed tree. A row's sum depends only on k and on which group of 16 it is
 * in (groups start at row 0, and the last rows of n go one at a time), never
 * on the direction of the walk. */
__attribute__((target("avx512f"))) static inline __m512 fold2(__m512 a, __m512 b, __m512i lo, __m512i hi) {
  return _mm512_add_ps(_mm512_permutex2var_ps(a, lo, b), _mm512_permutex2var_ps(a, hi, b));
}

__attribute__((target("avx512f"))) static void dots_16(const float *x, const float *b, int64_t ldb, int64_t k,
                                                       float alpha, float beta, float *c) {
  __m512 acc[16];
  _Pragma("GCC unroll 16") for (int r = 0; r < 16; r++) acc[r] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m512 xv = _mm512_loadu_ps(x + i);
    _Pragma("GCC unroll 16") for (int r = 0; r < 16; r++) acc[r] =
        _mm512_fmadd_ps(_mm512_loadu_ps(b + r * ldb + i), xv, acc[r]);
  }
  if (i < k) {
    const __mmask16 m = (__mmask16)((1u << (k - i)) - 1);
    const __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
    _Pragma("GCC unroll 16") for (int r = 0; r < 16; r++) acc[r] =
        _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, b + r * ldb + i), xv, acc[r]);
  }
  /* each level pairs vectors: the even lanes of a half with those of the
   * other, so after four levels lane r holds row r's sum */
  const __m512i e8 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23),
                o8 = _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31),
                e4 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27),
                o4 = _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31),
                e2 = _mm512_setr_epi32(0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29),
                o2 = _mm512_setr_epi32(2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31),
                e1 = _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30),
                o1 = _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
  __m512 l1[8], l2[4], l3[2];
  _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) l1[r] = fold2(acc[r], acc[r + 8], e8, o8);
  _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) l2[r] = fold2(l1[r], l1[r + 4], e4, o4);
  _Pragma("GCC unroll 2") for (int r = 0; r < 2; r++) l3[r] = fold2(l2[r], l2[r + 2], e2, o2);
  __m512 s = _mm512_mul_ps(_mm512_set1_ps(alpha), fold2(l3[0], l3[1], e1, o1));
  if (beta != 0) s = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_loadu_ps(c), s);
  _mm512_storeu_ps(c, s);
}

/* one row: the same column of multiply-adds, then a lane sum */
__attribute__((target("avx512f"))) static void dots_1(const float *x, const float *b, int64_t k, float alpha,
                                                      float beta, float *c) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(b + i), _mm512_loadu_ps(x + i), acc);
  if (i < k) {
    const __mmask16 m = (__mmask16)((1u << (k - i)) - 1);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, b + i), _mm512_maskz_loadu_ps(m, x + i), acc);
  }
  float s = alpha * _mm512_reduce_add_ps(acc);
  *c = beta != 0 ? s + beta * *c : s;
}

/* ---- the same on AVX2 with FMA, 8 floats a vector ---- */

#define PANEL8(U)                                                                                             \
  __attribute__((target("avx2,fma"))) static void panel8_##U(const float *x, int64_t incx, const float *b,    \
                                                             int64_t ldb, int64_t r0, int64_t r1, float *p) { \
    __m256 acc[U];                                                                                            \
    _Pragma("GCC unroll 12") for (int u = 0; u < U; u++) acc[u] = _mm256_setzero_ps();                        \
    for (int64_t i = r0; i < r1; i++) {                                                                       \
      const __m256 xi = _mm256_set1_ps(x[i * incx]);                                                          \
      const float *row = b + i * ldb;                                                                         \
      _Pragma("GCC unroll 12") for (int u = 0; u < U; u++) acc[u] =                                           \
          _mm256_fmadd_ps(xi, _mm256_loadu_ps(row + 8 * u), acc[u]);                                          \
    }                                                                                                         \
    _Pragma("GCC unroll 12") for (int u = 0; u < U; u++) _mm256_storeu_ps(p + 8 * u, acc[u]);                 \
  }
PANEL8(12)
PANEL8(4)
PANEL8(1)

__attribute__((target("avx2,fma"))) static void panel8_tail(const float *x, int64_t incx, const float *b, int64_t ldb,
                                                            int64_t r0, int64_t r1, int64_t w, float *p) {
  const __m256i m = pd_lanes_below8(w);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = r0; i < r1; i++)
    acc = _mm256_fmadd_ps(_mm256_set1_ps(x[i * incx]), _mm256_maskload_ps(b + i * ldb, m), acc);
  _mm256_maskstore_ps(p, m, acc);
}

static void block8(const float *x, int64_t incx, const float *b, int64_t ldb, int64_t r0, int64_t r1, int64_t w,
                   float *p) {
  int64_t j = 0;
  for (; j + 96 <= w; j += 96) panel8_12(x, incx, b + j, ldb, r0, r1, p + j);
  for (; j + 32 <= w; j += 32) panel8_4(x, incx, b + j, ldb, r0, r1, p + j);
  for (; j + 8 <= w; j += 8) panel8_1(x, incx, b + j, ldb, r0, r1, p + j);
  if (j < w) panel8_tail(x, incx, b + j, ldb, r0, r1, w - j, p + j);
}

__attribute__((target("avx2,fma"))) static void combine8(const float *p, int64_t nb, int64_t w, float alpha, float beta,
                                                         float *c) {
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  for (int64_t j = 0; j < w; j += 8) {
    const __m256i m = pd_lanes_below8(w - j);
    __m256 s = _mm256_setzero_ps();
    for (int64_t q = 0; q < nb; q++) s = _mm256_add_ps(s, _mm256_maskload_ps(p + q * PD_GEMV_COLS + j, m));
    s = _mm256_mul_ps(va, s);
    if (beta != 0) s = _mm256_fmadd_ps(vb, _mm256_maskload_ps(c + j, m), s);
    _mm256_maskstore_ps(c + j, m, s);
  }
}

/* 8 rows of B [n, k]: one accumulator each over k, then folded by a fixed
 * tree (pairs of rows, pairs of pairs, the two halves) so that lane r
 * holds row r's sum */
__attribute__((target("avx2,fma"))) static void dots8_8(const float *x, const float *b, int64_t ldb, int64_t k,
                                                        float alpha, float beta, float *c) {
  __m256 acc[8];
  _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) acc[r] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) acc[r] =
        _mm256_fmadd_ps(_mm256_loadu_ps(b + r * ldb + i), xv, acc[r]);
  }
  if (i < k) {
    const __m256i m = pd_lanes_below8(k - i);
    const __m256 xv = _mm256_maskload_ps(x + i, m);
    _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) acc[r] =
        _mm256_fmadd_ps(_mm256_maskload_ps(b + r * ldb + i, m), xv, acc[r]);
  }
  const __m256 t0 = _mm256_hadd_ps(acc[0], acc[1]), t1 = _mm256_hadd_ps(acc[2], acc[3]);
  const __m256 t2 = _mm256_hadd_ps(acc[4], acc[5]), t3 = _mm256_hadd_ps(acc[6], acc[7]);
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3); /* rows 0-3 and 4-7, each lane half */
  __m256 s = _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
  s = _mm256_mul_ps(_mm256_set1_ps(alpha), s);
  if (beta != 0) s = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(c), s);
  _mm256_storeu_ps(c, s);
}

__attribute__((target("avx2,fma"))) static void dots8_1(const float *x, const float *b, int64_t k, float alpha,
                                                        float beta, float *c) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(b + i), _mm256_loadu_ps(x + i), acc);
  if (i < k) {
    const __m256i m = pd_lanes_below8(k - i);
    acc = _mm256_fmadd_ps(_mm256_maskload_ps(b + i, m), _mm256_maskload_ps(x + i, m), acc);
  }
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
  float s = alpha * _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
  *c = beta != 0 ? s + beta * *c : s;
}

#endif /* PD_X86 */

bool pd_gemv_dots_float(int64_t n, int64_t k, float alpha, const float *x, const float *b, int64_t ldb, float beta,
                        float *c) {
#ifndef PD_X86
  (void)n, (void)k, (void)alpha, (void)x, (void)b, (void)ldb, (void)beta, (void)c;
  return false;
#else
  const bool wide = pd_cpu_avx512f();
  if (!wide && !pd_cpu_avx2_fma()) return false;
  const int64_t lanes = wide ? 16 : 8, groups = n / lanes;
  const bool back = tls_flip++ & 1u;
  for (int64_t gg = 0; gg < groups; gg++) {
    const int64_t q = back ? groups - 1 - gg : gg;
    if (wide)
      dots_16(x, b + q * 16 * ldb, ldb, k, alpha, beta, c + q * 16);
    else
      dots8_8(x, b + q * 8 * ldb, ldb, k, alpha, beta, c + q * 8);
  }
  for (int64_t j = groups * lanes; j < n; j++)
    if (wide)
      dots_1(x, b + j * ldb, k, alpha, beta, c + j);
    else
      dots8_1(x, b + j * ldb, k, alpha, beta, c + j);
  return true;
#endif
}

bool pd_gemv_rows_float(int64_t n, int64_t k, float alpha, const float *x, int64_t incx, const float *b, int64_t ldb,
                        float beta, float *c) {
#ifndef PD_X86
  (void)n, (void)k, (void)alpha, (void)x, (void)incx, (void)b, (void)ldb, (void)beta, (void)c;
  return false;
#else
  const bool wide = pd_cpu_avx512f();
  if (!wide && !pd_cpu_avx2_fma()) return false;
  float part[PD_GEMV_BLOCKS * PD_GEMV_COLS] __attribute__((aligned(64)));
  int64_t rows = (k + PD_GEMV_BLOCKS - 1) / PD_GEMV_BLOCKS;
  if (rows < PD_GEMV_MIN_ROWS) rows = PD_GEMV_MIN_ROWS;
  const int64_t nb = (k + rows - 1) / rows, passes = (n + PD_GEMV_COLS - 1) / PD_GEMV_COLS;
  const bool back = tls_flip++ & 1u;
  for (int64_t pp = 0; pp < passes; pp++) { /* passes and blocks in reverse when going back */
    const int64_t pass = back ? passes - 1 - pp : pp, j0 = pass * PD_GEMV_COLS;
    const int64_t w = n - j0 < PD_GEMV_COLS ? n - j0 : PD_GEMV_COLS;
    for (int64_t bb = 0; bb < nb; bb++) {
      const int64_t q = back ? nb - 1 - bb : bb, r0 = q * rows, r1 = r0 + rows < k ? r0 + rows : k;
      (wide ? block : block8)(x, incx, b + j0, ldb, r0, r1, w, part + q * PD_GEMV_COLS);
    }
    (wide ? combine : combine8)(part, nb, w, alpha, beta, c + j0);
  }
  return true;
#endif
}
