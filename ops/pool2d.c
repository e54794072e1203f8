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
#include "pool2d.h"

#include <string.h>

#include "base/arch.h"
#include "base/tmpl.h"
#include "conv_util.h"
#include "core/op.h"
#include "cpu/features.h"
#include "cpu/parallel.h"
#include "op_helpers.h"
#include "kmath.h"

static const char *const pool_types[] = {"max", "avg", NULL};

static const pd_slot_def inputs[] = {[X] = {"X", "images [N, C, H, W]", 0}};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "[N, C, Ho, Wo], Ho = (H + 2 ph - kh) / sh + 1, rounded down (up with ceil_mode), likewise Wo", 0}};
static const pd_attr_def attrs[] = {
    [A_TYPE] = {"pooling_type", "\"max\" or \"avg\"", PD_ATTR_STRING, .def = "s: \"max\"", .one_of = pool_types},
    [A_KSIZE] = {"ksize", "window height and width [kh, kw]; required unless global_pooling", PD_ATTR_INTS,
                 .def = "ints: []", .min_kind = PD_GT, .min = 0},
    [A_STRIDES] = {"strides", "step of the window [sh, sw]", PD_ATTR_INTS, .def = "ints: [1, 1]", .min_kind = PD_GT,
                   .min = 0},
    [A_PADS] = {"paddings", "padding on each side [ph, pw], smaller than the window", PD_ATTR_INTS,
                .def = "ints: [0, 0]", .min_kind = PD_GE, .min = 0},
    [A_GLOBAL] = {"global_pooling",
                  "pool each channel's whole H x W to 1 x 1 (ksize, strides and paddings are ignored)", PD_ATTR_BOOL,
                  .def = "b: false"},
    [A_CEIL] = {"ceil_mode", "round the output size up, so a last partial window is kept", PD_ATTR_BOOL,
                .def = "b: false"},
    [A_EXCLUSIVE] =
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

/* The op's work tensor as n elements of dt: the parts' scratch rows. */
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
 * prefetched neighbour): sharing one made two threads slower than one. */
static int64_t row_stride(const geom *g) { return (g->w + 31) / 32 * 32; }

static int plane_parts(const geom *g) {
  int parts = pd_parallel_parts(g->n * g->c * g->h * g->w, (int64_t)1 << 16);
  return parts > g->n * g->c ? 1 : parts;
}

/* Max over 2x2 windows at stride 2 that all lie inside X, the common case,
 * has a path of its own, much faster than the generic loops. */
static bool is_max2x2(const geom *g) {
  return !g->avg && g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && !g->ph && !g->pw && 2 * g->ho <= g->h &&
         2 * g->wo <= g->w;
}

/* The 2x2 stride-2 max pool in float on AVX2, 8 outputs at a time from two
 * input rows; the compiler's SSE2 loops spent their time in the tails of
 * short rows (fashion_cnn3 on a Zen 3 core, 1 thread: the 28x28 pool
 * 0.76-1.0 -> 0.51-0.55 ms, its gradient 1.6-1.8 -> 0.9-1.1). Masked
 * stores are slow on AMD: tails are stored from a copy. Both return false
 * where the rows hold a NaN (found on the way: the callers then run the
 * plain loops, which handle it) or the CPU has no AVX2. pool2d_t.h calls
 * the gradient's only for rows of at least 8 windows: on shorter ones the
 * plain loop was faster. */
#ifdef PD_X86
#include <immintrin.h>

#include "cpu/lanes8.h"

#define AVX2 __attribute__((target("avx2")))

/* outputs in lane order 0, 1, 4, 5, 2, 3, 6, 7 (the shuffles') <-> 0 .. 7 */
AVX2 static inline __m256 swap_mid(__m256 v) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
}

