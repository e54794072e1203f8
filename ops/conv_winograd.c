/* conv_winograd.c — Winograd minimal filtering for conv2d (conv_winograd.h):
 * each m x m tile of the output is computed from an a x a tile of the input
 * (a = m + r - 1) with a a multiplications per input channel and filter
 * instead of m m r r, the element-wise products of all tiles done as one
 * BLIS product per tile position: [M x C] . [C x tiles]. The transforms are
 * the standard ones for the points 0, 1, -1, 2, -2 and infinity (Lavin and
 * Gray, "Fast Algorithms for Convolutional Neural Networks", 2015). Written
 * once for float and double in conv_winograd_t.h. */
#include "conv_winograd.h"

#include <stdint.h>
#include <string.h>

#include "base/arch.h"
#include "base/tmpl.h"
#include "cpu/blas.h"
#include "cpu/features.h"
#include "cpu/parallel.h"

/* F(2x2, 3x3) */
static const double at2[] = {1, 1, 1, 0, 0, 1, -1, -1};
static const double g2[] = {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1};
static const double bt2[] = {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1};
/* F(4x4, 3x3) */
static const double at4[] = {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1};
static const double g4[] = {1.0 / 4,  0,        0,       -1.0 / 6, -1.0 / 6,  -1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6,
                            1.0 / 24, 1.0 / 12, 1.0 / 6, 1.0 / 24, -1.0 / 12, 1.0 / 6,  0,        0,       1};
static const double bt4[] = {4, 0,  -5, 0, 1, 0, 0, -4, -4, 1,  1, 0, 0, 4, -4, -1, 1, 0,
                             0, -2, -1, 2, 1, 0, 0, 2,  -1, -2, 1, 0, 0, 4, 0,  -5, 0, 1};
/* F(2x2, 5x5): the points of F(4x4, 3x3), so the same BT */
static const double at25[] = {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 1};
static const double g25[] = {1.0 / 4,  0,        0,        0,       0,        -1.0 / 6,  -1.0 / 6, -1.0 / 6,
                             -1.0 / 6, -1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6, 1.0 / 6,   -1.0 / 6, 1.0 / 24,
                             1.0 / 12, 1.0 / 6,  1.0 / 3,  2.0 / 3, 1.0 / 24, -1.0 / 12, 1.0 / 6,  -1.0 / 3,
                             2.0 / 3,  0,        0,        0,       0,        1};
/* F(4x4, 5x5): the points 0, 1, -1, 2, -2, 1/2, -1/2 and infinity (those of
 * the well-known F(6x6, 3x3)), 1 / prod(p_j - p_l) in G as above */
static const double at45[] = {1, 1, 1, 1, 1, 1,       1,       0, 0, 1, -1, 2, -2, 1.0 / 2, -1.0 / 2, 0,
                              0, 1, 1, 4, 4, 1.0 / 4, 1.0 / 4, 0, 0, 1, -1, 8, -8, 1.0 / 8, -1.0 / 8, 1};
static const double g45[] = {-1,       0,         0,         0,        0,        -2.0 / 9,  -2.0 / 9,  -2.0 / 9,
                             -2.0 / 9, -2.0 / 9,  -2.0 / 9,  2.0 / 9,  -2.0 / 9, 2.0 / 9,   -2.0 / 9,  1.0 / 90,
                             1.0 / 45, 2.0 / 45,  4.0 / 45,  8.0 / 45, 1.0 / 90, -1.0 / 45, 2.0 / 45,  -4.0 / 45,
                             8.0 / 45, 32.0 / 45, 16.0 / 45, 8.0 / 45, 4.0 / 45, 2.0 / 45,  32.0 / 45, -16.0 / 45,
                             8.0 / 45, -4.0 / 45, 2.0 / 45,  0,        0,        0,         0,         1};
static const double bt45[] = {
    -1,        0,         21.0 / 4, 0,        -21.0 / 4, 0,        1,         0,       0,        1,         1,
    -17.0 / 4, -17.0 / 4, 1,        1,        0,         0,        -1,        1,       17.0 / 4, -17.0 / 4, -1,
    1,         0,         0,        1.0 / 2,  1.0 / 4,   -5.0 / 2, -5.0 / 4,  2,       1,        0,         0,
    -1.0 / 2,  1.0 / 4,   5.0 / 2,  -5.0 / 4, -2,        1,        0,         0,       2,        4,         -5.0 / 2,
    -5,        1.0 / 2,   1,        0,        0,         -2,       4,         5.0 / 2, -5,       -1.0 / 2,  1,
    0,         0,         -1,       0,        21.0 / 4,  0,        -21.0 / 4, 0,       1};
