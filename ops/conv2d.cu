/* conv2d.cu — GPU kernels of conv2d: im2col plus cuBLAS products, a chunk
 * of images at a time (as the CPU kernel). For a chunk of cnt images the
 * column matrix is [C kh kw, cnt P] (kmath.h's pd_im2col_at; image i's
 * columns at i P), one product per group gives Out's rows [M, cnt P] in a
 * staging buffer, and one element kernel scatters them into Out [N, M, P]
 * with the bias. Backward: dOut gathered into the staging layout;
 * dFilter += dOut_g col_g^T per chunk (products in a fixed order, no
 * atomics); dcol = Filter_g^T dOut_g, then dX by the gather
 * pd_col2im_at; dBias one block per filter, a fixed-order reduction. */
#include "conv2d.h"
#include "gpu_common.cuh"
#include "gpu_ops.h"

/* Scratch for the column matrix and the staging buffer together. */
#define CONV_GPU_SCRATCH ((int64_t)64 << 20)

static __global__ void im2col_k(pd_conv_geom g, const float *x, float *col, int64_t cnt) {
  int64_t ld = cnt * g.p, chw = g.c * g.h * g.w;
  PD_GPU_FOR(e, g.c * g.kh * g.kw * ld) {
    int64_t r = e / ld, q = e % ld, i = q / g.p, p = q % g.p;
    col[e] = pd_im2col_at(x + i * chw, &g, r, p);
  }
}
/* y[i, m, p] = stage[m, i P + p] + b[m] */
static __global__ void scatter_k(pd_conv_geom g, const float *stage, const float *b, float *y, int64_t cnt) {
  int64_t ld = cnt * g.p;
  PD_GPU_FOR(e, cnt * g.m * g.p) {
    int64_t i = e / (g.m * g.p), m = (e / g.p) % g.m, p = e % g.p;
    y[e] = stage[m * ld + i * g.p + p] + (b ? b[m] : 0);
  }
}
/* stage[m, i P + p] = dy[i, m, p] */
static __global__ void gather_k(pd_conv_geom g, const float *dy, float *stage, int64_t cnt) {
  int64_t ld = cnt * g.p;
  PD_GPU_FOR(e, cnt * g.m * g.p) {
    int64_t i = e / (g.m * g.p), m = (e / g.p) % g.m, p = e % g.p;
    stage[m * ld + i * g.p + p] = dy[e];
  }
}
static __global__ void col2im_k(pd_conv_geom g, const float *col, float *dx, int64_t cnt) {
  int64_t ld = cnt * g.p, chw = g.c * g.h * g.w;
  PD_GPU_FOR(e, cnt * chw) {
    int64_t i = e / chw, r = e % chw, ch = r / (g.h * g.w), ih = (r / g.w) % g.h, iw = r % g.w;
    dx[e] = pd_col2im_at(col + i * g.p, ld, &g, ch, ih, iw);
  }
}
/* db[m] = sum over images and positions of dy[i, m, p] */
static __global__ void bias_grad_k(pd_conv_geom g, const float *dy, float *db) {
  PD_GPU_FOR_ROWS(m, g.m) {
    float s = 0;
    PD_GPU_FOR_COLS(e, g.n * g.p) s += dy[((e / g.p) * g.m + m) * g.p + e % g.p];
    s = pd_block_sum(s);
    if (threadIdx.x == 0) db[m] = s;
  }
}

typedef struct plan {
  int64_t nb; /* images per chunk */
  float *col, *stage;
} plan;

/* Chunk size and scratch: col [C kh kw, nb P] and stage [M, nb P] within
 * CONV_GPU_SCRATCH bytes (at least one image). */
static pd_status make_plan(pd_ctx *c, const pd_conv_geom *g, plan *pl) {
  int64_t per_image = (g->c * g->kh * g->kw + g->m) * g->p * (int64_t)sizeof(float);
  int64_t nb = per_image > 0 ? CONV_GPU_SCRATCH / per_image : g->n;
  pl->nb = nb < 1 ? 1 : nb > g->n ? (g->n > 0 ? g->n : 1) : nb;
  if (!pd_gpu_fits_int(pl->nb * g->p))
    return pd_ctx_fail(c, PD_ERR_RUNTIME, "convolution output of %lld positions is too large for cuBLAS",
                       (long long)(pl->nb * g->p));
  pl->col = (float *)pd_gpu_work(c, 0, (size_t)(g->c * g->kh * g->kw * pl->nb * g->p) * sizeof(float));
  pl->stage = pl->col ? (float *)pd_gpu_work(c, 1, (size_t)(g->m * pl->nb * g->p) * sizeof(float)) : NULL;
  return pl->stage ? PD_OK : PD_ERR_RUNTIME;
}

