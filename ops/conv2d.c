/* conv2d.c — 2-D convolution over NCHW images:
 *   Output[n, m, oh, ow] = Bias[m] + sum_{c in group(m), i, j}
 *       Filter[m, c, i, j] * Input[n, g(m) Cg + c, oh sh - ph + i dh, ow sw - pw + j dw]
 * (taps falling in the zero padding read 0). Lowered to BLIS matrix
 * products: a chunk of images is unrolled (im2col) into a column matrix
 * col [C kh kw, images * Ho Wo] in op scratch, then one GEMM per group gives
 * Filter_g [Mg, Kg] · col_g for the whole chunk. Backward reuses the scheme:
 * dFilter_g += dOut_g · col_g^T over the chunks, dcol_g = Filter_g^T · dOut_g
 * folded back into dInput (col2im). One generic body for float and double. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/blas.h"
#include "conv_util.h"
#include "gpu_ops.h"
#include "kmath.h"
#include "core/op.h"
#include "cpu/parallel.h"
#include "base/util.h"
#include "cpu/features.h"
#include "base/arch.h"
#include "base/assert.h"

#ifdef PD_X86
#include <immintrin.h>
#endif

enum { INPUT, FILTER, BIAS, N_IN };
enum { OUTPUT, N_OUT };
enum { A_FILTERS, A_KSIZE, A_STRIDES, A_PADS, A_DILS, A_GROUPS, N_ATTRS };

static const pd_slot_def inputs[] = {
    {"Input", "images [N, C, H, W]", 0},
    {"Filter", "filters [M, C / groups, kh, kw], M = num_filters; inferred when not declared", PD_SLOT_PARAM},
    {"Bias", "bias [M], one per output channel; leave out for none", PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
};
static const pd_slot_def outputs[] = {
    {"Output", "[N, M, Ho, Wo], Ho = (H + 2 ph - dh (kh - 1) - 1) / sh + 1 rounded down, likewise Wo", 0}};
static const pd_attr_def attrs[] = {
    {"num_filters", "output channels M", PD_ATTR_INT, .required = true, .min_kind = PD_GT, .min = 0},
    {"kernel_size", "filter height and width [kh, kw]", PD_ATTR_INTS, .required = true, .min_kind = PD_GT, .min = 0},
    {"strides", "step of the window [sh, sw]", PD_ATTR_INTS, .def = "ints: [1, 1]", .min_kind = PD_GT, .min = 0},
    {"paddings", "zeros added on each side [ph, pw]", PD_ATTR_INTS, .def = "ints: [0, 0]", .min_kind = PD_GE, .min = 0},
    {"dilations", "spacing of the filter taps [dh, dw]", PD_ATTR_INTS, .def = "ints: [1, 1]", .min_kind = PD_GT,
     .min = 0},
    {"groups",
     "channel groups: input channels and filters are split into `groups` parts and filter part g sees only input "
     "part g (groups = C: depthwise); C and M must be divisible by it",
     PD_ATTR_INT, .def = "i: 1", .min_kind = PD_GE, .min = 1},
};

/* Attribute values and spatial sizes above this are refused, which keeps
 * every size computed here far from int64 overflow. */
#define CONV_LIMIT ((int64_t)1 << 30)

/* The convolution's sizes; K = Cg kh kw is the inner dimension of the
 * products, P = Ho Wo the output positions of one image. */
typedef pd_conv_geom geom;

static pd_status pair(pd_ctx *c, int a, int64_t *v0, int64_t *v1) {
  return pd_conv_pair(c, a, attrs[a].name, CONV_LIMIT, v0, v1);
}

/* Reads and checks the sizes from the attributes and Input x (dims[0] may
 * be -1 at load). */
static pd_status get_geom(pd_ctx *c, const pd_tensor *x, geom *g) {
  char xs[128];
  pd_dims_str(x->ndim, x->dims, xs, sizeof xs);
  pd_status st = pd_conv_nchw(c, x, "Input", CONV_LIMIT);
  if (!st) st = pair(c, A_KSIZE, &g->kh, &g->kw);
  if (!st) st = pair(c, A_STRIDES, &g->sh, &g->sw);
  if (!st) st = pair(c, A_PADS, &g->ph, &g->pw);
  if (!st) st = pair(c, A_DILS, &g->dh, &g->dw);
  if (st) return st;
  g->n = x->dims[0], g->c = x->dims[1], g->h = x->dims[2], g->w = x->dims[3];
  g->m = pd_attr_i(c, A_FILTERS), g->groups = pd_attr_i(c, A_GROUPS);
  if (g->m > CONV_LIMIT)
    return pd_ctx_fail(c, PD_ERR_INPUT, "attribute \"num_filters\" must be at most %lld, got %lld",
                       (long long)CONV_LIMIT, (long long)g->m);
  if (g->c % g->groups)
    return pd_ctx_fail(c, PD_ERR_INPUT, "input channels C = %lld (Input %s) are not divisible by groups = %lld",
                       (long long)g->c, xs, (long long)g->groups);
  if (g->m % g->groups)
    return pd_ctx_fail(c, PD_ERR_INPUT, "num_filters = %lld is not divisible by groups = %lld", (long long)g->m,
                       (long long)g->groups);
  int64_t span_h = pd_win_span(g->kh, g->dh), span_w = pd_win_span(g->kw, g->dw);
  g->ho = pd_win_out(g->h, span_h, g->sh, g->ph, false);
  g->wo = pd_win_out(g->w, span_w, g->sw, g->pw, false);
  if (g->ho < 1 || g->wo < 1)
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "kernel %lldx%lld (span %lldx%lld with dilations [%lld, %lld]) is larger than the padded input "
                       "%lldx%lld (input %lldx%lld, paddings [%lld, %lld]); the output would be empty",
                       (long long)g->kh, (long long)g->kw, (long long)span_h, (long long)span_w, (long long)g->dh,
                       (long long)g->dw, (long long)(g->h + 2 * g->ph), (long long)(g->w + 2 * g->pw), (long long)g->h,
                       (long long)g->w, (long long)g->ph, (long long)g->pw);
  g->cg = g->c / g->groups, g->mg = g->m / g->groups;
  int64_t fdims[4] = {g->m, g->cg, g->kh, g->kw}, odims[3] = {g->m, g->ho, g->wo}, n;
  if (!pd_dims_product(4, fdims, &n) || !pd_dims_product(3, odims, &n))
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "the filter [%lld, %lld, %lld, %lld] or an output image [%lld, %lld, %lld] has more elements "
                       "than fit in 64 bits",
                       (long long)g->m, (long long)g->cg, (long long)g->kh, (long long)g->kw, (long long)g->m,
                       (long long)g->ho, (long long)g->wo);
  g->kg = g->cg * g->kh * g->kw, g->p = g->ho * g->wo;
  return PD_OK;
}

