/* vmath.h — float exp, sigmoid and tanh over arrays, 8 elements at a time
 * on AVX2 with FMA (softmax_with_cross_entropy, the activation ops and fc's
 * fused activation), and the 8-wide exp those and the fused recurrent
 * cells share (and its 16-wide twin for AVX-512).
 *
 * libm's expf and tanhf are a call per element: the activation ops spent
 * ~20 ns an element in them, as long as the whole fc before them. Here an
 * element is a few fused multiply-adds and a division:
 *   exp:     Cephes' expf (range reduction by ln 2, degree-6 polynomial)
 *   sigmoid: e = exp(-|x|), 1 / (1 + e) for x >= 0, e / (1 + e) below
 *   tanh:    Cephes' tanhf: for |x| < 0.625 x + x^3 P(x^2), else
 *            1 - 2 / (exp(2|x|) + 1) with x's sign
 * Each result is within 3 ulp of the exact value (test_vmath.c sweeps
 * 2^24 values over the whole range against float64 libm). An element's
 * value depends on its input only, never on its position, n or the thread
 * split: lanes whose input lies outside the polynomial's range (|x| > 87
 * for exp and sigmoid, > 43 for tanh: results 0, 1 or -1, overflowing, or
 * underflowing to subnormals) or is a NaN are computed by libm, one element
 * at a time. On
 * a CPU without AVX2 and FMA every element goes to libm. */
#ifndef PD_VMATH_H
#define PD_VMATH_H

#include <stdint.h>

#include "base/arch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[i] = exp(x[i]), sigmoid(x[i]), tanh(x[i]); y may be x. */
void pd_vexp_f32(const float *x, float *y, int64_t n);
void pd_vsigmoid_f32(const float *x, float *y, int64_t n);
void pd_vtanh_f32(const float *x, float *y, int64_t n);

#ifdef __cplusplus
}
#endif

#if defined(PD_X86) && !defined(__CUDACC__)
#include <immintrin.h>

/* exp of 8 floats (Cephes' expf, about 1 ulp for |x| <= 87); inputs beyond
 * +-88 are taken as +-88 and a NaN stays NaN. FMA rounds once where a
 * scalar version would round twice. */
__attribute__((target("avx2,fma"))) static inline __m256 pd_exp8(__m256 x) {
  /* min and max return their second operand where one is NaN: a NaN x
   * goes through as NaN, and so does every value made from it */
  __m256 v = _mm256_max_ps(_mm256_set1_ps(-88.0f), _mm256_min_ps(_mm256_set1_ps(88.0f), x));
  __m256 fn = _mm256_round_ps(_mm256_mul_ps(v, _mm256_set1_ps(1.44269504088896341f)),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(fn, _mm256_set1_ps(0.693359375f), v);
  r = _mm256_fmadd_ps(fn, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i n = _mm256_add_epi32(_mm256_cvtps_epi32(fn), _mm256_set1_epi32(127));
  return _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(n, 23)));
}
/* pd_exp8 on 16 floats (AVX-512F): the same operations on every lane, so
 * the same bits as pd_exp8 gives that lane. */
__attribute__((target("avx512f"))) static inline __m512 pd_exp16(__m512 x) {
  __m512 v = _mm512_max_ps(_mm512_set1_ps(-88.0f), _mm512_min_ps(_mm512_set1_ps(88.0f), x));
  __m512 fn = _mm512_roundscale_ps(_mm512_mul_ps(v, _mm512_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693359375f), v);
  r = _mm512_fmadd_ps(fn, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  __m512i n = _mm512_add_epi32(_mm512_cvtps_epi32(fn), _mm512_set1_epi32(127));
  return _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(n, 23)));
}
#endif

#endif
