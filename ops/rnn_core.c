/* rnn_core.c — what the fused recurrent ops (lstm.c, gru.c, rnn.c) share:
 * the shapes of their parameters, states and Reserve buffer, the checks of
 * their inputs, and the driver over layers and directions (rnn_core_t.h,
 * once per element type) that calls the op's cell once a step. */
#include "rnn_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arch.h"
#include "cpu/blas.h"
#include "cpu/features.h"
#include "cpu/parallel.h"
#include "kmath.h"
#ifdef PD_X86
#include <immintrin.h>

#include "cpu/lanes8.h"
#endif

const char *const pd_rnn_directions[] = {"forward", "reverse", "bidirectional", NULL};

/* Rows that may be active at step p: with sorted lengths only the prefix
 * longer than p (the products shrink with the batch), else all of them
 * (the cell freezes the rest row by row). */
static int64_t rnn_active_rows(const rnn_dims *d, int64_t p) {
  if (!d->len || !d->sorted) return d->B;
  int64_t n = d->B;
  while (n > 0 && d->len[n - 1] <= p) n--;
  return n;
}

bool pd_rnn_avx2(void) { return pd_cpu_avx2_fma(); }
bool pd_rnn_avx512(void) { return pd_cpu_avx2_fma() && pd_cpu_avx512f(); }

/* Units of `per` elements a part of a copy takes at least: 64 KiB or so of
 * floats (less, and the pool's fork costs more than the copy saves). */
static int64_t rnn_copy_grain(int64_t per) {
  int64_t g = ((int64_t)1 << 14) / (per > 0 ? per : 1);
  return g > 0 ? g : 1;
}

/* ---- the packed product (pd_rnn_packed), float only ---- */

/* Steps a call must have to pay for packing R (about one step's product). */
#define RNN_PACKED_MIN_STEPS 4
/* The largest micro-tile (mr * nr) the cells keep on their stack. */
#define RNN_PACKED_MAX_TILE 1024

static int64_t rnn_round16(int64_t n) { return (n + 15) & ~(int64_t)15; }

/* Grows `work` to n floats from a 64-byte boundary. */
static pd_status rnn_packed_alloc(pd_ctx *c, pd_tensor *work, int64_t n, float **out) {
  work->dtype = PD_F32;
  int64_t total = n + 16;
  pd_status st = pd_tensor_set_dims(work, 1, &total, c->err);
  if (!st) st = pd_ctx_alloc(c, work);
  if (st) return st;
  uintptr_t p = (uintptr_t)PD_DATA(work, float);
  *out = (float *)((p + 63) & ~(uintptr_t)63);
  return PD_OK;
}

void pd_rnn_panels(pd_rnn_packed *pk, int64_t batch, int chunks, bool fours) {
  const int64_t mr = pk->uk.mr;
  int64_t p = 0;
  pk->chunks = chunks;
  for (int c = 0; c < chunks; c++) {
    int64_t r0 = batch * c / chunks & ~(int64_t)1, r1 = c + 1 < chunks ? batch * (c + 1) / chunks & ~(int64_t)1 : batch;
    int64_t n = r1 - r0, nmr = (n + mr - 1) / mr, n4 = 0;
    if (fours && n % mr)
      for (int64_t a = n / mr; a >= 0; a--)
        if ((n - a * mr) % 4 == 0) {
          nmr = a, n4 = (n - a * mr) / 4;
          break;
        }
    pk->chunk[c].p0 = p, pk->chunk[c].r0 = r0, pk->chunk[c].nmr = nmr;
    p += nmr + n4;
  }
  pk->chunk[chunks].p0 = pk->npan = p, pk->chunk[chunks].r0 = batch, pk->chunk[chunks].nmr = 0;
}

/* The parts a step split by batch panels runs on: whole panels, at least
 * about 8192 gate values each */
static int rnn_row_parts(const pd_rnn_packed *pk, int64_t gh) {
  int64_t grain = pd_rnn_row_grain(gh) / pk->uk.mr;
  return pd_parallel_parts(pk->npan, grain > 0 ? grain : 1);
}

/* Whether a call takes the packed path; fills pk's sizes (a and b left). */
static bool rnn_packed_use(const pd_rnn_cell *cell, const rnn_dims *d, bool fwd, pd_rnn_packed *pk) {
  if ((fwd ? !cell->fwd_packed : !cell->bwd_packed) || !(cell->packed_variants >> d->variant & 1) ||
      d->Tn < RNN_PACKED_MIN_STEPS)
    return false;
  memset(pk, 0, sizeof *pk);
  pd_ukr_float(&pk->uk);
  if (pk->uk.mr * pk->uk.nr > RNN_PACKED_MAX_TILE || pk->uk.mr < 1 || pk->uk.nr < 1) return false;
  pk->kdim = fwd ? d->H : d->GH;
  pk->blocks = (d->H + pk->uk.nr - 1) / pk->uk.nr;
  pk->as = rnn_round16(pk->kdim * pk->uk.mr), pk->bs = rnn_round16(pk->kdim * pk->uk.nr);
  /* panels of 4: only for BLIS's 6 x 16 tile, full blocks; backward, a
   * run of rows a part of the pool (rnn_row_parts asks the same) */
  bool fours = pk->uk.mr == 6 && pk->uk.nr == 16 && d->H % 16 == 0 && pd_rnn_avx2();
  pd_rnn_panels(pk, d->B, 1, fours);
  if (!fwd) {
    int parts = rnn_row_parts(pk, d->GH);
    if (parts > 1 && parts <= PD_RNN_MAX_CHUNKS && parts <= d->B / 2) pd_rnn_panels(pk, d->B, parts, fours);
  }
  return true;
}