pd_status pd_conv2d_geom(pd_ctx *c, const pd_tensor *x, pd_conv_geom *g) { return get_geom(c, x, g); }

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, INPUT);
  geom g;
  pd_status st = get_geom(c, x, &g);
  if (!st) st = pd_ctx_param_shape(c, FILTER, x->dtype, 4, (int64_t[]){g.m, g.cg, g.kh, g.kw});
  if (!st && pd_in(c, BIAS)) st = pd_ctx_param_shape(c, BIAS, x->dtype, 1, &g.m);
  if (st) return st;
  return pd_ctx_set_shape(c, pd_out(c, OUTPUT), x->dtype, 4, (int64_t[]){g.n, g.m, g.ho, g.wo});
}

/* One product [M, K] · [K, N P]: 2 M K N P, plus M N P for the bias. */
static double product_flops(const geom *g) { return 2.0 * (double)g->n * (double)g->m * (double)g->kg * (double)g->p; }

static double flops(pd_ctx *c) {
  geom g;
  if (get_geom(c, pd_in(c, INPUT), &g)) return 0;
  return product_flops(&g) + (pd_in(c, BIAS) ? (double)g.n * (double)g.m * (double)g.p : 0);
}

/* Grad op slots (see op.h): inputs Input Filter Bias Output dOutput,
 * outputs dInput dFilter dBias. */
enum {
  G_INPUT = PD_GRAD_X(N_IN, N_OUT, INPUT),
  G_FILTER = PD_GRAD_X(N_IN, N_OUT, FILTER),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUTPUT),
};

/* Only the gradients asked for: dFilter and dInput one product each, dBias
 * a sum over the output. */
static double grad_flops(pd_ctx *c) {
  geom g;
  if (get_geom(c, pd_in(c, G_INPUT), &g)) return 0;
  return product_flops(&g) * ((pd_out(c, FILTER) != NULL) + (pd_out(c, INPUT) != NULL)) +
         (pd_out(c, BIAS) ? (double)g.n * (double)g.m * (double)g.p : 0);
}

/* A 1x1 kernel with stride 1 and no padding reads the image itself as its
 * column matrix: no unrolling. */
