/* rnn_simd.h — the fused recurrent cells' float vector operations at the
 * two widths of cpu/vec.h (T = v8: AVX2 with FMA; T = v16: AVX-512F), so
 * that the gate passes (lstm_simd_t.h, gru_simd_t.h) are written once, as
 * include templates: cpu/vec.h's operations, and here the clip's bound and
 * keep, and sigmoid and tanh (rnn_simd_t.h). Every operation is the same
 * IEEE operation per lane at both widths (the exp polynomial, the division,
 * each FMA), so a unit's value does not depend on the width that computed
 * it: on an AVX-512 CPU a checkpoint is the same bytes with
 * PADDLE_RUN_AVX512=off. The activations are the scalar
 * pd_rnn_sigmoid_float and pd_rnn_tanh_float's formulas (rnn_core.h), so a
 * lane and the scalar tail agree to an ulp or two. A NaN stays NaN.
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

#include "cpu/vec.h"

/* pd_rnn_keep on every lane: 0 where a kept gate value a sits at a clip
 * bound (a <= lo or a >= hi), else 1 */
PD_RV_OP_v8 __m256 pd_rv_keep_v8(__m256 a, __m256 lo, __m256 hi) {
  return _mm256_andnot_ps(_mm256_or_ps(_mm256_cmp_ps(a, lo, _CMP_LE_OQ), _mm256_cmp_ps(a, hi, _CMP_GE_OQ)),
                          _mm256_set1_ps(1.0f));
}
PD_RV_OP_v16 __m512 pd_rv_keep_v16(__m512 a, __m512 lo, __m512 hi) {
  __mmask16 at = _mm512_cmp_ps_mask(a, lo, _CMP_LE_OQ) | _mm512_cmp_ps_mask(a, hi, _CMP_GE_OQ);
  return _mm512_maskz_mov_ps((__mmask16)~at, _mm512_set1_ps(1.0f));
}

/* The clip's bound and the activations, once for both widths */
#define T v8
#include "rnn_simd_t.h"
#undef T
#define T v16
#include "rnn_simd_t.h"
#undef T

#endif

#endif
