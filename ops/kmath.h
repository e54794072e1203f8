/* kmath.h — the per-element and per-row math of the kernels, written once
 * as PD_HD functions: the GPU kernels (ops/NAME.cu) call them from device code,
 * the CPU kernels call them where that costs nothing, and
 * test/unit/test_kmath.c checks them on the CPU against the CPU kernels.
 * Functions a CPU kernel also uses come in float and double (suffix _float,
 * _double); the GPU-only ones (windows of pool2d, im2col of conv2d, the
 * broadcast of elementwise_add) are float. */
#ifndef PD_KMATH_H
#define PD_KMATH_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpu/gpu.h"

/* ---- NaN-propagating comparisons ----
 * A bare `a > b ? a : b` (and SSE's/AVX's max, which it compiles to) drops a
 * NaN in a: every max and relu goes through these, so a NaN anywhere in the
 * input reaches the output, as in PyTorch. pd_max: a if a > b or a is NaN,
 * else b (so NaN if either is; ties keep b). pd_nan_gt: whether a scan for
 * the first maximum moves from best to v: v larger, or v the first NaN
 * (pool2d.c's CPU backward tracks the first NaN apart: these selects
 * compile to branches there, unpredictable ones, 7x slower). */
#define PD_KMATH_MAX(T)                                            \
  PD_HD T pd_max_##T(T a, T b) { return a > b || a != a ? a : b; } \
  PD_HD bool pd_nan_gt_##T(T v, T best) { return v > best || (v != v && best == best); }
PD_KMATH_MAX(float)
PD_KMATH_MAX(double)

/* ---- activations (relu, sigmoid, tanh, fc's fused one) ----
 * Backward is in terms of the output y. relu keeps a NaN (pd_max); its
 * gradient is dy wherever y is not <= 0 (a NaN y passes dy, as PyTorch's
 * threshold_backward). */
#define PD_KMATH_ACT(T)                                                                                    \
  PD_HD T pd_relu_##T(T x) { return x <= 0 ? 0 : x; /* pd_max(x, 0) in one comparison */ }                 \
  /* without overflow: never exp of a large positive number */                                             \
  PD_HD T pd_sigmoid_##T(T x) { return (T)(x >= 0 ? (T)1 / ((T)1 + exp(-x)) : exp(x) / ((T)1 + exp(x))); } \
  PD_HD T pd_tanh_##T(T x) { return (T)tanh(x); }                                                          \
  PD_HD T pd_relu_grad_##T(T y, T dy) { return y <= 0 ? 0 : dy; }                                          \
  PD_HD T pd_sigmoid_grad_##T(T y, T dy) { return dy * y * (1 - y); }                                      \
  PD_HD T pd_tanh_grad_##T(T y, T dy) { return dy * (1 - y * y); }
PD_KMATH_ACT(float)
PD_KMATH_ACT(double)

/* sqrt and log in the argument's own precision (as tgmath.h's). */
PD_HD float pd_sqrt_float(float x) { return sqrtf(x); }
PD_HD double pd_sqrt_double(double x) { return sqrt(x); }
PD_HD float pd_log_float(float x) { return logf(x); }
PD_HD double pd_log_double(double x) { return log(x); }

/* ---- scale, square_error, sgd, momentum, adam (per element) ---- */
#define PD_KMATH_ELEM(T)                                                                                        \
  /* scale: a x + d (d = bias, or scale * bias when the bias comes first) */                                    \
  PD_HD T pd_scale_##T(T x, T a, T d) { return a * x + d; }                                                     \
  /* square_error's gradient for X (Y's is its negative) */                                                     \
  PD_HD T pd_sq_err_grad_##T(T x, T y, T dout) { return 2 * (x - y) * dout; }                                   \
  PD_HD T pd_sgd_##T(T p, T g, T lr, T wd) { return p - lr * (g + wd * p); }                                    \
  /* momentum: v' = mu v + g', p' = p - lr v' (Nesterov: p - lr (g' + mu v')), g' = g + wd p */                 \
  PD_HD void pd_momentum_##T(T p, T g, T v, T lr, T mu, T wd, bool nesterov, T *p_out, T *v_out) {              \
    T gi = g + wd * p, vi = mu * v + gi;                                                                        \
    *v_out = vi;                                                                                                \
    *p_out = p - lr * (nesterov ? gi + mu * vi : vi);                                                           \
  }                                                                                                             \
  /* adam, with the bias correction folded into lr_t and eps_t (pd_adam_coefs) */                               \
  PD_HD void pd_adam_##T(T p, T g, T m, T v, T lr_t, T eps_t, T b1, T b2, T wd, T *p_out, T *m_out, T *v_out) { \
    T gi = g + wd * p;                                                                                          \
    T mi = b1 * m + (1 - b1) * gi, vi = b2 * v + (1 - b2) * gi * gi;                                            \
    *m_out = mi;                                                                                                \
    *v_out = vi;                                                                                                \
    *p_out = p - lr_t * mi / (pd_sqrt_##T(vi) + eps_t);                                                         \
  }