/* R packed, hidden blocks [lo, hi) (the layouts: below) */
typedef struct rnn_pack_r {
  const rnn_dims *d;
  const float *r;
  float *buf;
  const pd_rnn_packed *pk;
  bool fwd;
} rnn_pack_r;

#ifdef PD_X86
/* A forward panel of full blocks on AVX2: b[l * nr + j] = src[j * H + l]
 * for nr rows of src (nr and H multiples of 8), 8 x 8 tiles through pd_tr8
 * where one element at a time wrote a line of b per element (~0.3 ms a
 * char LM step, forward and backward, on Zen 4). */
__attribute__((target("avx2"))) static void rnn_pack_r_tr8(float *restrict b, const float *restrict src, int64_t nr,
                                                           int64_t H) {
  for (int64_t j = 0; j < nr; j += 8)
    for (int64_t l = 0; l < H; l += 8) {
      __m256 t[8];
      for (int i = 0; i < 8; i++) t[i] = _mm256_loadu_ps(src + (j + i) * H + l);
      pd_tr8(t); /* t[c]: column l + c of rows j .. j + 7 */
      for (int c = 0; c < 8; c++) _mm256_storeu_ps(b + (l + c) * nr + j, t[c]);
    }
}
#endif

static void rnn_pack_r_blocks(void *arg, int64_t lo, int64_t hi) {
  const rnn_pack_r *a = arg;
  const int64_t H = a->d->H, G = a->d->G, GH = a->d->GH, nr = a->pk->uk.nr;
  const float *r = a->r;
  for (int64_t hb = lo; hb < hi; hb++) {
    const bool full = (hb + 1) * nr <= H; /* no zero columns */
    if (a->fwd) {
      float *b = a->buf + hb * G * a->pk->bs;
      for (int64_t q = 0; q < G; q++, b += a->pk->bs) {
#ifdef PD_X86
        if (full && nr % 8 == 0 && H % 8 == 0 && pd_rnn_avx2()) {
          rnn_pack_r_tr8(b, r + (q * H + hb * nr) * H, nr, H);
          continue;
        }
#endif
        for (int64_t j = 0; j < nr; j++) {
          int64_t col = hb * nr + j;
          for (int64_t l = 0; l < H; l++) b[l * nr + j] = col < H ? r[(q * H + col) * H + l] : 0;
        }
      }
    } else {
      float *b = a->buf + hb * a->pk->bs;
      if (full)
        for (int64_t l = 0; l < GH; l++) memcpy(b + l * nr, r + l * H + hb * nr, sizeof(float) * (size_t)nr);
      else
        for (int64_t l = 0; l < GH; l++)
          for (int64_t j = 0; j < nr; j++) b[l * nr + j] = hb * nr + j < H ? r[l * H + hb * nr + j] : 0;
    }
  }
}

/* Forward: R^T [H, G H] in panels of nr columns, block by block of hidden
 * units, a block's gates in turn (zero columns past H); h0 into a[0]. */
static pd_status rnn_packed_fwd_float(pd_ctx *c, const rnn_dims *d, const float *r, const float *h0,
                                      pd_rnn_packed *pk) {
  int64_t H = d->H, G = d->G, nr = pk->uk.nr, mpan = pk->npan;
  float *buf;
  pd_status st = rnn_packed_alloc(c, &c->op->work[0], pk->blocks * G * pk->bs + 2 * mpan * pk->as, &buf);
  if (st) return st;
  pk->b = buf;
  rnn_pack_r job = {d, r, buf, pk, true};
  pd_parallel_for(pk->blocks, rnn_copy_grain(G * H * nr), rnn_pack_r_blocks, &job);
  pk->a[0] = buf + pk->blocks * G * pk->bs, pk->a[1] = pk->a[0] + mpan * pk->as;
  memset(pk->a[0], 0, sizeof(float) * (size_t)(2 * mpan * pk->as));
  for (int64_t p = 0; p < mpan; p++) {
    int64_t r0 = pd_rnn_panel_r0(pk, p), ph = pd_rnn_panel_h(pk, p);
    for (int64_t i = r0; i < r0 + ph && i < d->B; i++)
      for (int64_t l = 0; l < H; l++) pk->a[0][p * pk->as + l * ph + i - r0] = h0[i * H + l];
  }
  return PD_OK;
}

/* Backward: R [G H, H] in panels of nr columns (zero columns past H). */
static pd_status rnn_packed_bwd_float(pd_ctx *c, const rnn_dims *d, const float *r, pd_rnn_packed *pk) {
  int64_t GH = d->GH, nr = pk->uk.nr, mpan = pk->npan;
  float *buf;
  pd_status st = rnn_packed_alloc(c, &c->op->work[1], pk->blocks * pk->bs + mpan * pk->as, &buf);
  if (st) return st;
  pk->b = buf;
  rnn_pack_r job = {d, r, buf, pk, false};
  pd_parallel_for(pk->blocks, rnn_copy_grain(GH * nr), rnn_pack_r_blocks, &job);
  pk->a[0] = buf + pk->blocks * pk->bs, pk->a[1] = NULL;
  memset(pk->a[0], 0, sizeof(float) * (size_t)(mpan * pk->as));
  return PD_OK;
}

