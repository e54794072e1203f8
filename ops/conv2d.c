/* conv2d.c — 2-D convolution over NCHW images:
 *   Output[n, m, oh, ow] = Bias[m] + sum_{c in group(m), i, j}
 *       Filter[m, c, i, j] * Input[n, g(m) Cg + c, oh sh - ph + i dh, ow sw - pw + j dw]
 * (taps falling in the zero padding read 0). Lowered to BLIS matrix
 * products: a chunk of images is unrolled (im2col) into a column matrix
 * col [C kh kw, images * Ho Wo] in op scratch, then one GEMM per group gives
 * Filter_g [Mg, Kg] · col_g for the whole chunk. Backward reuses the scheme:
 * dFilter_g += dOut_g · col_g^T over the chunks, dcol_g = Filter_g^T · dOut_g
 * folded back into dInput (col2im). The kernels are written once, for any
 * element type, in conv2d_t.h; the float AVX-512 paths are in conv2d_avx512.c. */
#include "conv2d.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/tmpl.h"
#include "base/util.h"
#include "conv2d_avx512.h"
#include "conv_util.h"
#include "conv_winograd.h"
#include "op_helpers.h"
#include "core/op.h"
#include "cpu/blas.h"
#include "cpu/convalgo.h"
#include "cpu/features.h"
#include "cpu/parallel.h"
#include "kmath.h"

static const pd_slot_def inputs[] = {
    [INPUT] = {"Input", "images [N, C, H, W]", 0},
    [FILTER] = {"Filter", "filters [M, C / groups, kh, kw], M = num_filters; inferred when not declared",
                PD_SLOT_PARAM},
    [BIAS] = {"Bias", "bias [M], one per output channel; leave out for none", PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
};
static const pd_slot_def outputs[] = {
    [OUTPUT] = {"Output", "[N, M, Ho, Wo], Ho = (H + 2 ph - dh (kh - 1) - 1) / sh + 1 rounded down, likewise Wo", 0}};
static const pd_attr_def attrs[] = {
    [A_FILTERS] = {"num_filters", "output channels M", PD_ATTR_INT, .required = true, .min_kind = PD_GT, .min = 0},
    [A_KSIZE] = {"kernel_size", "filter height and width [kh, kw]", PD_ATTR_INTS, .required = true, .min_kind = PD_GT,
                 .min = 0},
    [A_STRIDES] = {"strides", "step of the window [sh, sw]", PD_ATTR_INTS, .def = "ints: [1, 1]", .min_kind = PD_GT,
                   .min = 0},
    [A_PADS] = {"paddings", "zeros added on each side [ph, pw]", PD_ATTR_INTS, .def = "ints: [0, 0]", .min_kind = PD_GE,
                .min = 0},
    [A_DILS] = {"dilations", "spacing of the filter taps [dh, dw]", PD_ATTR_INTS, .def = "ints: [1, 1]",
                .min_kind = PD_GT, .min = 0},
    [A_GROUPS] =
        {"groups",
         "channel groups: input channels and filters are split into `groups` parts and filter part g sees only input "
         "part g (groups = C: depthwise); C and M must be divisible by it",
         PD_ATTR_INT, .def = "i: 1", .min_kind = PD_GE, .min = 1},
};

/* Attribute values and spatial sizes above this are refused, which keeps
 * every size computed here far from int64 overflow. */
#define CONV_LIMIT ((int64_t)1 << 30)

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
  const pd_conv_algo algo = pd_conv_algo_get();
  const bool fits3 = !st && pd_wino_fits(&g, 3), fits5 = !st && pd_wino_fits(&g, 5);
  if (!st && (algo == PD_CONV_WINOGRAD2 || algo == PD_CONV_WINOGRAD4) && !fits3 && !fits5)
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "--conv-algo %s needs a 3x3 or 5x5 kernel with stride 1, dilation 1 and one group; this "
                       "layer has a "
                       "%lldx%lld kernel, strides [%lld, %lld], dilations [%lld, %lld] and %lld groups (--conv-algo "
                       "auto picks what fits each layer)",
                       pd_conv_algo_name(algo), (long long)g.kh, (long long)g.kw, (long long)g.sh, (long long)g.sw,
                       (long long)g.dh, (long long)g.dw, (long long)g.groups);
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
 * matrices), but the column matrix stays within CHUNK_BYTES, in cache
 * between im2col and the product. */
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