PD_KMATH_ELEM(float)
PD_KMATH_ELEM(double)

/* Adam's step size and epsilon at update count t: lr sqrt(1 - b2^t) / (1 - b1^t)
 * and eps sqrt(1 - b2^t). */
PD_HD void pd_adam_coefs(double lr, double b1, double b2, double eps, double t, double *lr_t, double *eps_t) {
  double c2 = sqrt(1 - pow(b2, t));
  *lr_t = lr * c2 / (1 - pow(b1, t));
  *eps_t = eps * c2;
}

/* clip_by_global_norm: the factor every X is multiplied by, from the sum of
 * squares; NaN when the norm is (a NaN anywhere reaches every Out, as
 * PyTorch's clip_grad_norm_). */
PD_HD double pd_clip_scale(double sum_sq, double max_norm) {
  double norm = sqrt(sum_sq);
  return norm > max_norm || norm != norm ? max_norm / norm : 1;
}

/* ---- cross_entropy ----
 * X clamped below at TINY (float32: FLT_MIN) so a zero probability gives a
 * large finite loss; a NaN passes through. */
#define PD_CE_TINY_float FLT_MIN
#define PD_CE_TINY_double 1e-20
#define PD_KMATH_CE(T)                                                                 \
  PD_HD T pd_ce_clamp_##T(T v) { return v < PD_CE_TINY_##T ? PD_CE_TINY_##T : v; }     \
  /* -sum_j l[j] log(x[j]) over one row of k */                                        \
  PD_HD T pd_ce_soft_row_##T(const T *x, const T *l, int64_t k) {                      \
    T sum = 0;                                                                         \
    for (int64_t j = 0; j < k; j++) sum -= l[j] * pd_log_##T(pd_ce_clamp_##T(x[j]));   \
    return sum;                                                                        \
  }                                                                                    \
  PD_HD T pd_ce_hard_##T(T x_label) { return -pd_log_##T(pd_ce_clamp_##T(x_label)); }  \
  /* gradient of one element: soft -dy l / x; hard -dy / x at the label, else 0 */     \
  PD_HD T pd_ce_soft_grad_##T(T dy, T l, T x) { return -dy * l / pd_ce_clamp_##T(x); } \
  PD_HD T pd_ce_hard_grad_##T(T dy, T x, bool at_label) { return at_label ? -dy / pd_ce_clamp_##T(x) : 0; }
PD_KMATH_CE(float)
PD_KMATH_CE(double)

/* ---- softmax_with_cross_entropy, softmax ----
 * The loss term of class j from the row max m and log(sum exp(z - m)):
 * lse - z[j] = (m - z[j]) + log_sum, which keeps the big terms apart. */
#define PD_KMATH_SWCE(T)                                                                          \
  PD_HD T pd_swce_term_##T(T m, T zj, T log_sum) { return (m - zj) + log_sum; }                   \
  /* dZ[j] without the Softmax-output part: hard (s - onehot) g; soft (s mass - l) g */           \
  PD_HD T pd_swce_hard_grad_##T(T s, T g, bool at_label) { return at_label ? s * g - g : s * g; } \
  PD_HD T pd_swce_soft_grad_##T(T s, T l, T mass, T g) { return (s * mass - l) * g; }             \
  /* softmax backward of one element: y (dy - <dy, y>) */                                         \
  PD_HD T pd_softmax_grad_##T(T y, T dy, T dot) { return y * (dy - dot); }