/* The driver's calls, per element type: the packed path is float's. */
static pd_status rnn_packed_start_fwd_float(pd_ctx *c, const pd_rnn_cell *cell, const rnn_dims *d, const float *r,
                                            const float *h0, pd_rnn_packed *pk, pd_rnn_packed **use) {
  *use = NULL;
  if (!rnn_packed_use(cell, d, true, pk)) return PD_OK;
  pd_status st = rnn_packed_fwd_float(c, d, r, h0, pk);
  if (!st) *use = pk;
  return st;
}
static pd_status rnn_packed_start_fwd_double(pd_ctx *c, const pd_rnn_cell *cell, const rnn_dims *d, const double *r,
                                             const double *h0, pd_rnn_packed *pk, pd_rnn_packed **use) {
  (void)c, (void)cell, (void)d, (void)r, (void)h0, (void)pk;
  *use = NULL;
  return PD_OK;
}
static pd_status rnn_packed_start_bwd_float(pd_ctx *c, const pd_rnn_cell *cell, const rnn_dims *d, const float *r,
                                            pd_rnn_packed *pk, pd_rnn_packed **use) {
  *use = NULL;
  if (!rnn_packed_use(cell, d, false, pk)) return PD_OK;
  pd_status st = rnn_packed_bwd_float(c, d, r, pk);
  if (!st) *use = pk;
  return st;
}
static pd_status rnn_packed_start_bwd_double(pd_ctx *c, const pd_rnn_cell *cell, const rnn_dims *d, const double *r,
                                             pd_rnn_packed *pk, pd_rnn_packed **use) {
  (void)c, (void)cell, (void)d, (void)r, (void)pk;
  *use = NULL;
  return PD_OK;
}
#ifdef PD_X86
/* pd_rnn_pack's full panels of MR = 4, 6 or 8 rows, 8 columns at a time
 * (MR a constant, so the eight vectors stay in registers): the columns done */
__attribute__((target("avx2"), always_inline)) static inline int64_t
rnn_pack8(float *restrict dst, const int MR, const float *restrict src, int64_t ld, int64_t n) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    __m256 r[8];
    _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) r[i] =
        i < MR ? _mm256_loadu_ps(src + i * ld + k) : _mm256_setzero_ps();
    pd_tr8(r); /* r[c]: column k + c, rows 0..7 */
    float *d = dst + k * MR;
    _Pragma("GCC unroll 8") for (int c = 0; c < 8; c++) {
      if (MR == 8)
        _mm256_storeu_ps(d + c * MR, r[c]);
      else
        _mm_storeu_ps(d + c * MR, _mm256_castps256_ps128(r[c]));
      if (MR == 6) _mm_storel_pi((__m64 *)(void *)(d + c * MR + 4), _mm256_extractf128_ps(r[c], 1));
    }
  }
  return k;
}
__attribute__((target("avx2"))) static int64_t rnn_pack8_4(float *restrict d, const float *restrict s, int64_t ld,
                                                           int64_t n) {
  return rnn_pack8(d, 4, s, ld, n);
}
__attribute__((target("avx2"))) static int64_t rnn_pack8_6(float *restrict d, const float *restrict s, int64_t ld,
                                                           int64_t n) {
  return rnn_pack8(d, 6, s, ld, n);
}
__attribute__((target("avx2"))) static int64_t rnn_pack8_8(float *restrict d, const float *restrict s, int64_t ld,
                                                           int64_t n) {
  return rnn_pack8(d, 8, s, ld, n);
}
#endif

void pd_rnn_pack(float *restrict dst, int64_t mr, const float *restrict src, int64_t ld, int64_t rows, int64_t n) {
  int64_t k = 0;
#ifdef PD_X86
  if (rows == mr && pd_rnn_avx2())
    k = mr == 6   ? rnn_pack8_6(dst, src, ld, n)
        : mr == 8 ? rnn_pack8_8(dst, src, ld, n)
        : mr == 4 ? rnn_pack8_4(dst, src, ld, n)
                  : 0;
#endif
  for (; k < n; k++)
    for (int64_t i = 0; i < rows; i++) dst[k * mr + i] = src[i * ld + k];
}

void pd_rnn_packed_h(pd_rnn_step_float *s, int64_t j0, int64_t j1) {
  const pd_rnn_packed *pk = s->pk;
  const int64_t H = s->hidden;
  float *an = pk->a[!s->cur];
  for (int64_t p = 0; p < pk->npan; p++) {
    int64_t r0 = pd_rnn_panel_r0(pk, p), ph = pd_rnn_panel_h(pk, p);
    pd_rnn_pack(an + p * pk->as + j0 * ph, ph, s->h + r0 * H + j0, H, pd_rnn_panel_rows(pk, p, s->batch), j1 - j0);
  }
}

#ifdef PD_X86
/* A panel of 4 rows times a 16-column panel of B, both packed k-major: 8
 * chains of FMAs in k order from 0 (two FMA units of 4 cycles' latency
 * want 8), then beta c + them for the first m rows, as BLIS's 6 x 16
 * micro-kernel computes each element (alpha 1; beta 0 or 1). */
