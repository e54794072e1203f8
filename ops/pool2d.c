/* pool2d.c — max or average pooling over NCHW images: each output is the max
 * or the mean of a kh x kw window of its channel, sliding by the strides over
 * the input padded on each side; global_pooling takes the whole H x W.
 * Padded positions never win a max; a window holding a NaN gives NaN (as
 * PyTorch). An average counts only the window's
 * in-bounds elements (exclusive, the default) or every position of the window
 * inside the padded input. Backward: max routes dOut to the first maximum of
 * the window in row-major order (ties: the earliest element wins, as in the
 * forward scan; a window's first NaN, if any); avg spreads dOut / count over
 * the window. */
#include <string.h>

#include "conv_util.h"
#include "gpu_ops.h"
#include "kmath.h"
#include "core/op.h"
#include "cpu/parallel.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_TYPE, A_KSIZE, A_STRIDES, A_PADS, A_GLOBAL, A_CEIL, A_EXCLUSIVE, N_ATTRS };

static const char *const pool_types[] = {"max", "avg", NULL};

static const pd_slot_def inputs[] = {{"X", "images [N, C, H, W]", 0}};
static const pd_slot_def outputs[] = {
    {"Out", "[N, C, Ho, Wo], Ho = (H + 2 ph - kh) / sh + 1, rounded down (up with ceil_mode), likewise Wo", 0}};
static const pd_attr_def attrs[] = {
    {"pooling_type", "\"max\" or \"avg\"", PD_ATTR_STRING, .def = "s: \"max\"", .one_of = pool_types},
    {"ksize", "window height and width [kh, kw]; required unless global_pooling", PD_ATTR_INTS, .def = "ints: []",
     .min_kind = PD_GT, .min = 0},
    {"strides", "step of the window [sh, sw]", PD_ATTR_INTS, .def = "ints: [1, 1]", .min_kind = PD_GT, .min = 0},
    {"paddings", "padding on each side [ph, pw], smaller than the window", PD_ATTR_INTS, .def = "ints: [0, 0]",
     .min_kind = PD_GE, .min = 0},
    {"global_pooling", "pool each channel's whole H x W to 1 x 1 (ksize, strides and paddings are ignored)",
     PD_ATTR_BOOL, .def = "b: false"},
    {"ceil_mode", "round the output size up, so a last partial window is kept", PD_ATTR_BOOL, .def = "b: false"},
    {"exclusive",
     "avg: divide by the number of in-bounds elements of the window (true), or by the window's positions inside "
     "the padded input (false)",
     PD_ATTR_BOOL, .def = "b: true"},
};

/* Attribute values and spatial sizes above this are refused (no overflow). */
#define POOL_LIMIT ((int64_t)1 << 30)

/* The pooling's sizes (kmath.h, shared with the GPU kernels). */
typedef pd_pool_geom geom;

static pd_status pair(pd_ctx *c, int a, int64_t *v0, int64_t *v1) {
  if (a == A_KSIZE && pd_attr_at(c, a)->n == 0)
    return pd_ctx_fail(c, PD_ERR_INPUT, "attribute \"ksize\" is required unless global_pooling is true");
  return pd_conv_pair(c, a, attrs[a].name, POOL_LIMIT, v0, v1);
}

/* Reads and checks the sizes from the attributes and X (dims[0] may be -1
 * at load). */
