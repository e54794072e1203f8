/* rnn_core.h — the driver the fused recurrent ops (lstm, gru, rnn) share:
 * layers, directions, lengths, the input projection of all steps as one
 * product, the weight gradients as products after the step loop, and the
 * planned Reserve buffer. An op is its cell (pd_rnn_cell: one step forward
 * and backward) and its slot tables; docs/netdesc.md "Fused recurrent ops"
 * has the formulas and the gate layouts. */
#ifndef PD_OPS_RNN_CORE_H
#define PD_OPS_RNN_CORE_H

#include <stdbool.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "cpu/blas.h"
#include "rnn_layout.h"

extern const char *const pd_rnn_directions[];

/* The cells' exp: in float a polynomial (Cephes' expf: range reduction by
 * ln 2, degree 6, about 1 ulp) the compiler can vectorise, where libm's
 * expf is a call per element; in double libm's exp. A NaN stays NaN. */
static inline float pd_rnn_exp_float(float x) {
  float v = x != x ? 0.0f : x > 88.0f ? 88.0f : x < -88.0f ? -88.0f : x;
  float t = v * 1.44269504088896341f;
  int32_t n = (int32_t)(t + (t >= 0 ? 0.5f : -0.5f));
  float fn = (float)n, r = v - fn * 0.693359375f + fn * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = (n + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return x != x ? x : p * scale;
}
static inline double pd_rnn_exp_double(double x) { return exp(x); }
/* tanh from the same exp in float (its error near 0 is absolute, ~6e-8) */
static inline float pd_rnn_tanh_float(float x) { return 1 - 2 / (1 + pd_rnn_exp_float(2 * x)); }
static inline double pd_rnn_tanh_double(double x) { return tanh(x); }

/* Rows of a step's gate pass a part takes at least on the worker pool
 * (cpu/parallel.h): about 8192 gate values. */
static inline int64_t pd_rnn_row_grain(int64_t gh) { return gh >= 8192 ? 1 : 8192 / gh; }

/* The float fast path of a step's product h R^T (forward) or dG R
 * (backward): R packed once per op call into the panels BLIS's micro-kernel
 * reads (BLIS would pack it anew at every step), the step's left operand
 * packed by the cell as it writes it. Forward panels go hidden block by
 * block, the G gates of a block of nr hidden units one after another, so a
 * part that owns a block has its gates' products and does its gate pass. */
#define PD_RNN_MAX_CHUNKS 8
typedef struct pd_rnn_packed {
  pd_ukr uk;
  int64_t kdim;   /* K: H forward, G H backward */
  int64_t blocks; /* hidden blocks of nr units */
  int64_t as, bs; /* floats from one panel of a, b to the next (kdim * mr, kdim * nr, 64-byte multiples) */
  const float *b; /* packed R: forward blocks * G panels, backward `blocks` panels, each kdim * nr */
  float *a[2];    /* the packed left operand, npan panels `as` apart; forward: h_prev and h in turn
                     (pd_rnn_step_float.cur) */
  /* The batch's rows in panels, in `chunks` runs of consecutive rows
   * (pd_rnn_panels), chunk c from panel chunk[c].p0 and row chunk[c].r0;
   * chunk[chunks] = {npan, batch}. */
  int64_t npan;
  int chunks;
  struct {
    int64_t p0, r0, nmr; /* first panel and row; panels of mr rows, then of 4 */
  } chunk[PD_RNN_MAX_CHUNKS + 1];
} pd_rnn_packed;

/* Lays out pk's panels (uk.mr set) for `batch` rows: `chunks` runs of
 * consecutive rows, as equal as even row counts allow (a backward step on
 * `chunks` parts gives each a run: at batch 64 on 2, 32 rows each where
 * whole panels of 6 gave 30 and 34), each in panels of mr rows, then,
 * where `fours` (pd_rnn_panel_product's 4 x 16 kernel may run), panels of 4
 * where that covers the run with no empty rows (32 = 4 x 6 + 2 x 4) and mr
 * alone would not. Else a run's last panel may hold fewer than mr rows.
 * chunks: 1 to PD_RNN_MAX_CHUNKS, and at most batch / 2. */
void pd_rnn_panels(pd_rnn_packed *pk, int64_t batch, int chunks, bool fours);

/* Panel p's chunk, first row and height. */
static inline int pd_rnn_panel_chunk(const pd_rnn_packed *pk, int64_t p) {
  int c = 0;
  while (c + 1 < pk->chunks && p >= pk->chunk[c + 1].p0) c++;
  return c;
}
static inline int64_t pd_rnn_panel_r0(const pd_rnn_packed *pk, int64_t p) {
  int c = pd_rnn_panel_chunk(pk, p);
  int64_t q = p - pk->chunk[c].p0, nmr = pk->chunk[c].nmr;
  return pk->chunk[c].r0 + (q < nmr ? q * pk->uk.mr : nmr * pk->uk.mr + (q - nmr) * 4);
}
static inline int64_t pd_rnn_panel_h(const pd_rnn_packed *pk, int64_t p) {
  int c = pd_rnn_panel_chunk(pk, p);
  return p - pk->chunk[c].p0 < pk->chunk[c].nmr ? pk->uk.mr : 4;
}
/* Panel p's rows below row n (its height, or fewer in the last panel of
 * the batch or of the rows still running) */
static inline int64_t pd_rnn_panel_rows(const pd_rnn_packed *pk, int64_t p, int64_t n) {
  int64_t r0 = pd_rnn_panel_r0(pk, p), ph = pd_rnn_panel_h(pk, p);
  return n - r0 < ph ? n - r0 : ph;
}

/* c[0 : m, 0 : n] (rows ldc apart) = beta c + A B, A panel p of pk (k deep,
 * m <= its height), B an nr-column panel: BLIS's micro-kernel for a panel of
 * mr rows, our 4 x 16 one for a panel of 4, the same FMAs in the same order
 * per element. */
void pd_rnn_panel_product(const pd_rnn_packed *pk, int64_t p, int64_t m, int64_t n, int64_t k, const float *a,
                          const float *b, float beta, float *c, int64_t ldc);

/* c0 (rows ldc apart) = beta c0 + A B0 and c1 likewise with B1, A the
 * panels [p0, p1) of pk (from a, `as` apart; rows from nact on left
 * out), B0 and B1 panels of n columns: the panels of mr rows as
 * pd_rnn_panel_product's, B0's first, then B1's (each stays in L1 over
 * the panels); a panel of 4 on AVX-512 takes both in one 4 x 32 tile (the
 * same FMAs per element; rnn_panel4x16's 8 chains leave the FMA units no
 * slack: 107 GFLOP/s on a Zen 4 core where this makes 116). c0 and c1
 * point at row 0. */
void pd_rnn_products2(const pd_rnn_packed *pk, int64_t p0, int64_t p1, int64_t nact, int64_t n, int64_t k,
                      const float *a, const float *b0, float *c0, const float *b1, float *c1, float beta, int64_t ldc);

/* Whether the gate passes may use AVX2 and FMA; and AVX-512F as well
 * (rnn_simd.h; PADDLE_RUN_AVX512=off says no). Asked once. */
bool pd_rnn_avx2(void);
bool pd_rnn_avx512(void);

/* Columns [0, n) of rows [0, rows) of src (rows ld apart) into a packed
 * panel of mr rows: dst[k * mr + i] = src[i * ld + k]; rows of the panel
 * past `rows` are left as they are. A full panel of 4, 6 or 8 rows goes 8
 * columns at a time through an 8 x 8 transpose on AVX2. */
void pd_rnn_pack(float *restrict dst, int64_t mr, const float *restrict src, int64_t ld, int64_t rows, int64_t n);

/* One step of one direction of one layer, as a cell sees it. Rows b with
 * len[b] <= p are frozen: their state is carried, their output is 0, their
 * gate gradients are 0 (pd_rnn_frozen_T). */
#define T float
#include "rnn_step_t.h"
#undef T
#define T double
#include "rnn_step_t.h"
#undef T

/* A forward step's new h, units j0 .. j1-1 of every row, packed into
 * pk->a[!s->cur] for the next step's product (the cells' fwd_packed). */
void pd_rnn_packed_h(pd_rnn_step_float *s, int64_t j0, int64_t j1);

/* The op functions the three defs share (def->data is the pd_rnn_cell). */
pd_status pd_rnn_infer(pd_ctx *c);
pd_status pd_rnn_forward(pd_ctx *c);
pd_status pd_rnn_backward(pd_ctx *c);
double pd_rnn_flops(pd_ctx *c);
double pd_rnn_grad_flops(pd_ctx *c);
pd_dtype pd_rnn_key_dtype(pd_ctx *c);

#define PD_RNN_COMMON_ATTRS                                                                                            \
  [RNN_A_HIDDEN] = {"hidden_size",     "H: the size of the hidden (and cell) state",                                   \
                    PD_ATTR_INT,       .required = true,                                                               \
                    .min_kind = PD_GT, .min = 0},                                                                      \
  [RNN_A_LAYERS] = {"num_layers",      "stacked layers; layer l > 0 reads layer l-1's Y",                              \
                    PD_ATTR_INT,       .def = "i: 1",                                                                  \
                    .min_kind = PD_GT, .min = 0},                                                                      \
  [RNN_A_DIRECTION] = {"direction", "forward, reverse or bidirectional (Y holds both, forward first)", PD_ATTR_STRING, \
                       .def = "s: \"forward\"", .one_of = pd_rnn_directions},                                          \
  [RNN_A_CLIP] = {"clip",                                                                                              \
                  "bounds every gate pre-activation to [-clip, clip] (ONNX's clip); 0: none",                          \
                  PD_ATTR_FLOAT,                                                                                       \
                  .def = "f: 0",                                                                                       \
                  .min_kind = PD_GE,                                                                                   \
                  .min = 0}

#endif