__attribute__((target("avx2,fma"))) static void rnn_panel4x16(int64_t m, int64_t k, const float *a, const float *b,
                                                              float beta, float *c, int64_t ldc) {
  /* named, not an array: GCC kept an array in memory across the loop */
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  for (int64_t p = 0; p < k; p++, a += 4, b += 16) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 x = _mm256_broadcast_ss(a);
    c00 = _mm256_fmadd_ps(x, b0, c00), c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(x, b0, c10), c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(x, b0, c20), c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(x, b0, c30), c31 = _mm256_fmadd_ps(x, b1, c31);
  }
  const __m256 acc[8] = {c00, c01, c10, c11, c20, c21, c30, c31}, bv = _mm256_set1_ps(beta);
  for (int64_t i = 0; i < m; i++, c += ldc) {
    __m256 lo = acc[2 * i], hi = acc[2 * i + 1];
    if (beta != 0)
      lo = _mm256_fmadd_ps(bv, _mm256_loadu_ps(c), lo), hi = _mm256_fmadd_ps(bv, _mm256_loadu_ps(c + 8), hi);
    _mm256_storeu_ps(c, lo), _mm256_storeu_ps(c + 8, hi);
  }
}
#endif

#ifdef PD_X86
/* Two panels of 16 columns times one panel of 4 rows on AVX-512: 8 chains
 * of 16 lanes, each element's FMAs in k order from 0, then beta c + them,
 * as rnn_panel4x16 computes each. rnn_panel4x16's 8 chains of 8 lanes
 * leave the FMA units no slack (latency 4, one FMA a chain every 4
 * cycles): 107 GFLOP/s on a Zen 4 core where BLIS's 6 x 16 makes 115; two
 * panels at once make 116. */
__attribute__((target("avx512f"))) static void rnn_panel4x32(int64_t m, int64_t k, const float *a, const float *b0,
                                                             const float *b1, float beta, float *c0, float *c1,
                                                             int64_t ldc) {
  __m512 x0 = _mm512_setzero_ps(), x1 = x0, x2 = x0, x3 = x0, y0 = x0, y1 = x0, y2 = x0, y3 = x0;
  for (int64_t p = 0; p < k; p++, a += 4, b0 += 16, b1 += 16) {
    const __m512 u = _mm512_loadu_ps(b0), v = _mm512_loadu_ps(b1);
    __m512 s = _mm512_set1_ps(a[0]);
    x0 = _mm512_fmadd_ps(s, u, x0), y0 = _mm512_fmadd_ps(s, v, y0);
    s = _mm512_set1_ps(a[1]);
    x1 = _mm512_fmadd_ps(s, u, x1), y1 = _mm512_fmadd_ps(s, v, y1);
    s = _mm512_set1_ps(a[2]);
    x2 = _mm512_fmadd_ps(s, u, x2), y2 = _mm512_fmadd_ps(s, v, y2);
    s = _mm512_set1_ps(a[3]);
    x3 = _mm512_fmadd_ps(s, u, x3), y3 = _mm512_fmadd_ps(s, v, y3);
  }
  const __m512 xs[4] = {x0, x1, x2, x3}, ys[4] = {y0, y1, y2, y3}, bv = _mm512_set1_ps(beta);
  for (int64_t i = 0; i < m; i++, c0 += ldc, c1 += ldc) {
    __m512 lo = xs[i], hi = ys[i];
    if (beta != 0) lo = _mm512_fmadd_ps(bv, _mm512_loadu_ps(c0), lo), hi = _mm512_fmadd_ps(bv, _mm512_loadu_ps(c1), hi);
    _mm512_storeu_ps(c0, lo), _mm512_storeu_ps(c1, hi);
  }
}
#endif

void pd_rnn_panel_product(const pd_rnn_packed *pk, int64_t p, int64_t m, int64_t n, int64_t k, const float *a,
                          const float *b, float beta, float *c, int64_t ldc) {
#ifdef PD_X86
  if (pd_rnn_panel_h(pk, p) != pk->uk.mr) { /* panels of 4: made only where n is 16 and the CPU has AVX2 */
    rnn_panel4x16(m, k, a, b, beta, c, ldc);
    return;
  }
#else
  (void)p;
#endif
  pd_ukr_run_ex_float(&pk->uk, m, n, k, a, b, beta, c, ldc, 1);
}

void pd_rnn_products2(const pd_rnn_packed *pk, int64_t p0, int64_t p1, int64_t nact, int64_t n, int64_t k,
                      const float *a, const float *b0, float *c0, const float *b1, float *c1, float beta, int64_t ldc) {
  /* a panel of 4 on AVX-512 (n is then 16: rnn_packed_use) takes both at once */
  const bool wide = n == 16 && pd_rnn_avx512();
  for (int pass = 0; pass < 3; pass++)
    for (int64_t p = p0; p < p1 && pd_rnn_panel_r0(pk, p) < nact; p++) {
      const int64_t r0 = pd_rnn_panel_r0(pk, p), ph = pd_rnn_panel_h(pk, p), m = pd_rnn_panel_rows(pk, p, nact);
      const bool both = wide && ph != pk->uk.mr;
      if (both != (pass == 2)) continue;
#ifdef PD_X86
      if (both) {
        rnn_panel4x32(m, k, a + p * pk->as, b0, b1, beta, c0 + r0 * ldc, c1 + r0 * ldc, ldc);
        continue;
      }
#endif
      pd_rnn_panel_product(pk, p, m, n, k, a + p * pk->as, pass ? b1 : b0, beta, (pass ? c1 : c0) + r0 * ldc, ldc);
    }
}