PD_KMATH_SWCE(float)
PD_KMATH_SWCE(double)

/* ---- accuracy: whether one row of k scores is right at top-k (ties in the
 * label's favour; a NaN score ranks above every number, as in torch.topk, so
 * a row whose label's score is NaN is never right, nor one with topk NaNs
 * elsewhere) ---- */
#define PD_KMATH_ACC(T)                                                                   \
  PD_HD bool pd_acc_row_##T(const T *x, int64_t k, int64_t label, int64_t topk) {         \
    T mine = x[label];                                                                    \
    int64_t above = 0;                                                                    \
    for (int64_t j = 0; j < k && above < topk; j++) above += x[j] > mine || x[j] != x[j]; \
    return above < topk && !isnan(mine);                                                  \
  }
PD_KMATH_ACC(float)
PD_KMATH_ACC(double)

/* ---- cos_sim: the coefficients of one row's gradient from its three dot
 * products (dx = k y + kx x; dy += k x + ky y) ---- */
typedef struct pd_cos_coef {
  double k, kx, ky;
} pd_cos_coef;
/* dxn / dyn: the gradients reaching XNorm / YNorm of this row (0 if none);
 * use_dyn: whether dyn counts here (not for a broadcast Y, counted once). */
PD_HD pd_cos_coef pd_cos_coefs(double xy, double xx, double yy, double scale, double g, double dxn, double dyn,
                               bool use_dyn) {
  pd_cos_coef r = {0, 0, 0};
  double nx = sqrt(xx), ny = sqrt(yy);
  if (nx != 0 && ny != 0) { /* a NaN norm gives NaN coefficients */
    double cosv = xy / (nx * ny);
    r.k = scale * g / (nx * ny);
    r.kx = -scale * g * cosv / xx;
    r.ky = -scale * g * cosv / yy;
  }
  if (nx != 0) r.kx += dxn / nx;
  if (use_dyn && ny != 0) r.ky += dyn / ny;
  return r;
}
/* Out of one row: 0 for a zero row, NaN for one holding a NaN. */
PD_HD double pd_cos_out(double xy, double xx, double yy, double scale) {
  double nx = sqrt(xx), ny = sqrt(yy);
  return nx == 0 || ny == 0 ? 0 : scale * xy / (nx * ny);
}

/* ---- batch_norm, per channel ---- */
/* Flat index of element e (of the n sp) of channel k in X [n, ch, sp]. */
PD_HD int64_t pd_bn_at(int64_t ch, int64_t sp, int64_t k, int64_t e) { return ((e / sp) * ch + k) * sp + e % sp; }
typedef struct pd_bn_coef {
  double a, b, d; /* dX = a dY + b X + d */
} pd_bn_coef;
/* From the channel's statistics and the sums Σ dY and Σ dY (X - mean) / sqrt(var + eps)
 * over its m values. Inference uses fixed statistics, so only a remains. */
PD_HD pd_bn_coef pd_bn_grad_coefs(double scale, double mean, double inv, double sdy, double sdyx, double m,
                                  bool training) {
  pd_bn_coef r;
  r.a = scale * inv;
  r.b = training ? -r.a * inv * sdyx / m : 0;
  r.d = (training ? -r.a * sdy / m : 0) - r.b * mean;
  return r;
}
/* Running statistics after a training step (the unbiased variance, as PyTorch). */
PD_HD double pd_bn_running_mean(double running, double mean, double momentum) {
  return momentum * running + (1 - momentum) * mean;
}
PD_HD double pd_bn_running_var(double running, double var, double momentum, double m) {
  return momentum * running + (1 - momentum) * var * m / (m - 1);
}

/* ---- cast: float to integers truncates toward zero, saturating (NaN: 0) ---- */
#define PD_KMATH_SAT(D, LO, HI)                                                             \
  PD_HD D pd_sat_##D(double v) {                                                            \
    return isnan(v) ? 0 : v <= (double)(LO) ? (D)(LO) : v >= (double)(HI) ? (D)(HI) : (D)v; \
  }
