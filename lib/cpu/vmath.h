/* vmath.h — float exp, sigmoid and tanh over arrays, 8 elements at a time
 * on AVX2 with FMA (softmax_with_cross_entropy, the activation ops and fc's
 * fused activation), and the 8-wide exp those and the fused recurrent
 * cells share (cpu/vec.h, 8 and 16 wide).
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

/* The exp those and the fused recurrent cells share: pd_rv_exp_v8 and
 * pd_rv_exp_v16 in cpu/vec.h. */
#include "cpu/vec.h"

#endif