/* Column sums (rnn_core_t.h's rnn_sum_rows from zeros): float's on AVX2 where
 * there is one, after the template. */
static void rnn_colsum_float(float *restrict out, const float *restrict a, int64_t rows, int64_t n, int64_t ld);
static void rnn_colsum_double(double *restrict out, const double *restrict a, int64_t rows, int64_t n, int64_t ld);
/* The projection's bias epilogue (pd_gemm_ep's form) likewise. */
static void rnn_bias_ep_float(void *arg, void *cv, int64_t ldc, int64_t r0, int64_t rows, int64_t c0, int64_t cols);
static void rnn_bias_ep_double(void *arg, void *cv, int64_t ldc, int64_t r0, int64_t rows, int64_t c0, int64_t cols);

#define T float
#include "rnn_core_t.h"
#undef T
#define T double
#include "rnn_core_t.h"
#undef T

/* ---- the step loops ---- */

/* A forward step goes over the pool split by hidden blocks, one job a
 * step: every part reads h_prev of every row, and R's packed blocks are
 * its own (on one of Zen 4's two cores, a part that ran the whole sequence
 * on half the rows instead, reading all of R at each step, took 4-5 %
 * longer: 2.02 against 1.93 ms fashion_lstm_fused's forward, 8.0 against
 * 7.7 ms char LM's, whose R packed is all of a core's 1 MB L2).
 *
 * The backward goes by rows where the batch's panels make a run of rows
 * for each part (pk->chunk): each part runs all Tn steps on its run, one
 * pool job for the sequence. A row's dh depends on its own later steps
 * only, and its dh, dc, dG and packed A are written and read by its part
 * alone, so they stay in that core's cache, and no part waits for another
 * between steps (~1 % of fashion_lstm_fused's and fashion_gru's backward
 * on 2 threads against a job a step). Split by hidden blocks instead, a
 * step wrote packed lines the other core had read the step before and read
 * half of dh from it (the packing took 4.5 times as long a panel as on one
 * core). By steps, one job a step split by panels, where there is one
 * run, with sorted lengths (the shrinking batch would leave the later runs
 * idle) and with peepholes (P's gradient sums over the rows in order: one
 * part). Either way a value's operations are the same, in the same
 * order. */
typedef struct rnn_steps_job {
  const pd_rnn_cell *cell;
  pd_rnn_step_float *s;
  const rnn_walk_float *w;
} rnn_steps_job;

static void rnn_fwd_part(void *arg, int part, int nparts) {
  const rnn_steps_job *job = arg;
  int64_t lo, hi;
  pd_parallel_range(job->s->pk->blocks, part, nparts, &lo, &hi);
  job->cell->fwd_packed(job->s, lo, hi);
}

static void rnn_steps_fwd_float(const pd_rnn_cell *cell, pd_rnn_step_float *s, const rnn_walk_float *w) {
  rnn_steps_job job = {cell, s, w};
  for (int64_t i = 0; i < w->d->Tn; i++) {
    rnn_at_float(w, s, i);
    if (!s->pk) {
      cell->fwd_float(s);
      continue;
    }
    pd_parallel_run(pd_parallel_parts(s->pk->blocks, 1), rnn_fwd_part, &job);
    s->cur ^= 1;
  }
}

/* A part's batch panels: its run where there is one a part */
static void rnn_part_panels(const pd_rnn_packed *pk, int part, int nparts, int64_t *lo, int64_t *hi) {
  if (nparts == pk->chunks)
    *lo = pk->chunk[part].p0, *hi = pk->chunk[part + 1].p0;
  else
    pd_parallel_range(pk->npan, part, nparts, lo, hi);
}

/* A backward step of panels [lo, hi): the cell's gate pass, which packs
 * their gate gradients, then dh += A R for their rows over every hidden
 * block (timed: the part that times its products for the profile) */
static void rnn_bwd_panels(const pd_rnn_cell *cell, pd_rnn_step_float *s, int64_t lo, int64_t hi, bool timed) {
  const pd_rnn_packed *pk = s->pk;
  const int64_t H = s->hidden, nr = pk->uk.nr, nact = s->nact;
  cell->bwd_packed(s, lo, hi);
  double t0 = timed && pd_blas_profiling() ? pd_blas_now() : 0;
  /* two full hidden blocks at a time (pd_rnn_products2), the last one
   * alone where there is an odd one or a partial one */
  for (int64_t hb = 0; hb < pk->blocks;) {
    const int64_t j0 = hb * nr, n = H - j0 < nr ? H - j0 : nr;
    const float *bp = pk->b + hb * pk->bs;
    if ((hb + 2) * nr <= H) {
      pd_rnn_products2(pk, lo, hi, nact, nr, pk->kdim, pk->a[0], bp, s->dh + j0, bp + pk->bs, s->dh + j0 + nr, 1, H);
      hb += 2;
      continue;
    }
    for (int64_t p = lo; p < hi && pd_rnn_panel_r0(pk, p) < nact; p++) {
      int64_t r0 = pd_rnn_panel_r0(pk, p), m = pd_rnn_panel_rows(pk, p, nact);
      pd_rnn_panel_product(pk, p, m, n, pk->kdim, pk->a[0] + p * pk->as, bp, 1, s->dh + r0 * H + j0, H);
    }
    hb++;
  }
  if (t0) pd_blas_profile_add(pd_blas_now() - t0, 2.0 * (double)nact * (double)s->gh * (double)H);
}