PD_KMATH_SAT(int32_t, INT32_MIN, INT32_MAX)
PD_KMATH_SAT(int64_t, INT64_MIN, INT64_MAX)
PD_KMATH_SAT(uint8_t, 0, UINT8_MAX)

/* ---- elementwise_add: where Y's element for X's element i is ----
 * X's dims merged into runs that Y repeats along or not (see
 * elementwise_add.c); ystride 0 where repeated. */
typedef struct pd_bcast {
  int nd;
  int64_t size[PD_MAX_DIMS];
  int64_t ystride[PD_MAX_DIMS];
  bool repeat[PD_MAX_DIMS];
  int64_t numel, ny; /* X's and Y's element counts */
} pd_bcast;
/* Y's offset for X's flat index i. */
PD_HD int64_t pd_bcast_yoff(const pd_bcast *b, int64_t i) {
  int64_t off = 0;
  for (int d = b->nd - 1; d >= 0; d--) {
    off += (i % b->size[d]) * b->ystride[d];
    i /= b->size[d];
  }
  return off;
}
/* X's flat index of the r-th (in X's order) of the numel / ny elements that
 * Y's element j is added to. */
PD_HD int64_t pd_bcast_xidx(const pd_bcast *b, int64_t j, int64_t r) {
  int64_t idx = 0, mul = 1;
  for (int d = b->nd - 1; d >= 0; d--) {
    int64_t coord;
    if (b->repeat[d]) {
      coord = r % b->size[d];
      r /= b->size[d];
    } else {
      coord = j % b->size[d];
      j /= b->size[d];
    }
    idx += coord * mul;
    mul *= b->size[d];
  }
  return idx;
}

/* ---- pool2d: one window ---- */
typedef struct pd_pool_geom {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, ho, wo;
  bool avg, exclusive;
} pd_pool_geom;
typedef struct pd_span {
  int64_t lo, hi, count;
} pd_span;
/* The window of output o along one dim: input positions [lo, hi) inside the
 * input, and how many positions an average divides by. */
PD_HD pd_span pd_pool_clip(int64_t o, int64_t k, int64_t stride, int64_t pad, int64_t in, bool exclusive) {
  int64_t s = o * stride - pad, e = s + k;
  pd_span r;
  r.lo = s < 0 ? 0 : s;
  r.hi = e > in ? in : e;
  r.count = exclusive ? r.hi - r.lo : (e < in + pad ? e : in + pad) - s; /* a ceil-mode window may hang past the pad */
  return r;
}
/* Index in the plane (h w) of the window's first largest element in row-major
 * order (its first NaN, if it holds one: the max is then NaN): the one the
 * max-pool gradient goes to. */
PD_HD int64_t pd_pool_argmax(const float *x, const pd_pool_geom *g, int64_t oh, int64_t ow) {
  pd_span r = pd_pool_clip(oh, g->kh, g->sh, g->ph, g->h, g->exclusive);
  pd_span q = pd_pool_clip(ow, g->kw, g->sw, g->pw, g->w, g->exclusive);
  int64_t at = r.lo * g->w + q.lo;
  float best = x[at];
  for (int64_t ih = r.lo; ih < r.hi; ih++)
    for (int64_t iw = q.lo; iw < q.hi; iw++) {
      float v = x[ih * g->w + iw];
      if (pd_nan_gt_float(v, best)) best = v, at = ih * g->w + iw;
    }
  return at;
}
/* Output (oh, ow) of one plane: the window's max, or its average. */
PD_HD float pd_pool_out(const float *x, const pd_pool_geom *g, int64_t oh, int64_t ow) {
  if (!g->avg) return x[pd_pool_argmax(x, g, oh, ow)];
  pd_span r = pd_pool_clip(oh, g->kh, g->sh, g->ph, g->h, g->exclusive);
  pd_span q = pd_pool_clip(ow, g->kw, g->sw, g->pw, g->w, g->exclusive);
  float v = 0;
  for (int64_t ih = r.lo; ih < r.hi; ih++)
    for (int64_t iw = q.lo; iw < q.hi; iw++) v += x[ih * g->w + iw];
  return v / (float)(r.count * q.count);
}
/* Output positions [lo, hi) along one dim whose window holds input i. */
PD_HD void pd_pool_covering(int64_t i, int64_t k, int64_t stride, int64_t pad, int64_t out, int64_t *lo, int64_t *hi) {
  int64_t a = i + pad - k + 1; /* o stride >= a */
  *lo = a <= 0 ? 0 : (a + stride - 1) / stride;
  *hi = (i + pad) / stride + 1;
  if (*hi > out) *hi = out;
  if (*lo > *hi) *lo = *hi;
}
/* dX at input (ih, iw) of one plane, gathered from every window holding it
 * (in a fixed order, so no atomics): max pooling takes dOut of the windows
 * whose argmax it is, averaging dOut / count of each. */
