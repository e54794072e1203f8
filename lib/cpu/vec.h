/* vec.h — float vector operations named by their width, so that kernels
 * are written once as include templates (base/tmpl.h) with T = v8 (AVX2
 * with FMA, 8 floats) or T = v16 (AVX-512F, 16 floats):
 *   PD_T(pd_rv)             the vector type
 *   PD_T(PD_RV_WIDTH)       its floats
 *   PD_T(PD_RV_TARGET)      the target attribute of a function using it
 *   PD_T(pd_rv_load)(p) ... one operation on every lane
 * Every operation is the same IEEE operation per lane at both widths, so a
 * value does not depend on the width that computed it. PD_T(pd_rv_exp) is
 * Cephes' expf (vec_exp_t.h), written once for both. x86 only, outside
 * CUDA; callers check the CPU (pd_cpu_avx2_fma, pd_cpu_avx512f) first. */
#ifndef PD_CPU_VEC_H
#define PD_CPU_VEC_H

#include "base/arch.h"

#if defined(PD_X86) && !defined(__CUDACC__)
#include <immintrin.h>

#include "base/tmpl.h"

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
/* a b + c and c - a b, rounded once */
PD_RV_OP_v8 __m256 pd_rv_fmadd_v8(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
PD_RV_OP_v8 __m256 pd_rv_fnmadd_v8(__m256 a, __m256 b, __m256 c) { return _mm256_fnmadd_ps(a, b, c); }
/* min and max return their second operand where one is NaN */
PD_RV_OP_v8 __m256 pd_rv_min_v8(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
PD_RV_OP_v8 __m256 pd_rv_max_v8(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
/* to the nearest integer, ties to even */
PD_RV_OP_v8 __m256 pd_rv_round_v8(__m256 x) {
  return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* 2^n for integral n in [-126, 127], built in the exponent bits */
PD_RV_OP_v8 __m256 pd_rv_pow2_v8(__m256 n) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
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
PD_RV_OP_v16 __m512 pd_rv_fnmadd_v16(__m512 a, __m512 b, __m512 c) { return _mm512_fnmadd_ps(a, b, c); }
PD_RV_OP_v16 __m512 pd_rv_min_v16(__m512 a, __m512 b) { return _mm512_min_ps(a, b); }
PD_RV_OP_v16 __m512 pd_rv_max_v16(__m512 a, __m512 b) { return _mm512_max_ps(a, b); }
PD_RV_OP_v16 __m512 pd_rv_round_v16(__m512 x) {
  return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
PD_RV_OP_v16 __m512 pd_rv_pow2_v16(__m512 n) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
}

#define T v8
#include "cpu/vec_exp_t.h"
#undef T
#define T v16
#include "cpu/vec_exp_t.h"
#undef T

#endif

#endif