#ifdef PD_X86
__attribute__((target("avx2"))) static void rnn_sum_rows_avx2(float *restrict sum, const float *restrict a,
                                                              int64_t rows, int64_t n, int64_t ld) {
  rnn_sum_rows_float(sum, a, rows, n, ld);
}
#endif
/* rnn_sum_rows_float on AVX2 where there is one */
static void rnn_add_rows(float *restrict sum, const float *restrict a, int64_t rows, int64_t n, int64_t ld) {
#ifdef PD_X86
  if (pd_rnn_avx2()) {
    rnn_sum_rows_avx2(sum, a, rows, n, ld);
    return;
  }
#endif
  rnn_sum_rows_float(sum, a, rows, n, ld);
}

/* A part of the backward by rows: all Tn steps of its run of rows, and
 * the column sums of their dG (and dEx) as each step leaves them in its
 * core's cache, in w->bsum's row 1 + part: a separate pass over all
 * Tn B rows after the loop read them back from memory (~1.3 % of
 * fashion_lstm_fused's step, 1 or 2 threads). */
static void rnn_bwd_rows_part(void *arg, int part, int nparts) {
  const rnn_steps_job *job = arg;
  pd_rnn_step_float s = *job->s;
  const pd_rnn_packed *pk = s.pk;
  const int64_t GH = s.gh, H = s.hidden;
  int64_t lo, hi;
  rnn_part_panels(pk, part, nparts, &lo, &hi);
  const int64_t r0 = lo < pk->npan ? pd_rnn_panel_r0(pk, lo) : s.batch;
  const int64_t r1 = hi < pk->npan ? pd_rnn_panel_r0(pk, hi) : s.batch;
  float *sum = job->w->bsum + (1 + part) * (GH + H);
  memset(sum, 0, sizeof(float) * (size_t)(GH + H));
  for (int64_t i = 0; i < job->w->d->Tn; i++) {
    rnn_at_float(job->w, &s, i);
    rnn_bwd_panels(job->cell, &s, lo, hi, part == 0);
    rnn_add_rows(sum, s.dg + r0 * GH, r1 - r0, GH, GH);
    if (s.dex) rnn_add_rows(sum + GH, s.dex + r0 * H, r1 - r0, H, H);
  }
}

static void rnn_bwd_step_part(void *arg, int part, int nparts) {
  const rnn_steps_job *job = arg;
  int64_t lo, hi;
  rnn_part_panels(job->s->pk, part, nparts, &lo, &hi);
  rnn_bwd_panels(job->cell, job->s, lo, hi, part == 0);
}

static bool rnn_steps_bwd_float(const pd_rnn_cell *cell, pd_rnn_step_float *s, const rnn_walk_float *w) {
  rnn_steps_job job = {cell, s, w};
  const rnn_dims *d = w->d;
  const int parts = !s->pk ? 1 : s->pk->chunks > 1 ? s->pk->chunks : rnn_row_parts(s->pk, s->gh);
  if (s->pk && parts == s->pk->chunks && !s->dpeep && (!d->len || !d->sorted || d->len[d->B - 1] == d->Tn)) {
    pd_parallel_run(parts, rnn_bwd_rows_part, &job);
    /* the parts' sums in part order */
    const int64_t n = s->gh + s->hidden;
    memcpy(w->bsum, w->bsum + n, sizeof(float) * (size_t)n);
    for (int p = 1; p < parts; p++)
      for (int64_t j = 0; j < n; j++) w->bsum[j] += w->bsum[(1 + p) * n + j];
    return true;
  }
  /* by steps (peepholes: one part) */
  for (int64_t i = 0; i < w->d->Tn; i++) {
    rnn_at_float(w, s, i);
    if (s->pk)
      pd_parallel_run(s->dpeep ? 1 : parts, rnn_bwd_step_part, &job);
    else
      cell->bwd_float(s);
  }
  return false;
}
static void rnn_steps_fwd_double(const pd_rnn_cell *cell, pd_rnn_step_double *s, const rnn_walk_double *w) {
  for (int64_t i = 0; i < w->d->Tn; i++) {
    rnn_at_double(w, s, i);
    cell->fwd_double(s);
  }
}
static bool rnn_steps_bwd_double(const pd_rnn_cell *cell, pd_rnn_step_double *s, const rnn_walk_double *w) {
  for (int64_t i = 0; i < w->d->Tn; i++) {
    rnn_at_double(w, s, i);
    cell->bwd_double(s);
  }
  return false;
}

/* Columns split over the pool in blocks of 16 (each column's rows still
 * in order: the same bits on any threads). A bias gradient's sums run
 * while the weight gradients' products wait: on one thread of two they
 * were ~2 % of fashion_lstm_fused's step with the other core idle. */
typedef struct rnn_colsum_job {
  float *out;
  const float *a;
  int64_t rows, n, ld;
} rnn_colsum_job;

