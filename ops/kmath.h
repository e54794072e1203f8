/* kmath.h — the per-element and per-row math of the kernels, written once
 * as PD_HD functions: the GPU kernels (ops/NAME.cu) call them from device code,
 * the CPU kernels call them where that costs nothing, and
 * test/unit/test_kmath.c checks them on the CPU against the CPU kernels.
 * Functions a CPU kernel also uses come in float and double (suffix _float,
 * _double; written once in kmath_t.h); the GPU-only ones (windows of pool2d,
 * im2col of conv2d, the broadcast of elementwise_add) are float. */
#ifndef PD_KMATH_H
#define PD_KMATH_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/tmpl.h"
#include "gpu/gpu.h"

/* Per-type libm calls: sqrt, log and exp in the argument's own precision
 * (as tgmath.h's), for the template below. */
PD_HD float pd_sqrt_float(float x) { return sqrtf(x); }
PD_HD double pd_sqrt_double(double x) { return sqrt(x); }
PD_HD float pd_log_float(float x) { return logf(x); }
PD_HD double pd_log_double(double x) { return log(x); }
PD_HD float pd_exp_float(float x) { return expf(x); }
PD_HD double pd_exp_double(double x) { return exp(x); }
PD_HD float pd_libm_tanh_float(float x) { return tanhf(x); }
PD_HD double pd_libm_tanh_double(double x) { return tanh(x); }

/* cross_entropy clamps X below at this (float32: FLT_MIN). */
#define PD_CE_TINY_float FLT_MIN
#define PD_CE_TINY_double 1e-20

/* The broadcast_* ops' arithmetic (pd_bc_op_T below, pd_bc_map further on). */
typedef enum pd_bc_kind { PD_BC_ADD, PD_BC_SUB, PD_BC_MUL, PD_BC_DIV } pd_bc_kind;

/* The float and double functions: kmath_t.h. Include kmath.h before a
 * template of your own, not inside one. */
#ifdef T
#error "kmath.h included while T is defined (inside an include template?)"
#endif
#define T float
#include "kmath_t.h"
#undef T
#define T double
#include "kmath_t.h"
#undef T

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
PD_HD int32_t pd_sat_int32_t(double v) {
  return isnan(v)                 ? 0
         : v <= (double)INT32_MIN ? (int32_t)INT32_MIN
         : v >= (double)INT32_MAX ? (int32_t)INT32_MAX
                                  : (int32_t)v;
}
PD_HD int64_t pd_sat_int64_t(double v) {
  return isnan(v)                 ? 0
         : v <= (double)INT64_MIN ? (int64_t)INT64_MIN
         : v >= (double)INT64_MAX ? (int64_t)INT64_MAX
                                  : (int64_t)v;
}
PD_HD uint8_t pd_sat_uint8_t(double v) {
  return isnan(v) ? 0 : v <= (double)0 ? (uint8_t)0 : v >= (double)UINT8_MAX ? (uint8_t)UINT8_MAX : (uint8_t)v;
}

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