static pd_status get_geom(pd_ctx *c, const pd_tensor *x, geom *g) {
  pd_status st = pd_conv_nchw(c, x, "X", POOL_LIMIT);
  if (st) return st;
  char xs[128];
  pd_dims_str(x->ndim, x->dims, xs, sizeof xs);
  g->n = x->dims[0], g->c = x->dims[1], g->h = x->dims[2], g->w = x->dims[3];
  g->avg = strcmp(pd_attr_s(c, A_TYPE), "avg") == 0;
  g->exclusive = pd_attr_b(c, A_EXCLUSIVE);
  if (pd_attr_b(c, A_GLOBAL)) {
    if (g->h < 1 || g->w < 1) return pd_ctx_fail(c, PD_ERR_INPUT, "global pooling of an empty image %s", xs);
    g->kh = g->h, g->kw = g->w, g->sh = g->sw = 1, g->ph = g->pw = 0, g->ho = g->wo = 1;
    return PD_OK;
  }
  st = pair(c, A_KSIZE, &g->kh, &g->kw);
  if (!st) st = pair(c, A_STRIDES, &g->sh, &g->sw);
  if (!st) st = pair(c, A_PADS, &g->ph, &g->pw);
  if (st) return st;
  if (g->ph >= g->kh || g->pw >= g->kw)
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "paddings [%lld, %lld] must be smaller than ksize [%lld, %lld]: a window could lie entirely in "
                       "the padding",
                       (long long)g->ph, (long long)g->pw, (long long)g->kh, (long long)g->kw);
  bool ceil = pd_attr_b(c, A_CEIL);
  g->ho = pd_win_out(g->h, g->kh, g->sh, g->ph, ceil);
  g->wo = pd_win_out(g->w, g->kw, g->sw, g->pw, ceil);
  if (g->ho < 1 || g->wo < 1)
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "pooling window %lldx%lld is larger than the padded input %lldx%lld (input %lldx%lld, paddings "
                       "[%lld, %lld]); the output would be empty",
                       (long long)g->kh, (long long)g->kw, (long long)(g->h + 2 * g->ph), (long long)(g->w + 2 * g->pw),
                       (long long)g->h, (long long)g->w, (long long)g->ph, (long long)g->pw);
  int64_t odims[3] = {g->c, g->ho, g->wo}, n;
  if (!pd_dims_product(3, odims, &n))
    return pd_ctx_fail(c, PD_ERR_INPUT, "an output image [%lld, %lld, %lld] has more elements than fit in 64 bits",
                       (long long)g->c, (long long)g->ho, (long long)g->wo);
  return PD_OK;
}

pd_status pd_pool2d_geom(pd_ctx *c, const pd_tensor *x, pd_pool_geom *g) { return get_geom(c, x, g); }

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  geom g;
  pd_status st = get_geom(c, x, &g);
  if (st) return st;
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, 4, (int64_t[]){g.n, g.c, g.ho, g.wo});
}

/* One operation per window element per output, forward and backward alike. */
static double flops(pd_ctx *c) {
  geom g;
  if (get_geom(c, pd_in(c, X), &g)) return 0;
  return (double)g.n * (double)g.c * (double)g.ho * (double)g.wo * (double)g.kh * (double)g.kw;
}

/* Grad op slots (see op.h): inputs X Out dOut, output dX. */
enum { G_X = PD_GRAD_X(N_IN, N_OUT, X), G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT) };

/* The window of output (oh, ow) along one dim: input positions [lo, hi)
 * clipped to the input, and the positions an average counts. */
static void *scratch(pd_ctx *c, pd_dtype dt, int64_t n, pd_status *st) {
  pd_tensor *t = &c->op->work[0];
  t->dtype = dt;
  *st = pd_tensor_set_dims(t, 1, &n, c->err);
  if (!*st) *st = pd_ctx_alloc(c, t);
  return *st ? NULL : pd_tensor_data(t);
}

/* The planes (image, channel) are split among threads, each part with its
 * own row of scratch; no part reads or writes another's planes. */
typedef struct job {
  const geom *g;
  const void *x, *dy;
  void *y, *scratch; /* y: Out forward, dX backward */
} job;

/* Elements between two parts' scratch rows: a row rounded up to 32 (128
 * bytes for float), so no two threads write the same cache line (or its
 * prefetched neighbour). Adjacent rows made fashion_cnn's first pool slower
 * on two threads than on one (0.53 -> 0.91 ms). */
static int64_t row_stride(const geom *g) { return (g->w + 31) / 32 * 32; }

static int plane_parts(const geom *g) {
  int parts = pd_parallel_parts(g->n * g->c * g->h * g->w, (int64_t)1 << 16);
  return parts > g->n * g->c ? 1 : parts;
}

/* Max over 2x2 windows at stride 2 that all lie inside X, the common case,
 * has a path of its own: the generic loops run at a third of its speed. */