static void rnn_colsum_cols(void *arg, int64_t lo, int64_t hi) {
  const rnn_colsum_job *job = arg;
  int64_t j0 = lo * 16, j1 = hi * 16 < job->n ? hi * 16 : job->n;
  memset(job->out + j0, 0, sizeof(float) * (size_t)(j1 - j0));
  rnn_add_rows(job->out + j0, job->a + j0, job->rows, j1 - j0, job->ld);
}

static void rnn_colsum_float(float *restrict out, const float *restrict a, int64_t rows, int64_t n, int64_t ld) {
  rnn_colsum_job job = {out, a, rows, n, ld};
  pd_parallel_for((n + 15) / 16, rnn_copy_grain(rows * 16), rnn_colsum_cols, &job);
}
static void rnn_colsum_double(double *restrict out, const double *restrict a, int64_t rows, int64_t n, int64_t ld) {
  memset(out, 0, sizeof(double) * (size_t)n);
  rnn_sum_rows_double(out, a, rows, n, ld);
}

#ifdef PD_X86
__attribute__((target("avx2"))) static void rnn_bias_avx2(const rnn_bias_float *e, void *cv, int64_t ldc, int64_t rows,
                                                          int64_t c0, int64_t cols) {
  rnn_bias_rows_float(e, cv, ldc, rows, c0, cols);
}
#endif
static void rnn_bias_ep_float(void *arg, void *cv, int64_t ldc, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
  (void)r0;
#ifdef PD_X86
  if (pd_rnn_avx2()) {
    rnn_bias_avx2(arg, cv, ldc, rows, c0, cols);
    return;
  }
#endif
  rnn_bias_rows_float(arg, cv, ldc, rows, c0, cols);
}
static void rnn_bias_ep_double(void *arg, void *cv, int64_t ldc, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
  (void)r0;
  rnn_bias_rows_double(arg, cv, ldc, rows, c0, cols);
}

/* ---- shapes ---- */

static pd_status check_state(pd_ctx *c, int slot, const rnn_dims *d, pd_dtype dt) {
  pd_tensor *t = slot >= 0 ? pd_in(c, slot) : NULL;
  if (!t) return PD_OK;
  if (t->ndim != 3 || t->dims[0] != d->L * d->dirs || !pd_dim_fits(t->dims[1], d->B) || t->dims[2] != d->H ||
      t->dtype != dt) {
    char want[160];
    snprintf(want, sizeof want, "input %s must be %s [layers*directions, batch, hidden] = [%lld, %lld, %lld]",
             c->op->def->inputs[slot].name, pd_dtype_name(dt), (long long)(d->L * d->dirs), (long long)d->B,
             (long long)d->H);
    return pd_ctx_fail_shape(c, c->op->def->inputs[slot].name, pd_ctx_in_name(c, slot, 0), t, want);
  }
  return PD_OK;
}

pd_status pd_rnn_infer(pd_ctx *c) {
  const pd_rnn_cell *cell = rnn_cell_of(c);
  pd_tensor *x = pd_in(c, RNN_X);
  if (x->ndim != 3 || !pd_dtype_is_float(x->dtype))
    return pd_ctx_fail_shape(c, "X", pd_ctx_in_name(c, RNN_X, 0), x,
                             "a sequence is float32 or float64 [batch, time, input]");
  if (x->dims[2] < 0) return pd_ctx_fail_shape(c, "X", pd_ctx_in_name(c, RNN_X, 0), x, "its input size must be known");
  rnn_dims d;
  rnn_dims_of(c, cell, x, &d);
  pd_dtype dt = x->dtype;
  int64_t kd = d.L * d.dirs;
  /* the last layer writes Y as it goes, while a bidirectional one's second
   * direction has yet to read its weights (an op called without variable
   * names, as the unit tests call it, has none to compare) */
  const int weights[] = {RNN_W, RNN_R, cell->in_p, cell->in_wl};
  const char *yname = pd_ctx_out_name(c, RNN_Y, 0);
  for (int i = 0; i < PD_LEN(weights) && yname && *yname; i++)
    if (weights[i] >= 0 && pd_in(c, weights[i]) && !strcmp(pd_ctx_in_name(c, weights[i], 0), yname))
      return pd_ctx_fail(c, PD_ERR_INPUT, "output Y is \"%s\", the variable of input %s: give Y a variable of its own",
                         yname, c->op->def->inputs[weights[i]].name);
  pd_tensor *wl = cell->in_wl >= 0 ? pd_in(c, cell->in_wl) : NULL;
  if (d.L > 1 && !wl)
    return pd_ctx_fail(c, PD_ERR_INPUT, "num_layers is %lld: give input WL, the weights of layers 1 and up",
                       (long long)d.L);
  if (d.L == 1 && wl)
    return pd_ctx_fail(c, PD_ERR_INPUT, "input WL (\"%s\") holds the weights of layers 1 and up, but num_layers is 1",
                       pd_ctx_in_name(c, cell->in_wl, 0));
  pd_status st = pd_ctx_param_shape(c, RNN_W, dt, 3, (int64_t[]){d.dirs, d.GH, d.I});
  if (!st) st = pd_ctx_param_shape(c, RNN_R, dt, 3, (int64_t[]){kd, d.GH, d.H});
  if (!st) st = pd_ctx_param_shape(c, RNN_B, dt, 2, (int64_t[]){kd, 2 * d.GH});
  if (!st && wl) st = pd_ctx_param_shape(c, cell->in_wl, dt, 3, (int64_t[]){(d.L - 1) * d.dirs, d.GH, d.DH});
  if (!st && cell->in_p >= 0) st = pd_ctx_param_shape(c, cell->in_p, dt, 2, (int64_t[]){kd, 3 * d.H});
  if (!st) st = check_state(c, RNN_H0, &d, dt);
  if (!st) st = check_state(c, cell->in_c0, &d, dt);
  if (st) return st;
  pd_tensor *len = pd_in(c, RNN_LENGTHS);
  if (len && (len->dtype != PD_I64 || len->ndim != 1 || !pd_dim_fits(len->dims[0], d.B)))
    return pd_ctx_fail_shape(c, "Lengths", pd_ctx_in_name(c, RNN_LENGTHS, 0), len, "lengths are int64 [batch]");
  if ((st = pd_ctx_set_shape(c, pd_out(c, RNN_Y), dt, 3, (int64_t[]){d.B, d.Tn, d.DH}))) return st;
  int64_t sdims[3] = {kd, d.B, d.H};
  if (pd_out(c, RNN_HT) && (st = pd_ctx_set_shape(c, pd_out(c, RNN_HT), dt, 3, sdims))) return st;
  if (cell->out_ct >= 0 && pd_out(c, cell->out_ct) && (st = pd_ctx_set_shape(c, pd_out(c, cell->out_ct), dt, 3, sdims)))
    return st;
  /* Reserve: per row of the batch (every part of it has B rows) */
  rnn_dims one = d;
  one.B = 1;
  int64_t per_row = d.Tn < 0 ? -1 : rnn_off_g(&one, kd);
  pd_tensor *res = pd_out(c, cell->out_reserve);
  if (res && (st = pd_ctx_set_shape(c, res, dt, 2, (int64_t[]){d.B, per_row}))) return st;
  return PD_OK;
}

