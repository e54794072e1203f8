/* unary_math_t.h — the per-element math of leaky_relu, gelu, softplus and
 * clip for one element type T (base/tmpl.h), as PD_HD functions: unary.h
 * includes this file once for float and once for double. Backward is in
 * terms of the input x. A NaN x gives a NaN out for every kind (comparisons
 * with NaN are false, so no branch replaces it by a number). gelu is
 * written so that x << 0 loses nothing to cancellation (PyTorch's float32
 * gelu does: the two differ by less than 1e-7 |x|). */

/* Phi(x) = (1 + erf(x / sqrt 2)) / 2, as erfc(-x / sqrt 2) / 2 */
PD_HD T PD_T(pd_gelu_cdf)(T x) { return (T)0.5 * PD_T(pd_erfc)(-x * (T)0.70710678118654752440); }

/* gelu tanh: 0.5 x (1 + tanh u), u = PD_GELU_BETA (x + PD_GELU_KAPPA x^3) */
PD_HD T PD_T(pd_unary)(pd_unary_p p, T x) {
  switch (p.kind) {
  case PD_UNARY_LEAKY_RELU:
    return x > 0 ? x : (T)p.a * x;
  case PD_UNARY_GELU:
    return x * PD_T(pd_gelu_cdf)(x);
  case PD_UNARY_GELU_TANH: /* 0.5 (1 + tanh u) = sigmoid(2 u), without 1 + tanh's cancellation for x << 0 */
    return x * PD_T(pd_sigmoid)((T)(2 * PD_GELU_BETA) * (x + (T)PD_GELU_KAPPA * (x * x * x)));
  case PD_UNARY_SOFTPLUS: /* log(1 + e^x) = max(x, 0) + log(1 + e^-|x|): no overflow, no loss for x << 0 */
    return (x > 0 ? x : (T)0) + PD_T(pd_log1p)(PD_T(pd_exp)(-(x < 0 ? -x : x)));
  case PD_UNARY_CLIP:
    return x < (T)p.a ? (T)p.a : x > (T)p.b ? (T)p.b : x;
  }
  return x;
}

/* dx from x and dy. leaky_relu: dy for x > 0, alpha dy otherwise; clip: dy
 * where min <= x <= max (the bounds included, as PyTorch's clamp), else 0;
 * softplus: dy sigmoid(x). */
PD_HD T PD_T(pd_unary_grad)(pd_unary_p p, T x, T dy) {
  switch (p.kind) {
  case PD_UNARY_LEAKY_RELU:
    return x > 0 ? dy : (T)p.a * dy;
  case PD_UNARY_GELU: {
    T pdf = PD_T(pd_exp)((T)-0.5 * x * x) * (T)(1.12837916709551257390 * 0.70710678118654752440 * 0.5);
    return dy * (PD_T(pd_gelu_cdf)(x) + x * pdf);
  }
  case PD_UNARY_GELU_TANH: { /* s = sigmoid(2 u): d/dx x s = s + 2 x s (1 - s) du/dx */
    T x2 = x * x, s = PD_T(pd_sigmoid)((T)(2 * PD_GELU_BETA) * (x + (T)PD_GELU_KAPPA * (x2 * x)));
    T du = (T)PD_GELU_BETA * ((T)1 + (T)(3 * PD_GELU_KAPPA) * x2);
    return dy * (s + (T)2 * x * s * ((T)1 - s) * du);
  }
  case PD_UNARY_SOFTPLUS:
    return dy * PD_T(pd_sigmoid)(x);
  case PD_UNARY_CLIP:
    return x >= (T)p.a && x <= (T)p.b ? dy : (T)0;
  }
  return dy;
}
