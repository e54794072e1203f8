/* conv_winograd.c — Winograd minimal filtering for conv2d (conv_winograd.h):
 * each m x m tile of the output is computed from an a x a tile of the input
 * (a = m + r - 1) with a a multiplications per input channel and filter
 * instead of m m r r, the element-wise products of all tiles done as one
 * product per tile position: [M x C] . [C x tiles] (wgemm below). The transforms are
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
#include "cpu/smallgemm.h"

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
 * [a a][C][ld], Z [a a][M][ld], backward dU [a a][ldu], dBias [M] and
 * room for a V^T [ld][C] (wgemm_nt), then
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
  int64_t xpad;           /* the padded input's size, with room for an 8-wide read past its last tile */
  bool gather8;           /* float tiles of 6 or 8 gathered 8 lanes at a time (AVX2) */
  bool scatter8;          /* and dInput's added back so: 4x4 tiles only, where even lanes' windows do not overlap */
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
  p->pad_off =
      round_up(aa * (g->c + g->m) * p->ld + (backward ? aa * p->ldu + round_up(g->m, ln) + p->ld * g->c : 0), ln);
  p->xpad = round_up(p->imgs * g->c * p->hp * p->wp + 8, ln);
  const int64_t dypad = p->imgs * g->m * p->hq * p->wq;
  const int64_t part_n = round_up(p->pad_off + p->xpad + (backward ? p->xpad + dypad : 0), ln);
#ifdef PD_X86
  p->gather8 = elem == 4 && f->a >= 6 && pd_cpu_avx2_fma();
#else
  p->gather8 = false;
#endif
  p->scatter8 = p->gather8 && f->m == 4;
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

#ifdef PD_X86
#include <immintrin.h>

#include "cpu/lanes8.h"

#define AVX2_INLINE __attribute__((target("avx2"), always_inline)) static inline

/* d[(i a + j) 16 + k] = base[k][i ws + j] for 8 lanes k and i, j < a (a <= 8;
 * each row read 8 wide: the padded planes leave room past their ends) */
AVX2_INLINE void gather8_a(const float *const base[8], int64_t ws, const int a, float *d) {
#pragma GCC unroll 8
  for (int i = 0; i < a; i++) {
    __m256 r[8];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_ps(base[k] + i * ws);
    pd_tr8(r);
#pragma GCC unroll 8
    for (int j = 0; j < a; j++) _mm256_storeu_ps(d + (i * a + j) * 16, r[j]);
  }
}
__attribute__((target("avx2"))) static void gather8(const float *const base[8], int64_t ws, int a, float *d) {
  if (a == 6)
    gather8_a(base, ws, 6, d);
  else
    gather8_a(base, ws, 8, d);
}

/* base[k][i ws + j] += d[(i a + j) 16 + k]; each row 8 wide, the columns
 * past a adding 0. Neighbouring lanes' windows overlap, so the even lanes
 * go first, then the odd ones: a read of what the previous lane has just
 * stored would wait for the store (a partial overlap is not forwarded). */
AVX2_INLINE void scatter_add8_a(float *const base[8], int64_t ws, const int a, const float *d) {
  __m256 r[8][8];
#pragma GCC unroll 8
  for (int i = 0; i < a; i++) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) r[i][j] = j < a ? _mm256_loadu_ps(d + (i * a + j) * 16) : _mm256_setzero_ps();
    pd_tr8(r[i]);
  }
  for (int odd = 0; odd < 2; odd++)
#pragma GCC unroll 4
    for (int k = odd; k < 8; k += 2)
#pragma GCC unroll 8
      for (int i = 0; i < a; i++) {
        float *q = base[k] + i * ws;
        _mm256_storeu_ps(q, _mm256_add_ps(_mm256_loadu_ps(q), r[i][k]));
      }
}
__attribute__((target("avx2"))) static void scatter_add8(float *const base[8], int64_t ws, int a, const float *d) {
  if (a == 6)
    scatter_add8_a(base, ws, 6, d);
  else
    scatter_add8_a(base, ws, 8, d);
}
#undef AVX2_INLINE
#endif

/* A product done here rather than by pd_gemm, timed into `paddle-run
 * time`'s products profile as pd_gemm's are (inside a parallel part only
 * counted); own_begin's 0 means not timed. */
static double own_begin(void) {
  if (!pd_blas_profiling()) return 0;
  if (pd_parallel_inside()) {
    pd_blas_profile_count_in_part();
    return 0;
  }
  return pd_blas_now();
}
static void own_end(double t0, int64_t m, int64_t n, int64_t k) {
  if (t0) pd_blas_profile_add(pd_blas_now() - t0, 2.0 * (double)m * (double)n * (double)k);
}
/* Where cpu/smallgemm.c's kernels serve: float, AVX2 with FMA, and not a
 * CPU with AVX-512 (measured only against BLIS's AVX2 kernels, on Zen 3;
 * where BLIS runs its AVX-512 ones the 8-float kernels may lose). They read
 * both operands where they lie; BLIS packs both for each of these small
 * products. */
static bool own_products(void) { return pd_sgemm_small_ok() && !pd_cpu_avx512f(); }

/* C = op(A) B, beta 0, for the products of a chunk (op(A): U or its
 * transpose, B: V or Z as the transforms lay them out). */
static void wgemm_float(bool ta, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                        int64_t ldb, float *c, int64_t ldc) {
  if (m % 4 == 0 && own_products()) {
    const double t0 = own_begin();
    pd_sgemm_small(m, n, k, a, ta ? 1 : lda, ta ? lda : 1, b, ldb, c, ldc);
    own_end(t0, m, n, k);
    return;
  }
  pd_gemm_float(ta, false, m, n, k, 1, a, lda, b, ldb, 0, c, ldc);
}
static void wgemm_double(bool ta, int64_t m, int64_t n, int64_t k, const double *a, int64_t lda, const double *b,
                         int64_t ldb, double *c, int64_t ldc) {
  pd_gemm_double(ta, false, m, n, k, 1, a, lda, b, ldb, 0, c, ldc);
}
/* C += A B^T (the filter gradient's dU += Z V^T, k the chunk's tiles); t:
 * room for k n elements the float kernel lays B^T out in. Single products
 * (m, n, k) = (32, 32, 128), 1 thread, Zen 3: BLIS 45-57 GFLOP/s. */
static void wgemm_nt_float(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                           float *c, int64_t ldc, float *t) {
  if (m % 4 == 0 && n % 8 == 0 && own_products()) {
    const double t0 = own_begin();
    pd_sgemm_small_nt_add(m, n, k, a, lda, b, ldb, c, ldc, t);
    own_end(t0, m, n, k);
    return;
  }
  pd_gemm_float(false, true, m, n, k, 1, a, lda, b, ldb, 1, c, ldc);
}
static void wgemm_nt_double(int64_t m, int64_t n, int64_t k, const double *a, int64_t lda, const double *b, int64_t ldb,
                            double *c, int64_t ldc, double *t) {
  (void)t;
  pd_gemm_double(false, true, m, n, k, 1, a, lda, b, ldb, 1, c, ldc);
}

#define T float
#include "conv_winograd_t.h"
#undef T
#define T double
#include "conv_winograd_t.h"
#undef T