static const pd_wino_form forms[] = {
    {2, 3, 4, at2, g2, bt2},
    {4, 3, 6, at4, g4, bt4},
    {2, 5, 6, at25, g25, bt4},
    {4, 5, 8, at45, g45, bt45},
};

const pd_wino_form *pd_wino_form_get(int m, int r) {
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
    if (forms[i].m == m && forms[i].r == r) return &forms[i];
  return NULL;
}

/* Tiles a part transforms together: enough columns for the products to run
 * near BLIS's rate, few enough that V and Z stay in the core's L2 cache. */
#define CHUNK_TILES 128

/* One run's sizes and scratch: U [a a][ldu] (shared), then per part V
 * [a a][C][ld], Z [a a][M][ld], backward dU [a a][ldu] and dBias [M], then
 * the chunk's images padded so that every tile lies inside: the input
 * [imgs][C][hp][wp] (zeros around), backward also dInput's sums in the same
 * shape and dOutput [imgs][M][hq][wq] (zeros past the output). */
typedef struct wplan {
  const pd_conv_geom *g;
  const pd_wino_form *f;
  int parts;
  int64_t tw, tiles; /* tile columns, tiles per image */
  int64_t chunk, ld, ldu;
  int64_t imgs;           /* most images a chunk's tiles touch */
  int64_t hp, wp, hq, wq; /* padded input and output planes */
  int64_t pad_off;        /* where a part's padded images start (elements) */
  void *u;
  void *part[64];
} wplan;

static int64_t round_up(int64_t v, int64_t k) { return (v + k - 1) / k * k; }

static pd_status make_wplan(pd_ctx *c, const pd_conv_geom *g, const pd_wino_form *f, int parts, size_t elem,
                            bool backward, wplan *p) {
  const int64_t ln = 64 / (int64_t)elem, aa = (int64_t)f->a * f->a;
  p->g = g, p->f = f;
  p->tw = (g->wo + f->m - 1) / f->m;
  p->tiles = (g->ho + f->m - 1) / f->m * p->tw;
  p->parts = parts < 1 ? 1 : parts > 64 ? 64 : parts;
  const int64_t per = (g->n + p->parts - 1) / p->parts * p->tiles; /* a part's most tiles */
  p->chunk = round_up(per < CHUNK_TILES ? per : CHUNK_TILES, ln);
  p->ld = p->chunk;
  if (((size_t)p->ld * elem) % 2048 == 0) p->ld += ln; /* rows 2 KiB apart share cache sets */
  p->ldu = round_up(g->m * g->c, ln);
  const int64_t th = (g->ho + f->m - 1) / f->m;
  p->hq = th * f->m, p->wq = p->tw * f->m;
  p->hp = p->hq + f->r - 1, p->wp = p->wq + f->r - 1;
  p->imgs = (p->chunk + p->tiles - 2) / p->tiles + 1;
  if (p->imgs > g->n) p->imgs = g->n;
  p->pad_off = round_up(aa * (g->c + g->m) * p->ld + (backward ? aa * p->ldu + g->m : 0), ln);
  const int64_t xpad = p->imgs * g->c * p->hp * p->wp, dypad = p->imgs * g->m * p->hq * p->wq;
  const int64_t part_n = round_up(p->pad_off + xpad + (backward ? xpad + dypad : 0), ln);
  const int64_t total = aa * p->ldu + part_n * p->parts + ln;
  pd_tensor *t = &c->op->work[0];
  t->dtype = elem == 4 ? PD_F32 : PD_F64;
  pd_status st = pd_tensor_set_dims(t, 1, &total, c->err);
  if (!st) st = pd_ctx_alloc(c, t);
  if (st) return st;
  char *base = (char *)(((uintptr_t)pd_tensor_data(t) + 63) & ~(uintptr_t)63);
  p->u = base;
  for (int i = 0; i < p->parts; i++) p->part[i] = base + (aa * p->ldu + part_n * i) * (int64_t)elem;
  return PD_OK;
}

#define T float
#include "conv_winograd_t.h"
#undef T
#define T double
#include "conv_winograd_t.h"
#undef T