PD_HD float pd_pool_grad_at(const float *x, const float *dy, const pd_pool_geom *g, int64_t ih, int64_t iw) {
  int64_t oh0, oh1, ow0, ow1;
  pd_pool_covering(ih, g->kh, g->sh, g->ph, g->ho, &oh0, &oh1);
  pd_pool_covering(iw, g->kw, g->sw, g->pw, g->wo, &ow0, &ow1);
  float acc = 0;
  for (int64_t oh = oh0; oh < oh1; oh++) {
    pd_span r = pd_pool_clip(oh, g->kh, g->sh, g->ph, g->h, g->exclusive);
    for (int64_t ow = ow0; ow < ow1; ow++) {
      if (g->avg) {
        pd_span q = pd_pool_clip(ow, g->kw, g->sw, g->pw, g->w, g->exclusive);
        acc += dy[oh * g->wo + ow] / (float)(r.count * q.count);
      } else if (pd_pool_argmax(x, g, oh, ow) == ih * g->w + iw) {
        acc += dy[oh * g->wo + ow];
      }
    }
  }
  return acc;
}

/* ---- conv2d: im2col and its gather inverse ---- */
typedef struct pd_conv_geom {
  int64_t n, c, h, w, m, groups;
  int64_t kh, kw, sh, sw, ph, pw, dh, dw, ho, wo;
  int64_t cg, mg, kg, p; /* channels and filters per group, K = cg kh kw, P = ho wo */
} pd_conv_geom;
/* The column matrix of one image is [c kh kw, ho wo]: row r = (ch, i, j),
 * column p = (oh, ow) holds x[ch, oh sh - ph + i dh, ow sw - pw + j dw], 0 in the padding. */
PD_HD float pd_im2col_at(const float *x, const pd_conv_geom *g, int64_t r, int64_t p) {
  int64_t j = r % g->kw, i = (r / g->kw) % g->kh, ch = r / (g->kw * g->kh);
  int64_t oh = p / g->wo, ow = p % g->wo;
  int64_t ih = oh * g->sh - g->ph + i * g->dh, iw = ow * g->sw - g->pw + j * g->dw;
  return ih >= 0 && ih < g->h && iw >= 0 && iw < g->w ? x[(ch * g->h + ih) * g->w + iw] : 0;
}
/* dX at (ch, ih, iw) of one image: the sum of the column-matrix gradient
 * entries that im2col copied from it, taps in (i, j) order. col has leading
 * dimension ld (columns of this image start at col). */
PD_HD float pd_col2im_at(const float *col, int64_t ld, const pd_conv_geom *g, int64_t ch, int64_t ih, int64_t iw) {
  float acc = 0;
  for (int64_t i = 0; i < g->kh; i++) {
    int64_t th = ih + g->ph - i * g->dh;
    if (th < 0 || th % g->sh) continue;
    int64_t oh = th / g->sh;
    if (oh >= g->ho) continue;
    for (int64_t j = 0; j < g->kw; j++) {
      int64_t tw = iw + g->pw - j * g->dw;
      if (tw < 0 || tw % g->sw) continue;
      int64_t ow = tw / g->sw;
      if (ow >= g->wo) continue;
      acc += col[((ch * g->kh + i) * g->kw + j) * ld + oh * g->wo + ow];
    }
  }
  return acc;
}