/* One plane: y [ho, wo] from x [h, w]. */
AVX2 static bool max2x2_plane(const float *x, int64_t w, int64_t ho, int64_t wo, float *y) {
  __m256 nan = _mm256_setzero_ps();
  for (int64_t oh = 0; oh < ho; oh++, y += wo) {
    const float *a = x + 2 * oh * w, *b = a + w;
    for (int64_t ow = 0; ow < wo; ow += 8) {
      const int64_t n = wo - ow < 8 ? wo - ow : 8;
      __m256 a0, a1, b0, b1;
      if (n == 8) { /* masked stores are slow on AMD (and loads no faster than plain): the tail only */
        a0 = _mm256_loadu_ps(a + 2 * ow), a1 = _mm256_loadu_ps(a + 2 * ow + 8);
        b0 = _mm256_loadu_ps(b + 2 * ow), b1 = _mm256_loadu_ps(b + 2 * ow + 8);
      } else {
        const __m256i m0 = pd_lanes_below8(2 * n), m1 = pd_lanes_below8(2 * n - 8);
        a0 = _mm256_maskload_ps(a + 2 * ow, m0), a1 = _mm256_maskload_ps(a + 2 * ow + 8, m1);
        b0 = _mm256_maskload_ps(b + 2 * ow, m0), b1 = _mm256_maskload_ps(b + 2 * ow + 8, m1);
      }
      nan = _mm256_or_ps(nan, _mm256_or_ps(_mm256_cmp_ps(a0, b0, _CMP_UNORD_Q), _mm256_cmp_ps(a1, b1, _CMP_UNORD_Q)));
      /* as the plain loops, ties (+0 and -0) keep the earlier value: max_ps(p, q) is p > q ? p : q */
      __m256 v0 = _mm256_max_ps(b0, a0), v1 = _mm256_max_ps(b1, a1);
      __m256 r = swap_mid(_mm256_max_ps(_mm256_shuffle_ps(v0, v1, 0xDD), _mm256_shuffle_ps(v0, v1, 0x88)));
      if (n == 8) {
        _mm256_storeu_ps(y + ow, r);
      } else {
        float t[8];
        _mm256_storeu_ps(t, r);
        for (int64_t i = 0; i < n; i++) y[ow + i] = t[i];
      }
    }
  }
  return _mm256_movemask_ps(nan) == 0;
}

/* One output row's gradient: dOut dy [wo] into the two dX rows d0, d1
 * (every element of both written) by the first maximum of each window of
 * the input rows a, b in row-major order, as the plain loop picks it. */