/* ---- kernels ---- */

static pd_status prepare(pd_ctx *c, const pd_rnn_cell *cell, rnn_dims *d, int lengths_slot) {
  pd_tensor *x = pd_in(c, RNN_X);
  rnn_dims_of(c, cell, x, d);
  const pd_op_def *fwd = c->op->fwd >= 0 ? pd_op_forward_def(c->op->def) : c->op->def;
  d->n_in = fwd->n_inputs, d->n_out = fwd->n_outputs;
  if (d->Tn < 1) return pd_ctx_fail(c, PD_ERR_INPUT, "X \"%s\" has no time steps", pd_ctx_in_name(c, RNN_X, 0));
  pd_tensor *len_t = pd_in(c, lengths_slot);
  d->len = len_t ? PD_DATA(len_t, int64_t) : NULL;
  d->sorted = true;
  for (int64_t b = 0; d->len && b < d->B; b++) {
    if (d->len[b] < 1 || d->len[b] > d->Tn) {
      pd_status st =
          pd_ctx_fail(c, PD_ERR_INPUT, "Lengths \"%s\" row %lld is %lld; a length is from 1 to the %lld steps of X",
                      pd_ctx_in_name(c, lengths_slot, 0), (long long)b, (long long)d->len[b], (long long)d->Tn);
      c->err->row = b; /* the trainer names the data file's row */
      return st;
    }
    if (b && d->len[b] > d->len[b - 1]) d->sorted = false;
  }
  return PD_OK;
}

pd_status pd_rnn_forward(pd_ctx *c) {
  const pd_rnn_cell *cell = rnn_cell_of(c);
  rnn_dims d;
  pd_status st = prepare(c, cell, &d, RNN_LENGTHS);
  if (st) return st;
  if (!pd_out(c, cell->out_reserve))
    return pd_ctx_fail(c, PD_ERR_INPUT, "output Reserve is missing (leave it out and it is named for you)");
  return pd_in(c, RNN_X)->dtype == PD_F64 ? rnn_forward_double(c, cell, &d) : rnn_forward_float(c, cell, &d);
}

pd_status pd_rnn_backward(pd_ctx *c) {
  const pd_rnn_cell *cell = rnn_cell_of(c);
  rnn_dims d;
  pd_status st = prepare(c, cell, &d, RNN_LENGTHS);
  if (st) return st;
  return pd_in(c, RNN_X)->dtype == PD_F64 ? rnn_backward_double(c, cell, &d) : rnn_backward_float(c, cell, &d);
}

pd_dtype pd_rnn_key_dtype(pd_ctx *c) { return pd_in(c, RNN_X) ? pd_in(c, RNN_X)->dtype : PD_F32; }

/* A step's products and the projection: 2 (I + H) G H per row and step and
 * direction on layer 0 (DH in place of I above it). */
static double fwd_flops(pd_ctx *c) {
  const pd_rnn_cell *cell = rnn_cell_of(c);
  rnn_dims d;
  rnn_dims_of(c, cell, pd_in(c, RNN_X), &d);
  if (d.B < 0 || d.Tn < 0) return 0;
  double per = 2.0 * (double)d.GH * (double)(d.I + d.H) + (double)(d.L - 1) * 2.0 * (double)d.GH * (double)(d.DH + d.H);
  return per * (double)d.B * (double)d.Tn * (double)d.dirs;
}
double pd_rnn_flops(pd_ctx *c) { return fwd_flops(c); }
double pd_rnn_grad_flops(pd_ctx *c) { return 2 * fwd_flops(c); }