static bool is_pointwise(const geom *g) {
  return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* Images unrolled per product. Small images are batched so the product has
 * at least CHUNK_COLS columns (BLIS runs well below its peak on thin
 * matrices; about 400 columns measured best for the 14x14 layer of a
 * Fashion-MNIST net), but the column matrix stays within CHUNK_BYTES, in
 * cache between im2col and the product. */
#define CHUNK_COLS 384
#define CHUNK_BYTES (1 << 21)
static int64_t chunk_images(const geom *g, size_t elem) {
  if (is_pointwise(g) || g->n <= 1) return 1;
  int64_t nb = (CHUNK_COLS + g->p - 1) / g->p;
  double per_image = (double)g->c * (double)g->kh * (double)g->kw * (double)g->p * (double)elem;
  int64_t fit = (int64_t)((double)CHUNK_BYTES / per_image);
  if (nb > fit) nb = fit;
  if (nb > g->n) nb = g->n;
  return nb < 1 ? 1 : nb;
}

/* Row stride of the scratch matrices: rows a multiple of 2 KiB apart map to
 * the same cache sets, which costs BLIS up to half its speed, so such a
 * stride gets 64 bytes more. */
static int64_t lead(int64_t cols, size_t elem) {
  return ((size_t)cols * elem) % 2048 == 0 ? cols + (int64_t)(64 / elem) : cols;
}

/* Op scratch work[i] with n elements; grows once, kept across steps. */
static void *scratch(pd_ctx *c, int i, pd_dtype dt, int64_t n, pd_status *st) {
  pd_tensor *t = &c->op->work[i];
  t->dtype = dt;
  *st = pd_tensor_set_dims(t, 1, &n, c->err);
  if (!*st) *st = pd_ctx_alloc(c, t);
  return *st ? NULL : pd_tensor_data(t);
}

/* The scratch of one run, for each of its `parts` (the images of the batch
 * are split among threads, each part with scratch of its own): col, the
 * column matrix [C kh kw, ld] (none for a pointwise kernel); stage, the
 * products' output [M, ld] when a chunk holds several images; pad, one
 * zero-padded image [C, H + 2 ph, W + 2 pw] when there is padding; and, in
 * backward, the part's own dFilter sum, transposed ([kg, mg] per group: see
 * backward below), and dBias sum (part 0 sums dBias straight into it); the
 * parts' sums are added in part order, so the result is the same on every
 * run with the same thread count. */
typedef struct plan {
  int64_t nb, ld, hp, wp;
  int parts;
  bool direct;            /* the direct small-K path (below) */
  bool packed;            /* the packed forward (below) */
  pd_ukr uk;              /* its micro-kernel */
  int64_t col_n, extra_n; /* elements of work[0] and work[1] per part */
  void *col, *stage, *pad, *dw, *db, *dacc;
  float *wpack;  /* packed: Filter in micro-panels, shared by the parts */
  int64_t *offs; /* packed: each tap's offset in a padded image */
} plan;

/* A convolution with few taps per output (K = C kh kw; fashion_cnn's first
 * layer has 25) makes thin products BLIS runs at a quarter of its speed
 * (40 GFLOP/s here). In float on AVX-512, with one group and stride 1 along
 * rows, such a convolution is computed directly instead: forward, 16 outputs
 * of a row for 8 filters at a time, each a chain of fused multiply-adds over
 * the taps in order, the bias added last; backward, dFilter's sums run in
 * 16 lanes per (filter, tap) over the part's images, rows and columns in
 * order, added across the lanes at the end. dInput still goes through the
 * products (dcol, col2im). */
#define DIRECT_MAX_K 32
#define DIRECT_MAX_MK 2048
/* The forward of the other float convolutions (one group, stride 1 along
 * rows, output rows at least as wide as a micro-panel) skips the column
 * matrix and BLIS's own packing of it: the image's taps are written straight
 * into the micro-kernel's packed layout, nr output positions at a time (one
 * or two masked loads a tap), Filter is packed into mr-row micro-panels once
 * a call, and BLIS's micro-kernel (lib/cpu/blas.h, pd_ukr) runs over all K taps
 * into a small tile copied out with the bias. BLIS packing the column matrix
 * of fashion_cnn's second layer (800 x 384 floats a product) was a third of
 * the time of its products. */
static bool use_packed(const geom *g, pd_dtype dt, bool direct, pd_ukr *uk) {
  if (dt != PD_F32 || direct || g->groups != 1 || g->sw != 1 || is_pointwise(g) || !pd_cpu_avx512f()) return false;
  pd_ukr_float(uk);
  return uk->nr <= 16 && uk->mr <= 64 && g->wo >= uk->nr && g->kg <= ((int64_t)1 << 20);
}

static bool use_direct(const geom *g, pd_dtype dt) {
  return dt == PD_F32 && g->groups == 1 && g->sw == 1 && g->kg <= DIRECT_MAX_K && g->m * g->kg <= DIRECT_MAX_MK &&
         !is_pointwise(g) && pd_cpu_avx512f();
}

/* Into how many parts the batch is split: at most one per image, and none
 * with less than about 2^19 multiply-adds (waking a thread costs more). */
static int conv_parts(const geom *g) {
  int parts = pd_parallel_parts((int64_t)(product_flops(g) / 2), (int64_t)1 << 19);
  return parts > g->n ? (g->n > 1 ? (int)g->n : 1) : parts;
}

/* floats taken by the packed path's tap offsets (int64), a 64-byte multiple */
static int64_t offs_n(const geom *g) { return (2 * g->kg + 15) / 16 * 16; }

static pd_status make_plan(pd_ctx *c, const geom *g, pd_dtype dt, bool backward, plan *pl) {
  size_t elem = pd_dtype_size(dt);
  pl->nb = chunk_images(g, elem);
  pl->ld = lead(pl->nb * g->p, elem);
  pl->hp = g->h + 2 * g->ph, pl->wp = g->w + 2 * g->pw;
  pl->parts = conv_parts(g);
  pl->direct = use_direct(g, dt);
  pl->packed = !backward && use_packed(g, dt, pl->direct, &pl->uk);
  pl->col = pl->stage = pl->pad = pl->dw = pl->db = pl->dacc = NULL;
  pl->wpack = NULL;
  int64_t cdims[4] = {g->c, g->kh, g->kw, pl->ld}, sdims[2] = {g->m, pl->ld}, pdims[3] = {g->c, pl->hp, pl->wp};
  int64_t col = 0, stage = 0, pad = 0, dw = backward ? g->m * g->kg : 0, db = backward ? g->m : 0;
  int64_t dacc = backward && pl->direct ? g->m * g->kg * 16 : 0; /* dFilter's lanes */
  if (!pd_dims_product(4, cdims, &col) || !pd_dims_product(2, sdims, &stage) || !pd_dims_product(3, pdims, &pad) ||
      stage > INT64_MAX / 4 - pad - dw - db - dacc || col > INT64_MAX / 64)
    return pd_ctx_fail(c, PD_ERR_RUNTIME, "the column matrix for this convolution is too large");
  if (pl->nb == 1) stage = 0;
  if (!g->ph && !g->pw) pad = 0;
  if (is_pointwise(g)) col = 0;
  if (pl->parts == 1) db = 0;
  int64_t wpack = 0;
  if (pl->packed) { /* work[0]: Filter's micro-panels, then each part's packed taps and tile (64-byte multiples) */
    const int64_t mr = pl->uk.mr, nr = pl->uk.nr;
    wpack = ((g->m + mr - 1) / mr * mr * g->kg + 15) / 16 * 16 + offs_n(g) + 16; /* + offs, + room to align */
    col = (g->kg * nr + 16 + 15) / 16 * 16 + (mr * nr + 15) / 16 * 16;
    stage = 0;
  }
  pl->col_n = col, pl->extra_n = stage + pad + dw + db + dacc;
  pd_status st = PD_OK;
  char *a = col ? scratch(c, 0, dt, col * pl->parts + wpack, &st) : NULL;
  if (st) return st;
  if (pl->packed) {
    pl->wpack = (float *)(((uintptr_t)a + 63) & ~(uintptr_t)63);
    pl->offs = (int64_t *)(pl->wpack + wpack - 16 - offs_n(g));
    a = (char *)(pl->wpack + wpack - 16);
  }
  char *b = pl->extra_n ? scratch(c, 1, dt, pl->extra_n * pl->parts, &st) : NULL;
  if (st) return st;
  pl->col = a;
  if (b) {
    pl->stage = stage ? b : NULL;
    pl->pad = pad ? b + stage * (int64_t)elem : NULL;
    pl->dw = dw ? b + (stage + pad) * (int64_t)elem : NULL;
    pl->db = db ? b + (stage + pad + dw) * (int64_t)elem : NULL;
    pl->dacc = dacc ? b + (stage + pad + dw + db) * (int64_t)elem : NULL;
  }
  return PD_OK;
}

/* Part t's view of the plan: its own scratch. */
static plan part_plan(const plan *pl, int t, size_t elem) {
  plan p = *pl;
  int64_t oc = (int64_t)t * pl->col_n * (int64_t)elem, oe = (int64_t)t * pl->extra_n * (int64_t)elem;
  if (p.col) p.col = (char *)p.col + oc;
  if (p.stage) p.stage = (char *)p.stage + oe;
  if (p.pad) p.pad = (char *)p.pad + oe;
  if (p.dw) p.dw = (char *)p.dw + oe;
  if (p.db) p.db = (char *)p.db + oe;
  if (p.dacc) p.dacc = (char *)p.dacc + oe;
  return p;
}

/* What every part of one run shares. */
typedef struct job {
  const geom *g;
  const plan *pl;
  const void *x, *w, *b, *dy;
  void *y, *dx, *dw, *db;
} job;

/* im2col: image xp [C, hp, wp] (padding included) to rows (c, i, j) of col
 * (row stride ld), row (c, i, j) holding the tap (i, j) of channel c for
 * every output position. With stride 1 each output row's taps are a
 * contiguous run, copied in 32-byte blocks (the last one overlapping): the
 * runs are short (Wo), and a copy per element was the slowest part of the
 * forward pass. col2im is its adjoint: it adds each row back into the padded
 * gradient at the taps it read.
 *
 * Forward, per chunk of nb images: unroll them side by side into col
 * [C kh kw, nb P], one product per group into stage [M, nb P] (or, for a
 * single image, straight into Output), then the output pass adds the bias
 * while it copies stage into the images' [M, P] planes.
 *
 * Backward, per chunk: one pass over dOut sums dBias[m] (over n, oh, ow)
 * and gathers dOut to [M, nb P] like the forward's stage; dFilter_g^T +=
 * col_g · dOut_g^T (col unrolled again rather than kept from the forward: a
 * batch-sized buffer would leave the cache); dcol_g = Filter_g^T · dOut_g into
 * the same col buffer, folded into dInput by col2im. dFilter is summed
 * transposed, [kg, mg] per group, and transposed back once at the end: BLIS's
 * AVX-512 kernel (32 x 12 tiles, C stored by columns) runs [kg, mg] =
 * [800, 64] at 114 GFLOP/s here, [mg, kg] at 90 (64 rows fill five and a
 * third of its 12-wide tiles). */
#ifdef PD_X86
/* The first min(n, 16) lanes of a 16-float vector */
static inline __mmask16 tail_mask(int64_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

/* With stride 1 (the usual case) im2col's and col2im's runs are whole output
 * rows, Wo floats: 14 and 28 in fashion_cnn, which SSE moves in four and
 * eight pieces. On AVX-512 a run is moved 16 floats at a time; the last
 * piece of a row's last run is masked (the mask leaves the bytes beyond it
 * alone); runs of 8 to 15 floats are otherwise moved whole: the floats beyond
 * a run land within the next run, written straight after (a masked store
 * across a cache line cost more than the copy). im2col took ~10 % of a
 * CNN step on one thread here. Float only: the double kernels are for
 * gradient checks. */
__attribute__((target("avx512f"))) static void im2col_s1_avx512(const geom *g, const plan *pl, const float *xp,
                                                                float *col) {
  const int64_t wo = g->wo, wp = pl->wp, full = wo & ~(int64_t)15, ho = g->ho, step = g->sh * wp;
  const __mmask16 m = tail_mask(wo - full);
  for (int64_t ch = 0; ch < g->c; ch++)
    for (int64_t i = 0; i < g->kh; i++)
      for (int64_t j = 0; j < g->kw; j++, col += pl->ld) {
        const float *s = xp + (ch * pl->hp + i * g->dh) * wp + j * g->dw;
        float *d = col;
        if (wo >= 8 && wo < 16) { /* one piece a run, whole but for the last (whose spill the next run overwrites) */
          for (int64_t oh = 0; oh + 1 < ho; oh++, s += step, d += wo) _mm512_storeu_ps(d, _mm512_loadu_ps(s));
          _mm512_mask_storeu_ps(d, m, _mm512_maskz_loadu_ps(m, s));
          continue;
        }
        for (int64_t oh = 0; oh < ho; oh++, s += step, d += wo) {
          for (int64_t k = 0; k < full; k += 16) _mm512_storeu_ps(d + k, _mm512_loadu_ps(s + k));
          if (m) _mm512_mask_storeu_ps(d + full, m, _mm512_maskz_loadu_ps(m, s + full));
        }
      }
}

/* acc [C, hp, wp] += the taps of col, as col2im below (stride 1) */
__attribute__((target("avx512f"))) static void col2im_s1_avx512(const geom *g, const plan *pl, const float *col,
                                                                float *acc) {
  const int64_t wo = g->wo, wp = pl->wp, full = wo & ~(int64_t)15;
  const __mmask16 m = tail_mask(wo - full);
  for (int64_t ch = 0; ch < g->c; ch++)
    for (int64_t i = 0; i < g->kh; i++)
      for (int64_t j = 0; j < g->kw; j++, col += pl->ld) {
        float *a = acc + (ch * pl->hp + i * g->dh) * wp + j * g->dw;
        const float *s = col;
        for (int64_t oh = 0; oh < g->ho; oh++, a += g->sh * wp, s += wo) {
          for (int64_t k = 0; k < full; k += 16)
            _mm512_storeu_ps(a + k, _mm512_add_ps(_mm512_loadu_ps(a + k), _mm512_loadu_ps(s + k)));
          if (m)
            _mm512_mask_storeu_ps(
                a + full, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + full), _mm512_maskz_loadu_ps(m, s + full)));
        }
      }
}