static bool is_max2x2(const geom *g) {
  return !g->avg && g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && !g->ph && !g->pw && 2 * g->ho <= g->h &&
         2 * g->wo <= g->w;
}

/* Forward pools each output row in two passes, both windows being
 * rectangles: first down the window's rows, whole input rows at a time
 * (red[w] = max or sum over ih of x[ih, w], vectorised), then across each
 * output's columns of red. Max is exact in any order; a sum goes rows first.
 * Backward max scans the window for the index of its first maximum in
 * row-major order (a strict > scan, branch-free: the comparisons are
 * unpredictable), so ties go to the earliest element; the 2x2 path picks
 * the same element by arithmetic on the comparisons. Backward avg mirrors
 * the forward: across, share[w] = sum over the outputs whose columns hold w
 * of dOut / count, then down: dX[ih, :] += share for the window's rows. */
#define POOL_KERNELS(T)                                                                                        \
  static void forward_part_##T(void *arg, int part, int nparts) {                                              \
    const job *j = arg;                                                                                        \
    const geom g = *j->g;                                                                                      \
    int64_t lo, hi;                                                                                            \
    pd_parallel_range(g.n *g.c, part, nparts, &lo, &hi);                                                       \
    const T *x = (const T *)j->x + lo * g.h * g.w;                                                             \
    T *y = (T *)j->y + lo * g.ho * g.wo, *red = (T *)j->scratch + part * row_stride(&g);                       \
    const bool max2x2 = is_max2x2(&g);                                                                         \
    for (int64_t pl = lo; pl < hi; pl++, x += g.h * g.w) {                                                     \
      /* whether the plane holds a NaN (one vectorised pass, in cache for the pooling): the plain max is fast, \
       * pd_max keeps NaN (its blend took pool2d 0.37 -> 0.48 ms in fashion_cnn) */                            \
      int nan = 0;                                                                                             \
      if (!g.avg)                                                                                              \
        for (int64_t i = 0; i < g.h * g.w; i++) nan |= x[i] != x[i];                                           \
      for (int64_t oh = 0; oh < g.ho; oh++) {                                                                  \
        pd_span r = pd_pool_clip(oh, g.kh, g.sh, g.ph, g.h, g.exclusive);                                      \
        memcpy(red, x + r.lo * g.w, sizeof(T) * (size_t)g.w);                                                  \
        for (int64_t ih = r.lo + 1; ih < r.hi; ih++) {                                                         \
          const T *row = x + ih * g.w;                                                                         \
          if (g.avg)                                                                                           \
            for (int64_t iw = 0; iw < g.w; iw++) red[iw] += row[iw];                                           \
          else if (nan)                                                                                        \
            for (int64_t iw = 0; iw < g.w; iw++) red[iw] = pd_max_##T(row[iw], red[iw]);                       \
          else                                                                                                 \
            for (int64_t iw = 0; iw < g.w; iw++) red[iw] = row[iw] > red[iw] ? row[iw] : red[iw];              \
        }                                                                                                      \
        if (max2x2) { /* pairs side by side, vectorisable */                                                   \
          if (nan)                                                                                             \
            for (int64_t ow = 0; ow < g.wo; ow++) y[ow] = pd_max_##T(red[2 * ow + 1], red[2 * ow]);            \
          else                                                                                                 \
            for (int64_t ow = 0; ow < g.wo; ow++)                                                              \
              y[ow] = red[2 * ow + 1] > red[2 * ow] ? red[2 * ow + 1] : red[2 * ow];                           \
          y += g.wo;                                                                                           \
          continue;                                                                                            \
        }                                                                                                      \
        for (int64_t ow = 0; ow < g.wo; ow++, y++) {                                                           \
          pd_span q = pd_pool_clip(ow, g.kw, g.sw, g.pw, g.w, g.exclusive);                                    \
          T v = red[q.lo];                                                                                     \
          if (g.avg) {                                                                                         \
            for (int64_t iw = q.lo + 1; iw < q.hi; iw++) v += red[iw];                                         \
            v /= (T)(r.count * q.count);                                                                       \
          } else if (nan) {                                                                                    \
            for (int64_t iw = q.lo + 1; iw < q.hi; iw++) v = pd_max_##T(red[iw], v);                           \
          } else {                                                                                             \
            for (int64_t iw = q.lo + 1; iw < q.hi; iw++) v = red[iw] > v ? red[iw] : v;                        \
          }                                                                                                    \
          *y = v;                                                                                              \
        }                                                                                                      \
      }                                                                                                        \
    }                                                                                                          \
  }                                                                                                            \
                                                                                                               \
  static pd_status forward_##T(pd_ctx *c) {                                                                    \
    geom g;                                                                                                    \
    pd_status st = get_geom(c, pd_in(c, X), &g);                                                               \
    const int parts = st ? 1 : plane_parts(&g);                                                                \
    void *red = st ? NULL : scratch(c, pd_in(c, X)->dtype, parts * row_stride(&g), &st);                       \
    if (st) return st;                                                                                         \
    job j = {&g, PD_DATA(pd_in(c, X), T), NULL, PD_DATA(pd_out(c, OUT), T), red};                              \
    pd_parallel_run(parts, forward_part_##T, &j);                                                              \
    return PD_OK;                                                                                              \
  }                                                                                                            \
                                                                                                               \
  static void backward_part_##T(void *arg, int part, int nparts) {                                             \
    const job *j = arg;                                                                                        \
    const geom g = *j->g;                                                                                      \
    int64_t lo, hi;                                                                                            \
    pd_parallel_range(g.n *g.c, part, nparts, &lo, &hi);                                                       \
    const T *x = (const T *)j->x + lo * g.h * g.w, *dy = (const T *)j->dy + lo * g.ho * g.wo;                  \
    T *dx = (T *)j->y + lo * g.h * g.w, *share = j->scratch ? (T *)j->scratch + part * row_stride(&g) : NULL;  \
    const bool max2x2 = is_max2x2(&g);                                                                         \
    /* 2x2: each pair of dX rows is zeroed just before its scatter, in cache (a memset of the whole part first \
     * left the rows to be fetched again: 2.0 ms for fashion_cnn's first pool, 64 x 32 x 28 x 28) */           \
    if (!max2x2) memset(dx, 0, sizeof(T) * (size_t)((hi - lo) * g.h * g.w));                                   \
    for (int64_t pl = lo; pl < hi; pl++, x += g.h * g.w, dx += g.h * g.w) {                                    \
      if (max2x2 && 2 * g.ho < g.h) /* rows below the last window */                                           \
        memset(dx + 2 * g.ho * g.w, 0, sizeof(T) * (size_t)((g.h - 2 * g.ho) * g.w));                          \
      for (int64_t oh = 0; oh < g.ho; oh++, dy += g.wo) {                                                      \
        pd_span r = pd_pool_clip(oh, g.kh, g.sh, g.ph, g.h, g.exclusive);                                      \
        if (max2x2) { /* the first of the 4 in row-major order that is largest takes dOut */                   \
          const T *a = x + 2 * oh * g.w, *b = a + g.w;                                                         \
          T *d = dx + 2 * oh * g.w;                                                                            \
          memset(d, 0, sizeof(T) * (size_t)(2 * g.w));                                                         \
          int nan = 0; /* any NaN in the two rows (vectorised): the rare case has a loop of its own */         \
          for (int64_t iw = 0; iw < 2 * g.wo; iw++) nan |= (a[iw] != a[iw]) | (b[iw] != b[iw]);                \
          for (int64_t ow = 0; ow < g.wo && !nan; ow++) {                                                      \
            /* k: which of the 4, by arithmetic (branches mispredict here) */                                  \
            T v0 = a[2 * ow], v1 = a[2 * ow + 1], v2 = b[2 * ow], v3 = b[2 * ow + 1];                          \
            int64_t k = v1 > v0;                                                                               \
            T best = v1 > v0 ? v1 : v0;                                                                        \
            int64_t gt2 = v2 > best;                                                                           \
            best = v2 > best ? v2 : best;                                                                      \
            k += (2 - k) * gt2;                                                                                \
            k += (3 - k) * (int64_t)(v3 > best);                                                               \
            d[(k >> 1) * g.w + 2 * ow + (k & 1)] = dy[ow];                                                     \
          }                                                                                                    \
          for (int64_t ow = 0; ow < g.wo && nan; ow++) { /* the first NaN of a window holding one */           \
            const T *w4[4] = {a + 2 * ow, a + 2 * ow + 1, b + 2 * ow, b + 2 * ow + 1};                         \
            int64_t k = 0;                                                                                     \
            for (int i = 1; i < 4; i++)                                                                        \
              if (pd_nan_gt_##T(*w4[i], *w4[k])) k = i;                                                        \
            d[(k >> 1) * g.w + 2 * ow + (k & 1)] = dy[ow];                                                     \
          }                                                                                                    \
          continue;                                                                                            \
        }                                                                                                      \
        if (g.avg) {                                                                                           \
          memset(share, 0, sizeof(T) * (size_t)g.w);                                                           \
          for (int64_t ow = 0; ow < g.wo; ow++) {                                                              \
            pd_span q = pd_pool_clip(ow, g.kw, g.sw, g.pw, g.w, g.exclusive);                                  \
            T v = dy[ow] / (T)(r.count * q.count);                                                             \
            for (int64_t iw = q.lo; iw < q.hi; iw++) share[iw] += v;                                           \
          }                                                                                                    \
          for (int64_t ih = r.lo; ih < r.hi; ih++) {                                                           \
            T *row = dx + ih * g.w;                                                                            \
            for (int64_t iw = 0; iw < g.w; iw++) row[iw] += share[iw];                                         \
          }                                                                                                    \
          continue;                                                                                            \
        }                                                                                                      \
        for (int64_t ow = 0; ow < g.wo; ow++) {                                                                \
          pd_span q = pd_pool_clip(ow, g.kw, g.sw, g.pw, g.w, g.exclusive);                                    \
          int64_t at = r.lo * g.w + q.lo, nan_at = -1; /* the first maximum; the first NaN */                  \
          T best = x[at];                                                                                      \
          for (int64_t ih = r.lo; ih < r.hi; ih++)                                                             \
            for (int64_t iw = q.lo; iw < q.hi; iw++) {                                                         \
              T v = x[ih * g.w + iw];                                                                          \
              bool gt = v > best;                                                                              \
              best = gt ? v : best;                                                                            \
              at = gt ? ih * g.w + iw : at;                                                                    \
              nan_at = ((v != v) & (nan_at < 0)) ? ih * g.w + iw : nan_at;                                     \
            }                                                                                                  \
          if (nan_at >= 0) at = nan_at;                                                                        \
          dx[at] += dy[ow];                                                                                    \
        }                                                                                                      \
      }                                                                                                        \
    }                                                                                                          \
  }                                                                                                            \
                                                                                                               \
  static pd_status backward_##T(pd_ctx *c) {                                                                   \
    geom g;                                                                                                    \
    pd_status st = get_geom(c, pd_in(c, G_X), &g);                                                             \
    const int parts = st ? 1 : plane_parts(&g);                                                                \
    void *share = st || !g.avg ? NULL : scratch(c, pd_in(c, G_X)->dtype, parts * row_stride(&g), &st);         \
    if (st) return st;                                                                                         \
    job j = {&g, PD_DATA(pd_in(c, G_X), T), PD_DATA(pd_in(c, G_DOUT), T), PD_DATA(pd_out(c, X), T), share};    \
    pd_parallel_run(parts, backward_part_##T, &j);                                                             \
    return PD_OK;                                                                                              \
  }
POOL_KERNELS(float)
POOL_KERNELS(double)

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_pool2d_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_pool2d_bwd),
#endif
};

const pd_op_def pd_op_pool2d = {
    .type = "pool2d",
    .comment = "Max or average pooling over NCHW images, with strides, padding, ceil mode and global pooling. "
               "Padding never wins a max; a window holding a NaN gives NaN (as PyTorch). Max's gradient goes to the "
               "window's first maximum in row-major order (its first NaN, if any).",
    .inputs = inputs,
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .attrs = attrs,
    .n_attrs = N_ATTRS,
    .infer_shape = infer,
    .flops = flops,
    .grad_flops = flops,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