/* A convolution with few taps per output (K = C kh kw) makes thin products
 * that BLIS runs well below its speed. In float on AVX-512, with one group
 * and stride 1 along rows, such a convolution is computed directly instead:
 * forward, 16 outputs of a row for 8 filters at a time, each a chain of
 * fused multiply-adds over the taps in order, the bias added last; backward,
 * dFilter's sums run in 16 lanes per (filter, tap) over the part's images,
 * rows and columns in order, added across the lanes at the end. dInput still
 * goes through the products (dcol, col2im). */
#define DIRECT_MAX_MK 2048
/* The forward of the other float convolutions (one group, stride 1 along
 * rows, output rows at least as wide as a micro-panel) skips the column
 * matrix and BLIS's own packing of it: the image's taps are written straight
 * into the micro-kernel's packed layout, nr output positions at a time (one
 * or two masked loads a tap), Filter is packed into mr-row micro-panels once
 * a call, and BLIS's micro-kernel (cpu/blas.h, pd_ukr) runs over all K taps
 * into a small tile copied out with the bias. */
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

/* The Winograd form a layer runs with (NULL: im2col and the AVX-512 paths),
 * per --conv-algo. auto takes F(4x4, 3x3) for 3x3 layers and F(4x4, 5x5)
 * for 5x5 ones where the layer has at least WINO_MIN_CHANNELS input and
 * output channels (with one input channel the products have K = 1:
 * fashion_cnn3's 1->32 layer 4.8 / 5.4 against im2col's 1.4 / 1.3). Measured
 * on the Zen 3 machine (docs/training.md
 * has the table), batch 64, one thread, forward / backward ms: fashion_cnn3's
 * 32->32 at 28x28: im2col 17.3 / 38.1, F(4x4) 11.3 / 22.9, F(2x2) 18.2 /
 * 37.4; 64->64 at 14x14: 15.4 / 33.7, 9.4 / 20.3, 12.1 / 27.1; fashion_cnn's
 * 32->64 5x5 at 14x14: im2col 21.0 / 45.6, F(4x4, 5x5) 8.1 / 15.9, F(2x2,
 * 5x5) 15.1 / 31.9 (F(4x4)'s tiles cover 16x16 of the 14x14 output and it
 * still wins). The 2x2 forms are slower than the 4x4 ones on every layer
 * measured, so only --conv-algo picks them. */
#define WINO_MIN_CHANNELS 16
static const pd_wino_form *wino_form(const geom *g) {
  switch (pd_conv_algo_get()) {
  case PD_CONV_IM2COL:
    return NULL;
  case PD_CONV_WINOGRAD2:
    return pd_wino_fits(g, 3) ? pd_wino_form_get(2, 3) : pd_wino_fits(g, 5) ? pd_wino_form_get(2, 5) : NULL;
  case PD_CONV_WINOGRAD4:
    return pd_wino_fits(g, 3) ? pd_wino_form_get(4, 3) : pd_wino_fits(g, 5) ? pd_wino_form_get(4, 5) : NULL;
  case PD_CONV_AUTO:
    break;
  }
  if (g->c < WINO_MIN_CHANNELS || g->m < WINO_MIN_CHANNELS) return NULL;
  return pd_wino_fits(g, 3) ? pd_wino_form_get(4, 3) : pd_wino_fits(g, 5) ? pd_wino_form_get(4, 5) : NULL;
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

#define T float
#include "conv2d_t.h"
#undef T
#define T double
#include "conv2d_t.h"
#undef T

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

/* left out: "<out>.w", "<out>.b" (docs/netdesc.md, "Left out") */
static const char *const fill_in[] = {[FILTER] = "w", [BIAS] = "b"};
const pd_op_def pd_op_conv2d = {
    .type = "conv2d",
    .fill_in = fill_in,
    .comment = "2-D convolution over NCHW images, with strides, zero padding, dilation and groups. "
               "Output[n, m] = Bias[m] + sum over the input channels c of m's group of Filter[m, c] (*) Input[n, c], "
               "(*) being cross-correlation as in Paddle and PyTorch. Filter and Bias are parameters whose shapes "
               "follow from Input, `num_filters`, `kernel_size` and `groups`, so they need not be declared.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .flops = flops,
    .grad_flops = grad_flops,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