extern "C" pd_status pd_gpu_conv2d_fwd(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, INPUT);
  pd_conv_geom g;
  plan pl;
  pd_status st = pd_conv2d_geom(c, xt, &g);
  if (!st) st = make_plan(c, &g, &pl);
  if (st) return st;
  const float *x = PD_DATA(xt, float), *w = PD_DATA(pd_in(c, FILTER), float), *b = pd_gpu_f32(pd_in(c, BIAS));
  float *y = PD_DATA(pd_out(c, OUTPUT), float);
  const int64_t chw = g.c * g.h * g.w;
  for (int64_t n0 = 0; n0 < g.n && !st; n0 += pl.nb) {
    const int64_t cnt = g.n - n0 < pl.nb ? g.n - n0 : pl.nb, ld = cnt * g.p;
    st = PD_GPU_LAUNCH_N(c, g.c * g.kh * g.kw * ld, im2col_k, g, x + n0 * chw, pl.col, cnt);
    for (int64_t gr = 0; gr < g.groups && !st; gr++)
      st = pd_gpu_gemm(c, false, false, g.mg, ld, g.kg, 1, w + gr * g.mg * g.kg, g.kg, pl.col + gr * g.kg * ld, ld, 0,
                       pl.stage + gr * g.mg * ld, ld);
    if (!st) st = PD_GPU_LAUNCH_N(c, cnt * g.m * g.p, scatter_k, g, pl.stage, b, y + n0 * g.m * g.p, cnt);
  }
  return st;
}

/* Grad op slots: inputs Input Filter Bias Output dOutput, outputs dInput dFilter dBias. */
extern "C" pd_status pd_gpu_conv2d_bwd(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, INPUT), *dxt = pd_out(c, INPUT), *dwt = pd_out(c, FILTER), *dbt = pd_out(c, BIAS);
  pd_conv_geom g;
  pd_status st = pd_conv2d_geom(c, xt, &g);
  if (st) return st;
  const float *x = PD_DATA(xt, float), *w = PD_DATA(pd_in(c, FILTER), float);
  const float *dy = PD_DATA(pd_in(c, G_DOUT), float);
  float *dx = pd_gpu_f32(dxt), *dw = pd_gpu_f32(dwt);
  const int64_t chw = g.c * g.h * g.w;
  if (dbt) st = PD_GPU_LAUNCH_ROWS(c, g.m, bias_grad_k, g, dy, PD_DATA(dbt, float));
  if (!st && dw && g.n == 0) st = pd_gpu_zero(c, dw, (size_t)(g.m * g.kg) * sizeof(float));
  if (st || !(dx || dw) || g.n == 0) return st;
  plan pl;
  if ((st = make_plan(c, &g, &pl))) return st;
  for (int64_t n0 = 0; n0 < g.n && !st; n0 += pl.nb) {
    const int64_t cnt = g.n - n0 < pl.nb ? g.n - n0 : pl.nb, ld = cnt * g.p;
    st = PD_GPU_LAUNCH_N(c, cnt * g.m * g.p, gather_k, g, dy + n0 * g.m * g.p, pl.stage, cnt);
    if (!st && dw) {
      st = PD_GPU_LAUNCH_N(c, g.c * g.kh * g.kw * ld, im2col_k, g, x + n0 * chw, pl.col, cnt);
      for (int64_t gr = 0; gr < g.groups && !st; gr++)
        st = pd_gpu_gemm(c, false, true, g.mg, g.kg, ld, 1, pl.stage + gr * g.mg * ld, ld, pl.col + gr * g.kg * ld, ld,
                         n0 == 0 ? 0 : 1, dw + gr * g.mg * g.kg, g.kg);
    }
    if (!st && dx) {
      for (int64_t gr = 0; gr < g.groups && !st; gr++)
        st = pd_gpu_gemm(c, true, false, g.kg, ld, g.mg, 1, w + gr * g.mg * g.kg, g.kg, pl.stage + gr * g.mg * ld, ld,
                         0, pl.col + gr * g.kg * ld, ld);
      if (!st) st = PD_GPU_LAUNCH_N(c, cnt * chw, col2im_k, g, pl.col, dx + n0 * chw, cnt);
    }
  }
  return st;
}