/* ---- strided walks: transpose, the broadcast_* ops, matmul's batches ----
 * The offset in an operand of element i (flat, row-major) of a walk over
 * dims size[0..nd) where the operand steps by st[d] along dim d (0: the
 * operand repeats along it). */
PD_HD int64_t pd_strided_off(int nd, const int64_t *size, const int64_t *st, int64_t i) {
  int64_t off = 0;
  for (int d = nd - 1; d >= 0; d--) {
    off += (i % size[d]) * st[d];
    i /= size[d];
  }
  return off;
}
/* The walk's flat index of the r-th (in walk order) of the elements that the
 * operand's element j is read by (those sum into its gradient): the dims
 * with st[d] == 0 take r's digits, the others j's. Increasing in r. */
PD_HD int64_t pd_strided_gather(int nd, const int64_t *size, const int64_t *st, int64_t j, int64_t r) {
  int64_t idx = 0, mul = 1;
  for (int d = nd - 1; d >= 0; d--) {
    int64_t coord;
    if (st[d] == 0) {
      coord = r % size[d];
      r /= size[d];
    } else {
      coord = j % size[d];
      j /= size[d];
    }
    idx += coord * mul;
    mul *= size[d];
  }
  return idx;
}
/* An operand of rank t_nd and dims t_dims read over the walk's nd dims
 * (lined up from the last, as NumPy broadcasts): its strides, 0 where it
 * has a 1 (or no dim) that the walk repeats. */
PD_HD void pd_strided_bcast(int t_nd, const int64_t *t_dims, int nd, const int64_t *size, int64_t *st) {
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; i--) {
    int ti = i - (nd - t_nd);
    int64_t d = ti >= 0 ? t_dims[ti] : 1;
    st[i] = d == 1 && size[i] != 1 ? 0 : s;
    s *= d;
  }
}

/* transpose: the walk over Out (dims size) with X's strides (st): Out's
 * element o is X's element pd_strided_off(nd, size, st, o). */
typedef struct pd_perm_map {
  int nd;
  int64_t size[PD_MAX_DIMS], st[PD_MAX_DIMS];
  int64_t numel;
} pd_perm_map;
PD_HD void pd_perm_map_init(pd_perm_map *p, int nd, const int64_t *xdims, const int *perm) {
  int64_t xstride[PD_MAX_DIMS], s = 1;
  for (int i = nd - 1; i >= 0; i--) xstride[i] = s, s *= xdims[i];
  p->nd = nd;
  p->numel = 1;
  for (int i = 0; i < nd; i++) p->size[i] = xdims[perm[i]], p->st[i] = xstride[perm[i]], p->numel *= p->size[i];
}

/* broadcast_add/sub/mul/div: the walk over Out with X's strides xs and Y's
 * ys; nx, ny their element counts. */
typedef enum pd_bc_kind { PD_BC_ADD, PD_BC_SUB, PD_BC_MUL, PD_BC_DIV } pd_bc_kind;
typedef struct pd_bc_map {
  int nd;
  int64_t size[PD_MAX_DIMS], xs[PD_MAX_DIMS], ys[PD_MAX_DIMS];
  int64_t numel, nx, ny;
} pd_bc_map;
PD_HD void pd_bc_map_init(pd_bc_map *m, int x_nd, const int64_t *x_dims, int y_nd, const int64_t *y_dims, int nd,
                          const int64_t *out_dims) {
  m->nd = nd;
  m->numel = 1;
  for (int i = 0; i < nd; i++) m->numel *= (m->size[i] = out_dims[i]);
  pd_strided_bcast(x_nd, x_dims, nd, m->size, m->xs);
  pd_strided_bcast(y_nd, y_dims, nd, m->size, m->ys);
  m->nx = m->ny = 1;
  for (int i = 0; i < x_nd; i++) m->nx *= x_dims[i];
  for (int i = 0; i < y_nd; i++) m->ny *= y_dims[i];
}
/* Out's element from X's and Y's (floats: IEEE division, x / 0 = inf), and
 * each operand's gradient term from dOut's element g:
 * add: g, g; sub: g, -g; mul: g y, g x; div: g / y, -g x / y^2. */
