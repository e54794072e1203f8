/* kmath_t.h — kmath.h's per-element and per-row math for one element type T
 * (base/tmpl.h): kmath.h includes this file once for float and once for
 * double, giving pd_max_float, pd_max_double and so on. */

/* ---- NaN-propagating comparisons ----
 * A bare `a > b ? a : b` (and SSE's/AVX's max, which it compiles to) drops a
 * NaN in a: every max and relu goes through these, so a NaN anywhere in the
 * input reaches the output, as in PyTorch. pd_max: a if a > b or a is NaN,
 * else b (so NaN if either is; ties keep b). pd_nan_gt: whether a scan for
 * the first maximum moves from best to v: v larger, or v the first NaN
 * (pool2d.c's CPU backward tracks the first NaN apart: there these selects
 * compile to unpredictable branches). */
PD_HD T PD_T(pd_max)(T a, T b) { return a > b || a != a ? a : b; }
PD_HD bool PD_T(pd_nan_gt)(T v, T best) { return v > best || (v != v && best == best); }

/* ---- activations (relu, sigmoid, tanh, fc's fused one) ----
 * Backward is in terms of the output y. relu keeps a NaN (pd_max); its
 * gradient is dy wherever y is not <= 0 (a NaN y passes dy, as PyTorch's
 * threshold_backward). */
PD_HD T PD_T(pd_relu)(T x) { return x <= 0 ? 0 : x; /* pd_max(x, 0) in one comparison */ }
/* without overflow: never exp of a large positive number */
PD_HD T PD_T(pd_sigmoid)(T x) {
  T e = PD_T(pd_exp)(x >= 0 ? -x : x); /* in T: a float's exp in double cost twice the time */
  return x >= 0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e);
}
PD_HD T PD_T(pd_tanh)(T x) { return PD_T(pd_libm_tanh)(x); }
PD_HD T PD_T(pd_relu_grad)(T y, T dy) { return y <= 0 ? 0 : dy; }
PD_HD T PD_T(pd_sigmoid_grad)(T y, T dy) { return dy * y * (1 - y); }
PD_HD T PD_T(pd_tanh_grad)(T y, T dy) { return dy * (1 - y * y); }

/* ---- scale, square_error, sgd, momentum, adam (per element) ---- */
/* scale: a x + d (d = bias, or scale * bias when the bias comes first) */
PD_HD T PD_T(pd_scale)(T x, T a, T d) { return a * x + d; }
/* square_error's gradient for X (Y's is its negative) */
PD_HD T PD_T(pd_sq_err_grad)(T x, T y, T dout) { return 2 * (x - y) * dout; }
PD_HD T PD_T(pd_sgd)(T p, T g, T lr, T wd) { return p - lr * (g + wd * p); }
/* momentum: v' = mu v + g', p' = p - lr v' (Nesterov: p - lr (g' + mu v')), g' = g + wd p */
PD_HD void PD_T(pd_momentum)(T p, T g, T v, T lr, T mu, T wd, bool nesterov, T *p_out, T *v_out) {
  T gi = g + wd * p, vi = mu * v + gi;
  *v_out = vi;
  *p_out = p - lr * (nesterov ? gi + mu * vi : vi);
}
/* adam, with the bias correction folded into lr_t and eps_t (pd_adam_coefs) */
PD_HD void PD_T(pd_adam)(T p, T g, T m, T v, T lr_t, T eps_t, T b1, T b2, T wd, T *p_out, T *m_out, T *v_out) {
  T gi = g + wd * p;
  T mi = b1 * m + (1 - b1) * gi, vi = b2 * v + (1 - b2) * gi * gi;
  *m_out = mi;
  *v_out = vi;
  *p_out = p - lr_t * mi / (PD_T(pd_sqrt)(vi) + eps_t);
}

/* ---- cross_entropy ----
 * X clamped below at PD_CE_TINY_T (kmath.h) so a zero probability gives a
 * large finite loss; a NaN passes through. */