#endif /* PD_X86 */

/* Filter [M, K] into micro-panels of mr rows: wp[(pi K + l) mr + i] =
 * Filter[pi mr + i, l], 0 beyond M */
static void pack_filter(const geom *g, const pd_ukr *uk, const float *w, float *wp) {
  const int64_t K = g->kg, mr = uk->mr;
  for (int64_t pi = 0; pi * mr < g->m; pi++)
    for (int64_t l = 0; l < K; l++)
      for (int64_t i = 0; i < mr; i++) {
        const int64_t m = pi * mr + i;
        wp[(pi * K + l) * mr + i] = m < g->m ? w[m * K + l] : 0;
      }
}

/* tap t = (c, i, j)'s offset in a padded image */
static void tap_offsets(const geom *g, const plan *pl, int64_t *off) {
  int64_t t = 0;
  for (int64_t c = 0; c < g->c; c++)
    for (int64_t i = 0; i < g->kh; i++)
      for (int64_t j = 0; j < g->kw; j++) off[t++] = (c * pl->hp + i * g->dh) * pl->wp + j * g->dw;
}

#ifdef PD_X86
/* The direct forward of one padded image xp into y [M, P] (see use_direct) */
__attribute__((target("avx512f"))) static void direct_forward(const geom *g, const plan *pl, const float *xp,
                                                              const float *w, const float *b, float *y) {
  const int64_t K = g->kg, M = g->m, wo = g->wo, P = g->p;
  int64_t off[DIRECT_MAX_K];
  tap_offsets(g, pl, off);
  for (int64_t oh = 0; oh < g->ho; oh++) {
    const float *xr = xp + oh * g->sh * pl->wp;
    for (int64_t ow = 0; ow < wo; ow += 16) {
      const __mmask16 mk = tail_mask(wo - ow);
      float *yo = y + oh * wo + ow;
      int64_t m0 = 0;
      for (; m0 + 8 <= M; m0 += 8) {
        __m512 acc[8];
#pragma GCC unroll 8
        for (int u = 0; u < 8; u++) acc[u] = _mm512_setzero_ps();
        for (int64_t t = 0; t < K; t++) {
          const __m512 xv = _mm512_maskz_loadu_ps(mk, xr + ow + off[t]);
#pragma GCC unroll 8
          for (int u = 0; u < 8; u++) acc[u] = _mm512_fmadd_ps(_mm512_set1_ps(w[(m0 + u) * K + t]), xv, acc[u]);
        }
#pragma GCC unroll 8
        for (int u = 0; u < 8; u++)
          _mm512_mask_storeu_ps(yo + (m0 + u) * P, mk, b ? _mm512_add_ps(acc[u], _mm512_set1_ps(b[m0 + u])) : acc[u]);
      }
      for (; m0 < M; m0++) {
        __m512 acc = _mm512_setzero_ps();
        for (int64_t t = 0; t < K; t++)
          acc = _mm512_fmadd_ps(_mm512_set1_ps(w[m0 * K + t]), _mm512_maskz_loadu_ps(mk, xr + ow + off[t]), acc);
        _mm512_mask_storeu_ps(yo + m0 * P, mk, b ? _mm512_add_ps(acc, _mm512_set1_ps(b[m0])) : acc);
      }
    }
  }
}

