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

#include "base/tmpl.h"
#include "conv_util.h"
#include "core/op.h"
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