AVX2 static bool max2x2_grad_rows(const float *a, const float *b, const float *dy, int64_t w, int64_t wo, float *d0,
                                  float *d1) {
  __m256 nan = _mm256_setzero_ps();
  for (int64_t ow = 0; ow < wo; ow += 8) {
    const int64_t n = wo - ow < 8 ? wo - ow : 8;
    __m256 a0, a1, b0, b1, g;
    if (n == 8) {
      a0 = _mm256_loadu_ps(a + 2 * ow), a1 = _mm256_loadu_ps(a + 2 * ow + 8);
      b0 = _mm256_loadu_ps(b + 2 * ow), b1 = _mm256_loadu_ps(b + 2 * ow + 8);
      g = _mm256_loadu_ps(dy + ow);
    } else {
      const __m256i m0 = pd_lanes_below8(2 * n), m1 = pd_lanes_below8(2 * n - 8);
      a0 = _mm256_maskload_ps(a + 2 * ow, m0), a1 = _mm256_maskload_ps(a + 2 * ow + 8, m1);
      b0 = _mm256_maskload_ps(b + 2 * ow, m0), b1 = _mm256_maskload_ps(b + 2 * ow + 8, m1);
      g = _mm256_maskload_ps(dy + ow, pd_lanes_below8(n));
    }
    nan = _mm256_or_ps(nan, _mm256_or_ps(_mm256_cmp_ps(a0, b0, _CMP_UNORD_Q), _mm256_cmp_ps(a1, b1, _CMP_UNORD_Q)));
    /* the window's 4 values (row-major order) and dOut, each in the shuffles' lane order */
    __m256 v0 = _mm256_shuffle_ps(a0, a1, 0x88), v1 = _mm256_shuffle_ps(a0, a1, 0xDD);
    __m256 v2 = _mm256_shuffle_ps(b0, b1, 0x88), v3 = _mm256_shuffle_ps(b0, b1, 0xDD);
    g = swap_mid(g);
    __m256 k1 = _mm256_cmp_ps(v1, v0, _CMP_GT_OQ), best = _mm256_blendv_ps(v0, v1, k1);
    __m256 k2 = _mm256_cmp_ps(v2, best, _CMP_GT_OQ);
    best = _mm256_blendv_ps(best, v2, k2);
    __m256 k3 = _mm256_cmp_ps(v3, best, _CMP_GT_OQ), later = _mm256_or_ps(k2, k3);
    __m256 g0 = _mm256_andnot_ps(_mm256_or_ps(k1, later), g), g1 = _mm256_andnot_ps(later, _mm256_and_ps(k1, g));
    __m256 g2 = _mm256_andnot_ps(k3, _mm256_and_ps(k2, g)), g3 = _mm256_and_ps(k3, g);
    /* interleaved back: unpacklo holds outputs 0-3's columns, unpackhi 4-7's */
    __m256 r[4] = {_mm256_unpacklo_ps(g0, g1), _mm256_unpackhi_ps(g0, g1), _mm256_unpacklo_ps(g2, g3),
                   _mm256_unpackhi_ps(g2, g3)};
    if (n == 8) {
      _mm256_storeu_ps(d0 + 2 * ow, r[0]), _mm256_storeu_ps(d0 + 2 * ow + 8, r[1]);
      _mm256_storeu_ps(d1 + 2 * ow, r[2]), _mm256_storeu_ps(d1 + 2 * ow + 8, r[3]);
    } else { /* masked stores are slow on AMD */
      float t[32];
      for (int i = 0; i < 4; i++) _mm256_storeu_ps(t + 8 * i, r[i]);
      for (int64_t i = 0; i < 2 * n; i++) d0[2 * ow + i] = t[i], d1[2 * ow + i] = t[16 + i];
    }
  }
  for (int64_t iw = 2 * wo; iw < w; iw++) d0[iw] = d1[iw] = 0; /* a last column no window covers */
  return _mm256_movemask_ps(nan) == 0;
}
#undef AVX2

static bool max2x2_plane_float(const float *x, int64_t w, int64_t ho, int64_t wo, float *y) {
  return pd_cpu_avx2_fma() && max2x2_plane(x, w, ho, wo, y);
}
static bool max2x2_grad_rows_float(const float *a, const float *b, const float *dy, int64_t w, int64_t wo, float *d0,
                                   float *d1) {
  return pd_cpu_avx2_fma() && max2x2_grad_rows(a, b, dy, w, wo, d0, d1);
}
#else
static bool max2x2_plane_float(const float *x, int64_t w, int64_t ho, int64_t wo, float *y) {
  (void)x, (void)w, (void)ho, (void)wo, (void)y;
  return false;
}
static bool max2x2_grad_rows_float(const float *a, const float *b, const float *dy, int64_t w, int64_t wo, float *d0,
                                   float *d1) {
  (void)a, (void)b, (void)dy, (void)w, (void)wo, (void)d0, (void)d1;
  return false;
}
#endif
static bool max2x2_plane_double(const double *x, int64_t w, int64_t ho, int64_t wo, double *y) {
  (void)x, (void)w, (void)ho, (void)wo, (void)y;
  return false;
}
static bool max2x2_grad_rows_double(const double *a, const double *b, const double *dy, int64_t w, int64_t wo,
                                    double *d0, double *d1) {
  (void)a, (void)b, (void)dy, (void)w, (void)wo, (void)d0, (void)d1;
  return false;
}

#define T float
#include "pool2d_t.h"
#undef T
#define T double
#include "pool2d_t.h"
#undef T

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
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .flops = flops,
    .grad_flops = flops,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