/* The packed forward of one padded image xp into y [M, P] (see use_packed):
 * bp holds K nr + 16 floats, ct mr nr, both 64-byte aligned. */
__attribute__((target("avx512f"))) static void packed_forward(const geom *g, const plan *pl, const float *xp,
                                                              const float *b, float *bp, float *ct, float *y) {
  const pd_ukr *uk = &pl->uk;
  const int64_t K = g->kg, M = g->m, P = g->p, wo = g->wo, mr = uk->mr, nr = uk->nr;
  const int64_t *offs = pl->offs;
  for (int64_t p0 = 0; p0 < P; p0 += nr) {
    const int64_t np = P - p0 < nr ? P - p0 : nr;
    /* the strip's positions: one run in an output row, or two (wo >= nr) */
    const int64_t oh = p0 / wo, ow = p0 % wo, n1 = wo - ow < np ? wo - ow : np;
    const int64_t pos1 = oh * g->sh * pl->wp + ow, pos2 = (oh + 1) * g->sh * pl->wp - n1; /* lane 0's address */
    const __mmask16 m1 = tail_mask(n1), m2 = (__mmask16)(tail_mask(np) & ~m1);
    for (int64_t l = 0; l < K; l++) { /* whole 16-float stores: the spill lands in the next tap's slot */
      __m512 v = _mm512_maskz_loadu_ps(m1, xp + offs[l] + pos1);
      if (m2) v = _mm512_mask_loadu_ps(v, m2, xp + offs[l] + pos2);
      _mm512_storeu_ps(bp + l * nr, v);
    }
    for (int64_t pi = 0; pi * mr < M; pi++) {
      pd_ukr_run_float(uk, K, pl->wpack + pi * K * mr, bp, ct);
      const int64_t rows = M - pi * mr < mr ? M - pi * mr : mr;
      for (int64_t i = 0; i < rows; i++) {
        const int64_t m = pi * mr + i;
        const float bm = b ? b[m] : 0;
        float *yo = y + m * P + p0;
        for (int64_t j = 0; j < np; j++) yo[j] = ct[i + j * mr] + bm;
      }
    }
  }
}

/* dFilter's lanes acc [M, K, 16] += one image's products: dy [M, P] against
 * the padded image xp (lanes beyond a row's end add 0); 8 taps of a filter at
 * a time in registers over the whole image */
__attribute__((target("avx512f"))) static void direct_dfilter(const geom *g, const plan *pl, const float *xp,
                                                              const float *dy, float *acc) {
  const int64_t K = g->kg, M = g->m, wo = g->wo, P = g->p;
  int64_t off[DIRECT_MAX_K];
  tap_offsets(g, pl, off);
  for (int64_t m = 0; m < M; m++) {
    const float *gm = dy + m * P;
    float *am = acc + m * K * 16;
    int64_t t0 = 0;
    for (; t0 + 8 <= K; t0 += 8) {
      __m512 a[8];
#pragma GCC unroll 8
      for (int u = 0; u < 8; u++) a[u] = _mm512_loadu_ps(am + (t0 + u) * 16);
      for (int64_t oh = 0; oh < g->ho; oh++) {
        const float *xr = xp + oh * g->sh * pl->wp;
        for (int64_t ow = 0; ow < wo; ow += 16) {
          const __mmask16 mk = tail_mask(wo - ow);
          const __m512 gv = _mm512_maskz_loadu_ps(mk, gm + oh * wo + ow);
#pragma GCC unroll 8
          for (int u = 0; u < 8; u++)
            a[u] = _mm512_fmadd_ps(gv, _mm512_maskz_loadu_ps(mk, xr + ow + off[t0 + u]), a[u]);
        }
      }
#pragma GCC unroll 8
      for (int u = 0; u < 8; u++) _mm512_storeu_ps(am + (t0 + u) * 16, a[u]);
    }
    for (; t0 < K; t0++) {
      __m512 a = _mm512_loadu_ps(am + t0 * 16);
      for (int64_t oh = 0; oh < g->ho; oh++) {
        const float *xr = xp + oh * g->sh * pl->wp;
        for (int64_t ow = 0; ow < wo; ow += 16) {
          const __mmask16 mk = tail_mask(wo - ow);
          a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, gm + oh * wo + ow),
                              _mm512_maskz_loadu_ps(mk, xr + ow + off[t0]), a);
        }
      }
      _mm512_storeu_ps(am + t0 * 16, a);
    }
  }
}

