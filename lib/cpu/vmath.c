/* vmath.c — float exp, sigmoid and tanh over arrays (vmath.h). */
#include "cpu/vmath.h"

#include <math.h>
#include <string.h>

#include "cpu/features.h"

/* libm's, one element: the lanes the polynomials leave out, and every
 * element on a CPU without AVX2. exp(-|x|) never overflows. */
static float sigmoid1(float x) {
  float e = expf(x >= 0 ? -x : x);
  return x >= 0 ? 1 / (1 + e) : e / (1 + e);
}

#ifdef PD_X86
/* Beyond these |x| the lane goes to libm: exp's argument stays inside
 * [-87, 87], where Cephes' polynomial neither overflows nor underflows. */
#define PD_SIGMOID_MAX 87.0f
#define PD_TANH_MAX 43.0f
#define PD_TANH_POLY 0.625f /* below, tanh's own polynomial: 1 - 2/(e+1) would cancel */
#define PD_EXP_MAX 87.0f    /* beyond, exp's result overflows or is subnormal */

__attribute__((target("avx2,fma"))) static inline __m256 exp8(__m256 x, int *ok) {
  __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  *ok = _mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(PD_EXP_MAX), _CMP_LE_OQ));
  return pd_rv_exp_v8(x);
}

__attribute__((target("avx2,fma"))) static inline __m256 sigmoid8(__m256 x, int *ok) {
  const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
  __m256 na = _mm256_or_ps(x, sign); /* -|x| */
  *ok = _mm256_movemask_ps(_mm256_cmp_ps(na, _mm256_set1_ps(-PD_SIGMOID_MAX), _CMP_GE_OQ));
  __m256 e = pd_rv_exp_v8(na);
  __m256 num = _mm256_blendv_ps(one, e, x); /* x's sign bit picks e: e / (1 + e) below 0 */
  return _mm256_div_ps(num, _mm256_add_ps(one, e));
}

__attribute__((target("avx2,fma"))) static inline __m256 tanh8(__m256 x, int *ok) {
  const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
  __m256 a = _mm256_andnot_ps(sign, x);
  *ok = _mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(PD_TANH_MAX), _CMP_LE_OQ));
  __m256 z = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
  __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), a, a);
  __m256 e = pd_rv_exp_v8(_mm256_add_ps(a, a));
  __m256 big = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
  __m256 t = _mm256_blendv_ps(big, small, _mm256_cmp_ps(a, _mm256_set1_ps(PD_TANH_POLY), _CMP_LT_OQ));
  return _mm256_or_ps(t, _mm256_and_ps(x, sign)); /* tanh(|x|) with x's sign (-0 stays -0) */
}

/* One function's loop: whole vectors, then the tail through a padded one;
 * the lanes a vector leaves out (bit clear in ok) by libm. */
#define VLOOP(F8, F1)                                                          \
  do {                                                                         \
    int64_t i = 0;                                                             \
    for (; i + 8 <= n; i += 8) {                                               \
      float in[8];                                                             \
      int ok;                                                                  \
      __m256 v = _mm256_loadu_ps(x + i);                                       \
      _mm256_storeu_ps(in, v);                                                 \
      _mm256_storeu_ps(y + i, F8(v, &ok));                                     \
      for (int l = 0; ok != 0xff && l < 8; l++)                                \
        if (!(ok >> l & 1)) y[i + l] = F1(in[l]);                              \
    }                                                                          \
    if (i < n) {                                                               \
      float in[8] = {0}, out[8];                                               \
      int ok, m = (int)(n - i);                                                \
      memcpy(in, x + i, sizeof(float) * (size_t)m);                            \
      _mm256_storeu_ps(out, F8(_mm256_loadu_ps(in), &ok));                     \
      for (int l = 0; l < m; l++) y[i + l] = ok >> l & 1 ? out[l] : F1(in[l]); \
    }                                                                          \
  } while (0)

__attribute__((target("avx2,fma"))) static void exp_avx2(const float *x, float *y, int64_t n) { VLOOP(exp8, expf); }
__attribute__((target("avx2,fma"))) static void sigmoid_avx2(const float *x, float *y, int64_t n) {
  VLOOP(sigmoid8, sigmoid1);
}
__attribute__((target("avx2,fma"))) static void tanh_avx2(const float *x, float *y, int64_t n) { VLOOP(tanh8, tanhf); }
#endif

void pd_vexp_f32(const float *x, float *y, int64_t n) {
#ifdef PD_X86
  if (pd_cpu_avx2_fma()) {
    exp_avx2(x, y, n);
    return;
  }
#endif
  for (int64_t i = 0; i < n; i++) y[i] = expf(x[i]);
}

void pd_vsigmoid_f32(const float *x, float *y, int64_t n) {
#ifdef PD_X86
  if (pd_cpu_avx2_fma()) {
    sigmoid_avx2(x, y, n);
    return;
  }
#endif
  for (int64_t i = 0; i < n; i++) y[i] = sigmoid1(x[i]);
}

void pd_vtanh_f32(const float *x, float *y, int64_t n) {
#ifdef PD_X86
  if (pd_cpu_avx2_fma()) {
    tanh_avx2(x, y, n);
    return;
  }
#endif
  for (int64_t i = 0; i < n; i++) y[i] = tanhf(x[i]);
}
