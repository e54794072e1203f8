/* rnn_simd.h — the fused recurrent cells' float vector operations at two
 * widths, named by their width so that the gate passes (lstm_simd_t.h,
 * gru_simd_t.h) are written once, as include templates (base/tmpl.h) with
 * T = v8 (AVX2 with FMA, 8 floats) or T = v16 (AVX-512F, 16 floats):
 *   PD_T(pd_rv)             the vector type
 *   PD_T(PD_RV_WIDTH)       its floats
 *   PD_T(PD_RV_TARGET)      the target attribute of a function using it
 *   PD_T(pd_rv_load)(p) ... one operation on every lane
 * Every operation is the same IEEE operation per lane at both widths (the
 * exp polynomial, the division, each FMA), so a unit's value does not
 * depend on the width that computed it: on an AVX-512 CPU a checkpoint is
 * the same bytes with PADDLE_RUN_AVX512=off. The activations are the
 * scalar pd_rnn_sigmoid_float and pd_rnn_tanh_float's formulas (rnn_core.h),
 * so a lane and the scalar tail agree to an ulp or two. A NaN stays NaN.
 * Callers check pd_rnn_avx2() (v8) or pd_rnn_avx512() (v16) first.
 *
 * Why a second width on a CPU whose 512-bit FMAs run at the 256-bit rate
 * (Zen 4): a gate pass is ~130 vector operations per vector of units, not
 * products, and half as many instructions take ~0.6 of the time there
 * (a forward LSTM pass over fashion_lstm_fused's 64 x 128 units, alone in
 * a loop: 18.5 µs on AVX2, 11.6 on AVX-512). */
#ifndef PD_OPS_RNN_SIMD_H
#define PD_OPS_RNN_SIMD_H

#include "base/arch.h"

#ifdef PD_X86
#include <immintrin.h>

#include "cpu/vmath.h"

#define PD_RV_WIDTH_v8 8
#define PD_RV_TARGET_v8 __attribute__((target("avx2,fma")))
#define PD_RV_OP_v8 __attribute__((target("avx2,fma"), always_inline)) static inline
typedef __m256 pd_rv_v8;

PD_RV_OP_v8 __m256 pd_rv_load_v8(const float *p) { return _mm256_loadu_ps(p); }
PD_RV_OP_v8 void pd_rv_store_v8(float *p, __m256 x) { _mm256_storeu_ps(p, x); }
PD_RV_OP_v8 __m256 pd_rv_set1_v8(float x) { return _mm256_set1_ps(x); }
PD_RV_OP_v8 __m256 pd_rv_zero_v8(void) { return _mm256_setzero_ps(); }
PD_RV_OP_v8 __m256 pd_rv_add_v8(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
PD_RV_OP_v8 __m256 pd_rv_sub_v8(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); }
PD_RV_OP_v8 __m256 pd_rv_mul_v8(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
PD_RV_OP_v8 __m256 pd_rv_div_v8(__m256 a, __m256 b) { return _mm256_div_ps(a, b); }
/* a b + c, rounded once */
PD_RV_OP_v8 __m256 pd_rv_fmadd_v8(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
PD_RV_OP_v8 __m256 pd_rv_exp_v8(__m256 x) { return pd_exp8(x); }
/* x bounded to [-b, b] (nb = -b); a NaN stays NaN (min and max return
 * their second operand when one is NaN) */
PD_RV_OP_v8 __m256 pd_rv_bound_v8(__m256 x, __m256 b, __m256 nb) { return _mm256_max_ps(nb, _mm256_min_ps(b, x)); }
/* pd_rnn_keep on every lane: 0 where a kept gate value a sits at a clip
 * bound (a <= lo or a >= hi), else 1 */
PD_RV_OP_v8 __m256 pd_rv_keep_v8(__m256 a, __m256 lo, __m256 hi) {
  return _mm256_andnot_ps(_mm256_or_ps(_mm256_cmp_ps(a, lo, _CMP_LE_OQ), _mm256_cmp_ps(a, hi, _CMP_GE_OQ)),
                          _mm256_set1_ps(1.0f));
}

#define PD_RV_WIDTH_v16 16
#define PD_RV_TARGET_v16 __attribute__((target("avx512f,avx2,fma")))
#define PD_RV_OP_v16 __attribute__((target("avx512f,avx2,fma"), always_inline)) static inline
typedef __m512 pd_rv_v16;

PD_RV_OP_v16 __m512 pd_rv_load_v16(const float *p) { return _mm512_loadu_ps(p); }
PD_RV_OP_v16 void pd_rv_store_v16(float *p, __m512 x) { _mm512_storeu_ps(p, x); }
PD_RV_OP_v16 __m512 pd_rv_set1_v16(float x) { return _mm512_set1_ps(x); }
PD_RV_OP_v16 __m512 pd_rv_zero_v16(void) { return _mm512_setzero_ps(); }
PD_RV_OP_v16 __m512 pd_rv_add_v16(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
PD_RV_OP_v16 __m512 pd_rv_sub_v16(__m512 a, __m512 b) { return _mm512_sub_ps(a, b); }
PD_RV_OP_v16 __m512 pd_rv_mul_v16(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
PD_RV_OP_v16 __m512 pd_rv_div_v16(__m512 a, __m512 b) { return _mm512_div_ps(a, b); }
PD_RV_OP_v16 __m512 pd_rv_fmadd_v16(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
PD_RV_OP_v16 __m512 pd_rv_exp_v16(__m512 x) { return pd_exp16(x); }
PD_RV_OP_v16 __m512 pd_rv_bound_v16(__m512 x, __m512 b, __m512 nb) { return _mm512_max_ps(nb, _mm512_min_ps(b, x)); }
PD_RV_OP_v16 __m512 pd_rv_keep_v16(__m512 a, __m512 lo, __m512 hi) {
  __mmask16 at = _mm512_cmp_ps_mask(a, lo, _CMP_LE_OQ) | _mm512_cmp_ps_mask(a, hi, _CMP_GE_OQ);
  return _mm512_maskz_mov_ps((__mmask16)~at, _mm512_set1_ps(1.0f));
}

/* The activations, once for both widths */
#define T v8
#include "rnn_simd_t.h"
#undef T
#define T v16
#include "rnn_simd_t.h"
#undef T

#endif

#endif