/* dwt [K, M] (the part's dFilter, transposed as the products' path keeps it)
 * = the lanes of acc [M, K, 16] added up */
__attribute__((target("avx512f"))) static void direct_dfilter_sum(const geom *g, const float *acc, float *dwt) {
  for (int64_t m = 0; m < g->m; m++)
    for (int64_t t = 0; t < g->kg; t++)
      dwt[t * g->m + m] = _mm512_reduce_add_ps(_mm512_loadu_ps(acc + (m * g->kg + t) * 16));
}

#else
/* Without x86 (-DPD_NO_X86, or another CPU) pd_cpu_avx512f() is false:
 * use_packed, use_direct and the stride-1 copies never take the AVX-512
 * paths, which are not built. */
static void no_avx512(int unused, ...) {
  (void)unused;
  PD_ASSERT(!"an AVX-512 path in a build without x86");
}
#define im2col_s1_avx512(...) no_avx512(0, __VA_ARGS__)
#define col2im_s1_avx512(...) no_avx512(0, __VA_ARGS__)
#define direct_forward(...) no_avx512(0, __VA_ARGS__)
#define packed_forward(...) no_avx512(0, __VA_ARGS__)
#define direct_dfilter(...) no_avx512(0, __VA_ARGS__)
#define direct_dfilter_sum(...) no_avx512(0, __VA_ARGS__)
#endif /* PD_X86 */