#define PD_KMATH_BC(T)                                                                                         \
  PD_HD T pd_bc_op_##T(pd_bc_kind k, T a, T b) {                                                               \
    return k == PD_BC_ADD ? a + b : k == PD_BC_SUB ? a - b : k == PD_BC_MUL ? a * b : a / b;                   \
  }                                                                                                            \
  PD_HD T pd_bc_dx_##T(pd_bc_kind k, T g, T y) { return k == PD_BC_MUL ? g * y : k == PD_BC_DIV ? g / y : g; } \
  PD_HD T pd_bc_dy_##T(pd_bc_kind k, T g, T x, T y) {                                                          \
    return k == PD_BC_ADD ? g : k == PD_BC_SUB ? -g : k == PD_BC_MUL ? g * x : -g * x / (y * y);               \
  }
PD_KMATH_BC(float)
PD_KMATH_BC(double)

/* ---- log_softmax: one element of a row from the row max m and lse =
 * log(sum exp(x - m)); backward from Out's y, dOut's dy and the row's sum of
 * dOut ---- */
PD_HD float pd_exp_float(float x) { return expf(x); }
PD_HD double pd_exp_double(double x) { return exp(x); }
#define PD_KMATH_LOGSM(T)                                               \
  PD_HD T pd_log_softmax_##T(T x, T m, T lse) { return (x - m) - lse; } \
  PD_HD T pd_log_softmax_grad_##T(T y, T dy, T sum) { return dy - pd_exp_##T(y) * sum; }
PD_KMATH_LOGSM(float)
PD_KMATH_LOGSM(double)

/* ---- matmul: the batch layout of X [..., M, K] times Y [..., K, N] ----
 * Out's batch dims batch[0..nb) and, per batch dim, how many matrices X
 * and Y step by (0 where one repeats); Out's batches are contiguous. */
typedef struct pd_mm_layout {
  int64_t m, k, n, kx;
  int nb;
  int64_t batch[PD_MAX_DIMS], xs[PD_MAX_DIMS], ys[PD_MAX_DIMS], os[PD_MAX_DIMS];
  int64_t nbatch;
} pd_mm_layout;
/* Offsets (in matrices) of X's and Y's operands for Out's batch b. */
PD_HD void pd_mm_batch_offsets(const pd_mm_layout *p, int64_t b, int64_t *xo, int64_t *yo) {
  *xo = pd_strided_off(p->nb, p->batch, p->xs, b);
  *yo = pd_strided_off(p->nb, p->batch, p->ys, b);
}
/* Whether an operand with batch strides st steps uniformly over the batch
 * dims [from, nb), as one strided-batched product can read it: by one matrix
 * per batch (*step 1) or not at all (*step 0). Dims of size 1 do not count. */
PD_HD bool pd_mm_uniform(const pd_mm_layout *p, const int64_t *st, int from, int64_t *step) {
  bool zero = true, dense = true;
  int64_t s = 1;
  for (int i = p->nb - 1; i >= from; i--) {
    if (p->batch[i] != 1) zero = zero && st[i] == 0, dense = dense && st[i] == s;
    s *= p->batch[i];
  }
  *step = zero ? 0 : 1;
  return zero || dense;
}
/* Where matmul.cu splits the batches of a product whose operands have batch
 * strides st[0..3): the first dim s such that all three step uniformly over
 * [s, nb) (step[i] 0 or 1 matrix per batch there); the dims before s are a
 * loop of strided-batched products. */
PD_HD int pd_mm_split(const pd_mm_layout *p, const int64_t *const *st, int64_t *step) {
  for (int s = 0; s < p->nb; s++)
    if (pd_mm_uniform(p, st[0], s, &step[0]) && pd_mm_uniform(p, st[1], s, &step[1]) &&
        pd_mm_uniform(p, st[2], s, &step[2]))
      return s;
  step[0] = step[1] = step[2] = 0;
  return p->nb;
}
/* Whether no batch dim of size > 1 repeats the operand (each of its
 * matrices is used by one batch only). */
PD_HD bool pd_mm_unrepeated(const pd_mm_layout *p, const int64_t *st) {
  for (int i = 0; i < p->nb; i++)
    if (p->batch[i] != 1 && st[i] == 0) return false;
  return true;
}

#endif
