/* rnn_avx2.h — the fused recurrent cells' float activations 8 at a time on
 * AVX2 with FMA (lstm.c and gru.c), on cpu/vmath.h's exp: the same
 * formulas as the scalar pd_rnn_sigmoid_float and pd_rnn_tanh_float
 * (rnn_core.h), so a lane and the scalar tail agree to an ulp or two. A NaN
 * stays NaN. Callers check pd_rnn_avx2() first. */
#ifndef PD_OPS_RNN_AVX2_H
#define PD_OPS_RNN_AVX2_H

#include "base/arch.h"

#ifdef PD_X86
#include <immintrin.h>

#include "cpu/vmath.h"

__attribute__((target("avx2,fma"))) static inline __m256 pd_rnn_sigmoid8(__m256 x) {
  __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, pd_exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}
__attribute__((target("avx2,fma"))) static inline __m256 pd_rnn_tanh8(__m256 x) {
  __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(one, pd_exp8(_mm256_add_ps(x, x)))));
}
/* x bounded to [-b, b] (nb = -b); a NaN stays NaN (min and max return
 * their second operand when one is NaN) */
__attribute__((target("avx2,fma"))) static inline __m256 pd_rnn_bound8(__m256 x, __m256 b, __m256 nb) {
  return _mm256_max_ps(nb, _mm256_min_ps(b, x));
}
/* pd_rnn_keep 8 at a time: 0 where a kept gate value a sits at a clip
 * bound (a <= lo or a >= hi), else 1 */
__attribute__((target("avx2,fma"))) static inline __m256 pd_rnn_keep8(__m256 a, __m256 lo, __m256 hi) {
  return _mm256_andnot_ps(_mm256_or_ps(_mm256_cmp_ps(a, lo, _CMP_LE_OQ), _mm256_cmp_ps(a, hi, _CMP_GE_OQ)),
                          _mm256_set1_ps(1.0f));
}
#endif

#endif