#define CONV_KERNELS(T)                                                                                                \
  static inline void copy_run_##T(T *restrict d, const T *restrict s, int64_t n) {                                     \
    enum { E = 32 / sizeof(T) };                                                                                       \
    if (n < E) {                                                                                                       \
      for (int64_t k = 0; k < n; k++) d[k] = s[k];                                                                     \
      return;                                                                                                          \
    }                                                                                                                  \
    for (int64_t k = 0; k + E < n; k += E) memcpy(d + k, s + k, 32);                                                   \
    memcpy(d + n - E, s + n - E, 32);                                                                                  \
  }                                                                                                                    \
                                                                                                                       \
  /* x [C, H, W] into the padded image (or x itself without padding). */                                               \
  static const T *padded_##T(const geom *g, const plan *pl, const T *x) {                                              \
    if (!pl->pad) return x;                                                                                            \
    T *xp = pl->pad;                                                                                                   \
    memset(xp, 0, sizeof(T) * (size_t)(g->c * pl->hp * pl->wp));                                                       \
    for (int64_t ch = 0; ch < g->c; ch++)                                                                              \
      for (int64_t r = 0; r < g->h; r++)                                                                               \
        memcpy(xp + (ch * pl->hp + r + g->ph) * pl->wp + g->pw, x + (ch * g->h + r) * g->w, sizeof(T) * (size_t)g->w); \
    return xp;                                                                                                         \
  }                                                                                                                    \
                                                                                                                       \
  static void im2col_##T(const geom *g, const plan *pl, const T *x, T *restrict col) {                                 \
    const T *xp = padded_##T(g, pl, x);                                                                                \
    if (sizeof(T) == sizeof(float) && g->sw == 1 && pd_cpu_avx512f()) {                                                \
      im2col_s1_avx512(g, pl, (const float *)xp, (float *)col);                                                        \
      return;                                                                                                          \
    }                                                                                                                  \
    const int64_t wo = g->wo, wp = pl->wp;                                                                             \
    for (int64_t ch = 0; ch < g->c; ch++)                                                                              \
      for (int64_t i = 0; i < g->kh; i++)                                                                              \
        for (int64_t j = 0; j < g->kw; j++, col += pl->ld) {                                                           \
          const T *s = xp + (ch * pl->hp + i * g->dh) * wp + j * g->dw;                                                \
          T *d = col;                                                                                                  \
          for (int64_t oh = 0; oh < g->ho; oh++, s += g->sh * wp, d += wo)                                             \
            if (g->sw == 1)                                                                                            \
              copy_run_##T(d, s, wo);                                                                                  \
            else                                                                                                       \
              for (int64_t ow = 0; ow < wo; ow++) d[ow] = s[ow * g->sw];                                               \
        }                                                                                                              \
  }                                                                                                                    \
                                                                                                                       \
  static void col2im_##T(const geom *g, const plan *pl, const T *restrict col, T *dx) {                                \
    const int64_t wo = g->wo, wp = pl->wp;                                                                             \
    T *acc = pl->pad ? pl->pad : dx;                                                                                   \
    memset(acc, 0, sizeof(T) * (size_t)(g->c * pl->hp * wp));                                                          \
    if (sizeof(T) == sizeof(float) && g->sw == 1 && pd_cpu_avx512f())                                                  \
      col2im_s1_avx512(g, pl, (const float *)col, (float *)acc);                                                       \
    else                                                                                                               \
      for (int64_t ch = 0; ch < g->c; ch++)                                                                            \
        for (int64_t i = 0; i < g->kh; i++)                                                                            \
          for (int64_t j = 0; j < g->kw; j++, col += pl->ld) {                                                         \
            T *restrict a = acc + (ch * pl->hp + i * g->dh) * wp + j * g->dw;                                          \
            const T *s = col;                                                                                          \
            for (int64_t oh = 0; oh < g->ho; oh++, a += g->sh * wp, s += wo)                                           \
              if (g->sw == 1)                                                                                          \
                for (int64_t ow = 0; ow < wo; ow++) a[ow] += s[ow];                                                    \
              else                                                                                                     \
                for (int64_t ow = 0; ow < wo; ow++) a[ow * g->sw] += s[ow];                                            \
          }                                                                                                            \
    if (pl->pad)                                                                                                       \
      for (int64_t ch = 0; ch < g->c; ch++)                                                                            \
        for (int64_t r = 0; r < g->h; r++)                                                                             \
          memcpy(dx + (ch * g->h + r) * g->w, acc + (ch * pl->hp + r + g->ph) * wp + g->pw, sizeof(T) * (size_t)g->w); \
  }                                                                                                                    \
                                                                                                                       \
  static void forward_part_##T(void *arg, int t, int nt) {                                                             \
    const job *j = arg;                                                                                                \
    const geom g = *j->g;                                                                                              \
    plan pl = part_plan(j->pl, t, sizeof(T));                                                                          \
    const T *x = j->x, *w = j->w, *b = j->b;                                                                           \
    T *y = j->y, *col = pl.col, *stage = pl.stage;                                                                     \
    const int64_t chw = g.c * g.h * g.w, P = g.p, M = g.m;                                                             \
    int64_t lo, hi;                                                                                                    \
    pd_parallel_range(g.n, t, nt, &lo, &hi);                                                                           \
    if (sizeof(T) == sizeof(float) && pl.packed) {                                                                     \
      float *bp = (float *)pl.col, *ct = bp + (g.kg * pl.uk.nr + 16 + 15) / 16 * 16;                                   \
      for (int64_t n = lo; n < hi; n++)                                                                                \
        packed_forward(&g, &pl, (const float *)padded_##T(&g, &pl, x + n * chw), (const float *)b, bp, ct,             \
                       (float *)(y + n * M * P));                                                                      \
      return;                                                                                                          \
    }                                                                                                                  \
    if (sizeof(T) == sizeof(float) && pl.direct) {                                                                     \
      for (int64_t n = lo; n < hi; n++)                                                                                \
        direct_forward(&g, &pl, (const float *)padded_##T(&g, &pl, x + n * chw), (const float *)w, (const float *)b,   \
                       (float *)(y + n * M * P));                                                                      \
      return;                                                                                                          \
    }                                                                                                                  \
    for (int64_t n0 = lo; n0 < hi; n0 += pl.nb) {                                                                      \
      const int64_t cnt = hi - n0 < pl.nb ? hi - n0 : pl.nb, cols = cnt * P;                                           \
      const T *src = col;                                                                                              \
      int64_t ld = pl.ld;                                                                                              \
      if (col)                                                                                                         \
        for (int64_t i = 0; i < cnt; i++) im2col_##T(&g, &pl, x + (n0 + i) * chw, col + i * P);                        \
      else                                                                                                             \
        src = x + n0 * chw, ld = P;                                                                                    \
      T *dst = cnt == 1 ? y + n0 * M * P : stage;                                                                      \
      const int64_t ldd = cnt == 1 ? P : pl.ld;                                                                        \
      if (cnt == 1 && b)                                                                                               \
        for (int64_t m = 0; m < M; m++)                                                                                \
          for (int64_t p = 0; p < P; p++) dst[m * P + p] = b[m];                                                       \
      for (int64_t gr = 0; gr < g.groups; gr++)                                                                        \
        pd_gemm_##T(false, false, g.mg, cols, g.kg, 1, w + gr * g.mg * g.kg, g.kg, src + gr * g.kg * ld, ld,           \
                    cnt == 1 && b ? 1 : 0, dst + gr * g.mg * ldd, ldd);                                                \
      if (cnt > 1)                                                                                                     \
        for (int64_t i = 0; i < cnt; i++)                                                                              \
          for (int64_t m = 0; m < M; m++) {                                                                            \
            T *o = y + ((n0 + i) * M + m) * P, bm = b ? b[m] : 0;                                                      \
            const T *s = stage + m * ldd + i * P;                                                                      \
            for (int64_t p = 0; p < P; p++) o[p] = s[p] + bm;                                                          \
          }                                                                                                            \
    }                                                                                                                  \
  }                                                                                                                    \
                                                                                                                       \
  static pd_status forward_##T(pd_ctx *c) {                                                                            \
    pd_tensor *xt = pd_in(c, INPUT), *bt = pd_in(c, BIAS);                                                             \
    geom g;                                                                                                            \
    plan pl;                                                                                                           \
    pd_status st = get_geom(c, xt, &g);                                                                                \
    if (!st) st = make_plan(c, &g, xt->dtype, false, &pl);                                                             \
    if (st) return st;                                                                                                 \
    job j = {.g = &g,                                                                                                  \
             .pl = &pl,                                                                                                \
             .x = PD_DATA(xt, T),                                                                                      \
             .w = PD_DATA(pd_in(c, FILTER), T),                                                                        \
             .b = bt ? PD_DATA(bt, T) : NULL,                                                                          \
             .y = PD_DATA(pd_out(c, OUTPUT), T)};                                                                      \
    if (sizeof(T) == sizeof(float) && pl.packed) {                                                                     \
      pack_filter(&g, &pl.uk, (const float *)j.w, pl.wpack);                                                           \
      tap_offsets(&g, &pl, pl.offs);                                                                                   \
    }                                                                                                                  \
    pd_parallel_run(pl.parts, forward_part_##T, &j);                                                                   \
    return PD_OK;                                                                                                      \
  }                                                                                                                    \
                                                                                                                       \
  /* sum of n values, in 16 interleaved partial sums (so it vectorises,                                                \
   * in a fixed order) */                                                                                              \
  static T sum_##T(const T *v, int64_t n) {                                                                            \
    T part[16] = {0}, s = 0;                                                                                           \
    int64_t k = 0;                                                                                                     \
    for (; k + 16 <= n; k += 16)                                                                                       \
      for (int l = 0; l < 16; l++) part[l] += v[k + l];                                                                \
    for (; k < n; k++) s += v[k];                                                                                      \
    for (int l = 0; l < 16; l++) s += part[l];                                                                         \
    return s;                                                                                                          \
  }                                                                                                                    \
                                                                                                                       \
  static void backward_part_##T(void *arg, int t, int nt) {                                                            \
    const job *j = arg;                                                                                                \
    const geom g = *j->g;                                                                                              \
    plan pl = part_plan(j->pl, t, sizeof(T));                                                                          \
    const T *x = j->x, *w = j->w, *dy = j->dy;                                                                         \
    T *dx = j->dx, *dw = j->dw ? pl.dw : NULL, *db = j->db ? (t ? pl.db : j->db) : NULL;                               \
    T *col = pl.col, *stage = pl.stage;                                                                                \
    const int64_t chw = g.c * g.h * g.w, P = g.p, M = g.m;                                                             \
    int64_t lo, hi;                                                                                                    \
    pd_parallel_range(g.n, t, nt, &lo, &hi);                                                                           \
    if (db) memset(db, 0, sizeof(T) * (size_t)M);                                                                      \
    if (dw && lo == hi) memset(dw, 0, sizeof(T) * (size_t)(M * g.kg));                                                 \
    for (int64_t n0 = lo; n0 < hi; n0 += pl.nb) {                                                                      \
      const int64_t cnt = hi - n0 < pl.nb ? hi - n0 : pl.nb, cols = cnt * P;                                           \
      const T *gy = dy + n0 * M * P;                                                                                   \
      int64_t ldy = P;                                                                                                 \
      /* one pass over the chunk's dOut: the bias sums, and the gather */                                              \
      for (int64_t i = 0; i < cnt; i++)                                                                                \
        for (int64_t m = 0; m < M; m++) {                                                                              \
          const T *row = gy + (i * M + m) * P;                                                                         \
          if (db) db[m] += sum_##T(row, P);                                                                            \
          if (cnt > 1) memcpy(stage + m * pl.ld + i * P, row, sizeof(T) * (size_t)P);                                  \
        }                                                                                                              \
      if (cnt > 1) gy = stage, ldy = pl.ld;                                                                            \
      if (dw && sizeof(T) == sizeof(float) && pl.direct) {                                                             \
        if (n0 == lo) memset(pl.dacc, 0, sizeof(float) * (size_t)(M * g.kg * 16));                                     \
        for (int64_t i = 0; i < cnt; i++)                                                                              \
          direct_dfilter(&g, &pl, (const float *)padded_##T(&g, &pl, x + (n0 + i) * chw),                              \
                         (const float *)(dy + (n0 + i) * M * P), (float *)pl.dacc);                                    \
        if (n0 + cnt >= hi) direct_dfilter_sum(&g, (const float *)pl.dacc, (float *)dw);                               \
      } else if (dw) {                                                                                                 \
        const T *src = col;                                                                                            \
        int64_t ld = pl.ld;                                                                                            \
        if (col)                                                                                                       \
          for (int64_t i = 0; i < cnt; i++) im2col_##T(&g, &pl, x + (n0 + i) * chw, col + i * P);                      \
        else                                                                                                           \
          src = x + n0 * chw, ld = P;                                                                                  \
        for (int64_t gr = 0; gr < g.groups; gr++)                                                                      \
          pd_gemm_##T(false, true, g.kg, g.mg, cols, 1, src + gr * g.kg * ld, ld, gy + gr * g.mg * ldy, ldy,           \
                      n0 == lo ? 0 : 1, dw + gr * g.mg * g.kg, g.mg);                                                  \
      }                                                                                                                \
      if (dx) {                                                                                                        \
        T *dst = col ? col : dx + n0 * chw;                                                                            \
        const int64_t ld = col ? pl.ld : P;                                                                            \
        for (int64_t gr = 0; gr < g.groups; gr++)                                                                      \
          pd_gemm_##T(true, false, g.kg, cols, g.mg, 1, w + gr * g.mg * g.kg, g.kg, gy + gr * g.mg * ldy, ldy, 0,      \
                      dst + gr * g.kg * ld, ld);                                                                       \
        if (col)                                                                                                       \
          for (int64_t i = 0; i < cnt; i++) col2im_##T(&g, &pl, col + i * P, dx + (n0 + i) * chw);                     \
      }                                                                                                                \
    }                                                                                                                  \
  }                                                                                                                    \
                                                                                                                       \
  static pd_status backward_##T(pd_ctx *c) {                                                                           \
    pd_tensor *xt = pd_in(c, G_INPUT), *dxt = pd_out(c, INPUT), *dwt = pd_out(c, FILTER), *dbt = pd_out(c, BIAS);      \
    geom g;                                                                                                            \
    plan pl;                                                                                                           \
    pd_status st = get_geom(c, xt, &g);                                                                                \
    if (!st) st = make_plan(c, &g, xt->dtype, true, &pl);                                                              \
    if (st) return st;                                                                                                 \
    job j = {.g = &g,                                                                                                  \
             .pl = &pl,                                                                                                \
             .x = PD_DATA(xt, T),                                                                                      \
             .w = PD_DATA(pd_in(c, G_FILTER), T),                                                                      \
             .dy = PD_DATA(pd_in(c, G_DOUT), T),                                                                       \
             .dx = dxt ? PD_DATA(dxt, T) : NULL,                                                                       \
             .dw = dwt ? PD_DATA(dwt, T) : NULL,                                                                       \
             .db = dbt ? PD_DATA(dbt, T) : NULL};                                                                      \
    pd_parallel_run(pl.parts, backward_part_##T, &j);                                                                  \
    /* the parts' sums, added in part order (dFilter's transposed back: part 0's copied, the others added) */          \
    T *dw = j.dw, *db = j.db;                                                                                          \
    for (int t = 0; t < pl.parts; t++) {                                                                               \
      const plan p = part_plan(&pl, t, sizeof(T));                                                                     \
      const T *pw = p.dw;                                                                                              \
      if (dw)                                                                                                          \
        for (int64_t gr = 0; gr < g.groups; gr++, pw += g.mg * g.kg)                                                   \
          for (int64_t k = 0; k < g.kg; k++)                                                                           \
            for (int64_t m = 0; m < g.mg; m++) {                                                                       \
              T *d = dw + gr * g.mg * g.kg + m * g.kg + k;                                                             \
              *d = t ? *d + pw[k * g.mg + m] : pw[k * g.mg + m];                                                       \
            }                                                                                                          \
      if (db && t)                                                                                                     \
        for (int64_t k = 0; k < g.m; k++) db[k] += ((const T *)p.db)[k];                                               \
    }                                                                                                                  \
    return PD_OK;                                                                                                      \
  }
CONV_KERNELS(float)
CONV_KERNELS(double)

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_conv2d_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_conv2d_bwd),
#endif
};

const pd_op_def pd_op_conv2d = {
    .type = "conv2d",
    .comment = "2-D convolution over NCHW images, with strides, zero padding, dilation and groups. "
               "Output[n, m] = Bias[m] + sum over the input channels c of m's group of Filter[m, c] (*) Input[n, c], "
               "(*) being cross-correlation as in Paddle and PyTorch. Filter and Bias are parameters whose shapes "
               "follow from Input, `num_filters`, `kernel_size` and `groups`, so they need not be declared.",
    .inputs = inputs,
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .attrs = attrs,
    .n_attrs = N_ATTRS,
    .infer_shape = infer,
    .flops = flops,
    .grad_flops = grad_flops,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