PD_HD T PD_T(pd_ce_clamp)(T v) { return v < PD_T(PD_CE_TINY) ? PD_T(PD_CE_TINY) : v; }
/* -sum_j l[j] log(x[j]) over one row of k */
PD_HD T PD_T(pd_ce_soft_row)(const T *x, const T *l, int64_t k) {
  T sum = 0;
  for (int64_t j = 0; j < k; j++) sum -= l[j] * PD_T(pd_log)(PD_T(pd_ce_clamp)(x[j]));
  return sum;
}
PD_HD T PD_T(pd_ce_hard)(T x_label) { return -PD_T(pd_log)(PD_T(pd_ce_clamp)(x_label)); }
/* gradient of one element: soft -dy l / x; hard -dy / x at the label, else 0 */
PD_HD T PD_T(pd_ce_soft_grad)(T dy, T l, T x) { return -dy * l / PD_T(pd_ce_clamp)(x); }
PD_HD T PD_T(pd_ce_hard_grad)(T dy, T x, bool at_label) { return at_label ? -dy / PD_T(pd_ce_clamp)(x) : 0; }

/* ---- softmax_with_cross_entropy, softmax ----
 * The loss term of class j from the row max m and log(sum exp(z - m)):
 * lse - z[j] = (m - z[j]) + log_sum, which keeps the big terms apart. */
PD_HD T PD_T(pd_swce_term)(T m, T zj, T log_sum) { return (m - zj) + log_sum; }
/* dZ[j] without the Softmax-output part: hard (s - onehot) g; soft (s mass - l) g */
PD_HD T PD_T(pd_swce_hard_grad)(T s, T g, bool at_label) { return at_label ? s * g - g : s * g; }
PD_HD T PD_T(pd_swce_soft_grad)(T s, T l, T mass, T g) { return (s * mass - l) * g; }
/* softmax backward of one element: y (dy - <dy, y>) */
PD_HD T PD_T(pd_softmax_grad)(T y, T dy, T dot) { return y * (dy - dot); }

/* ---- accuracy: whether one row of k scores is right at top-k (ties in the
 * label's favour; a NaN score ranks above every number, as in torch.topk, so
 * a row whose label's score is NaN is never right, nor one with topk NaNs
 * elsewhere) ---- */
PD_HD bool PD_T(pd_acc_row)(const T *x, int64_t k, int64_t label, int64_t topk) {
  T mine = x[label];
  int64_t above = 0;
  for (int64_t j = 0; j < k && above < topk; j++) above += x[j] > mine || x[j] != x[j];
  return above < topk && !isnan(mine);
}

/* ---- broadcast_add/sub/mul/div ----
 * Out's element from X's and Y's (floats: IEEE division, x / 0 = inf), and
 * each operand's gradient term from dOut's element g:
 * add: g, g; sub: g, -g; mul: g y, g x; div: g / y, -g x / y^2. */
PD_HD T PD_T(pd_bc_op)(pd_bc_kind k, T a, T b) {
  return k == PD_BC_ADD ? a + b : k == PD_BC_SUB ? a - b : k == PD_BC_MUL ? a * b : a / b;
}
PD_HD T PD_T(pd_bc_dx)(pd_bc_kind k, T g, T y) { return k == PD_BC_MUL ? g * y : k == PD_BC_DIV ? g / y : g; }
PD_HD T PD_T(pd_bc_dy)(pd_bc_kind k, T g, T x, T y) {
  return k == PD_BC_ADD ? g : k == PD_BC_SUB ? -g : k == PD_BC_MUL ? g * x : -g * x / (y * y);
}

/* ---- log_softmax: one element of a row from the row max m and lse =
 * log(sum exp(x - m)); backward from Out's y, dOut's dy and the row's sum of
 * dOut ---- */
PD_HD T PD_T(pd_log_softmax)(T x, T m, T lse) { return (x - m) - lse; }
PD_HD T PD_T(pd_log_softmax_grad)(T y, T dy, T sum) { return dy - PD_T(pd_exp)(y) * sum; }
