/* lstm.c — a whole LSTM (layers, directions, lengths) as one op:
 *   i = sigmoid(x Wi^T + h Ri^T + Pi * c_prev + b)   f likewise with Pf
 *   g = tanh(x Wg^T + h Rg^T + b)                    c = f * c_prev + i * g
 *   o = sigmoid(x Wo^T + h Ro^T + Po * c + b)        h = o * tanh(c)
 * (b: Wb + Rb of the gate). The driver is rnn_core.c; this file is the
 * cell (lstm_t.h) and the slots. Gate layouts: docs/netdesc.md. */
/* The gate pass's clamps and selects vectorise only where gcc may
 * if-convert a float comparison (nothing here reads the FP exception flags). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <string.h>

#include "base/arch.h"
#include "core/op.h"
#include "cpu/blas.h"
#include "cpu/parallel.h"
#include "kmath.h"
#include "rnn_simd.h"
#include "rnn_core.h"

enum { C0 = RNN_H0 + 1, P, WL, N_IN };
enum { CT = RNN_HT + 1, RESERVE, N_OUT };

static const pd_slot_def inputs[] = {
    [RNN_X] = {"X", "the sequences [batch, time, input]", 0},
    [RNN_W] = {"W", "layer 0's input weights [directions, 4*hidden, input], gates i f g o", PD_SLOT_PARAM},
    [RNN_R] = {"R", "recurrent weights [layers*directions, 4*hidden, hidden]", PD_SLOT_PARAM},
    [RNN_B] = {"B", "biases [layers*directions, 8*hidden]: Wb then Rb; left out: none",
               PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
    [RNN_LENGTHS] = {"Lengths", "int64 [batch]: each row's steps, 1 to time (left out: all)",
                     PD_SLOT_DISPENSABLE | PD_SLOT_NO_GRAD},
    [RNN_H0] = {"H0", "initial h [layers*directions, batch, hidden] (left out: zeros)", PD_SLOT_DISPENSABLE},
    [C0] = {"C0", "initial c [layers*directions, batch, hidden] (left out: zeros)", PD_SLOT_DISPENSABLE},
    [P] = {"P", "peepholes [layers*directions, 3*hidden], i o f (ONNX's); left out: none",
           PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
    [WL] = {"WL", "the input weights of layers 1 and up [(layers-1)*directions, 4*hidden, directions*hidden]",
            PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
};
static const pd_slot_def outputs[] = {
    [RNN_Y] = {"Y", "the last layer's h at every step [batch, time, directions*hidden], 0 past a row's length", 0},
    [RNN_HT] = {"HT", "final h [layers*directions, batch, hidden] (at each row's last step)", PD_SLOT_DISPENSABLE},
    [CT] = {"CT", "final c [layers*directions, batch, hidden]", PD_SLOT_DISPENSABLE},
    [RESERVE] = {"Reserve", "the values kept for the gradient (named <Y>@STEPS when left out)",
                 PD_SLOT_DISPENSABLE | PD_SLOT_STEPS},
};
static const pd_attr_def attrs[] = {PD_RNN_COMMON_ATTRS};

#define T float
#include "lstm_t.h"
#undef T
#define T double
#include "lstm_t.h"
#undef T

/* ---- float steps on packed R (rnn_core.h, pd_rnn_packed) ---- */

/* Units j0 .. j1-1 of a row past its length (forward): h and c carried,
 * y 0 (pd_rnn_frozen_float's, for one block of units). */
static inline void lstm_frozen_cols(pd_rnn_step_float *s, int64_t r, int64_t j0, int64_t j1) {
  const int64_t H = s->hidden;
  for (int64_t j = j0; j < j1; j++)
    s->h[r * H + j] = s->hp[r * H + j], s->c[r * H + j] = s->cp[r * H + j], s->y[r * s->ldy + j] = 0;
}

#ifdef PD_X86
#define T v8
#include "lstm_simd_t.h"
#undef T
#define T v16
#include "lstm_simd_t.h"
#undef T

/* lstm_row without peepholes on vectors: 16 units at a time where the CPU
 * has AVX-512 (wide), then 8, the rest as lstm_row. */
__attribute__((target("avx2,fma"))) static void lstm_row_avx2(float *restrict g, float *restrict h, float *restrict c,
                                                              float *restrict y, const float *restrict cp, float bound,
                                                              int64_t H, int64_t j0, int64_t j1, bool wide) {
  int64_t j = wide ? lstm_cols_v16(g, h, c, y, cp, bound, H, j0, j1) : j0;
  j = lstm_cols_v8(g, h, c, y, cp, bound, H, j, j1);
  if (j < j1) lstm_row_float(g, h, c, y, cp, NULL, bound, H, j, j1, false);
}

/* The forward gate pass of units j0 .. j1-1 of every row of a packed step
 * without peepholes. A block's c, h and y are a line (16 units) of each
 * row, 512 bytes or more from the previous row's, in memory this step has
 * not touched yet: fetched 4 rows ahead, the pass takes 4.7 µs a block of
 * 64 rows on Zen 3, against 6.7 waiting for each line (fashion_lstm_fused). */
__attribute__((target("avx2,fma"))) static void lstm_rows_avx2(pd_rnn_step_float *s, int64_t j0, int64_t j1) {
  const int64_t H = s->hidden, GH = s->gh;
  const bool wide = pd_rnn_avx512();
  for (int64_t r = 0; r < s->batch; r++) {
    float *g = s->g + r * GH, *h = s->h + r * H, *c = s->c + r * H, *y = s->y + r * s->ldy;
    const float *cp = s->cp + r * H;
    if (!pd_rnn_active_float(s, r)) {
      lstm_frozen_cols(s, r, j0, j1);
      continue;
    }
    if (r + 4 < s->batch) { /* see above */
      _mm_prefetch((const char *)(c + 4 * H + j0), _MM_HINT_T0);
      _mm_prefetch((const char *)(h + 4 * H + j0), _MM_HINT_T0);
      _mm_prefetch((const char *)(y + 4 * s->ldy + j0), _MM_HINT_T0);
      _mm_prefetch((const char *)(cp + 4 * H + j0), _MM_HINT_T0);
    }
    lstm_row_avx2(g, h, c, y, cp, s->bound, H, j0, j1, wide);
  }
}

/* lstm_bwd_row without peepholes on vectors, 16 units at a time where the
 * CPU has AVX-512, then 8, the last units as lstm_bwd_row. */
__attribute__((target("avx2,fma"))) static void lstm_bwd_row_avx2(const float *restrict g, const float *restrict c,
                                                                  const float *restrict cp, const float *restrict dy,
                                                                  float *restrict dg, float *restrict dh,
                                                                  float *restrict dc, const float *bounds, int64_t H,
                                                                  int64_t GH, int64_t ldy, bool clip, bool wide) {
  int64_t j = wide ? lstm_bwd_cols_v16(g, c, cp, dy, dg, dh, dc, bounds, H, GH, ldy, 0, clip) : 0;
  j = lstm_bwd_cols_v8(g, c, cp, dy, dg, dh, dc, bounds, H, GH, ldy, j, clip);
  if (j < H) { /* the last units: lstm_bwd_row on shifted views (it walks 0..H-1 of the gate blocks it is given) */
    const int64_t n = H - j;
    float tg[4 * 8], tdg[4 * 8];
    for (int q = 0; q < 4; q++)
      for (int64_t u = 0; u < n; u++) tg[q * n + u] = g[q * H + j + u];
    lstm_bwd_row_float(tg, c + j, cp + j, dy + j, tdg, dh + j, dc + j, NULL, NULL, bounds, n, false, false);
    for (int q = 0; q < 4; q++)
      for (int64_t u = 0; u < n; u++) dg[q * H + j + u] = tdg[q * n + u];
  }
}
#endif

/* Forward (the cell's fwd_packed), the hidden blocks [hb0, hb1): each
 * block's G gate panels times h_prev added to the projection in g, then
 * the block's gate pass, h also written packed for the next step's
 * product. A block's columns are its part's alone, so one pass over the
 * pool a step (rnn_core.c). */
static void lstm_fwd_packed(pd_rnn_step_float *s, int64_t hb0, int64_t hb1) {
  const pd_rnn_packed *pk = s->pk;
  const int64_t H = s->hidden, GH = s->gh, nr = pk->uk.nr, nact = s->nact;
  const float *a = pk->a[s->cur];
  /* part 0 times its products for the profile (the parts run side by side) */
  bool timed = hb0 == 0 && pd_blas_profiling();
  double spent = 0;
  for (int64_t hb = hb0; hb < hb1; hb++) {
    int64_t j0 = hb * nr, j1 = j0 + nr < H ? j0 + nr : H;
    double t0 = timed ? pd_blas_now() : 0;
    for (int64_t q = 0; q < 4; q += 2) /* the gates two at a time (pd_rnn_products2) */
      pd_rnn_products2(pk, 0, pk->npan, nact, j1 - j0, H, a, pk->b + (hb * 4 + q) * pk->bs, s->g + q * H + j0,
                       pk->b + (hb * 4 + q + 1) * pk->bs, s->g + (q + 1) * H + j0, 1, GH);
    if (timed) spent += pd_blas_now() - t0;
#ifdef PD_X86
    if (!s->peep && pd_rnn_avx2())
      lstm_rows_avx2(s, j0, j1);
    else
#endif
      for (int64_t b = 0; b < s->batch; b++) {
        float *g = s->g + b * GH, *h = s->h + b * H, *c = s->c + b * H, *y = s->y + b * s->ldy;
        const float *cp = s->cp + b * H;
        if (!pd_rnn_active_float(s, b))
          lstm_frozen_cols(s, b, j0, j1);
        else if (s->peep)
          lstm_row_float(g, h, c, y, cp, s->peep, s->bound, H, j0, j1, true);
        else
          lstm_row_float(g, h, c, y, cp, s->hp, s->bound, H, j0, j1, false);
      }
    pd_rnn_packed_h(s, j0, j1);
  }
  if (timed) pd_blas_profile_add(spent, 2.0 * (double)nact * (double)GH * (double)H);
}

/* Backward rows with the vector gate pass where there are no peepholes (the
 * scalar lstm_bwd_rows otherwise). */
static void lstm_bwd_rows_fast(void *arg, int64_t lo, int64_t hi) {
#ifdef PD_X86
  pd_rnn_step_float *s = arg;
  if (!s->peep && pd_rnn_avx2()) {
    const int64_t H = s->hidden, GH = s->gh;
    const float bounds[4] = {s->clo_s, s->chi_s, s->clo_t, s->chi_t};
    const bool wide = pd_rnn_avx512();
    for (int64_t b = lo; b < hi; b++)
      if (!pd_rnn_active_float(s, b))
        pd_rnn_frozen_grad_float(s, b);
      else
        lstm_bwd_row_avx2(s->g + b * GH, s->c + b * H, s->cp + b * H, s->dy + b * s->ldy, s->dg + b * GH, s->dh + b * H,
                          s->dc + b * H, bounds, H, b + 1 < s->batch ? GH : 0, b + 1 < s->batch ? s->ldy : 0,
                          s->clip > 0, wide);
    return;
  }
#endif
  lstm_bwd_rows_float(arg, lo, hi);
}

static void lstm_bwd_fast(pd_rnn_step_float *s) { lstm_bwd_with_float(s, lstm_bwd_rows_fast); }

/* Backward (the cell's bwd_packed), the batch panels [lo, hi): the gate
 * gradients, also written packed for the product dG R. */
static void lstm_bwd_packed(pd_rnn_step_float *s, int64_t lo, int64_t hi) {
  const pd_rnn_packed *pk = s->pk;
  const int64_t GH = s->gh;
  for (int64_t pn = lo; pn < hi; pn++) {
    int64_t r0 = pd_rnn_panel_r0(pk, pn), ph = pd_rnn_panel_h(pk, pn), rows = pd_rnn_panel_rows(pk, pn, s->batch);
    lstm_bwd_rows_fast(s, r0, r0 + rows);
    pd_rnn_pack(pk->a[0] + pn * pk->as, ph, s->dg + r0 * GH, GH, rows, GH);
  }
}

/* Forward on R unpacked (fewer steps than packing pays for: `generate`'s
 * one step a token): the product, then lstm_fwd_rows with the gate pass of
 * the packed path, so a step's values do not depend on the path taken. */
static void lstm_fwd_rows_fast(void *arg, int64_t lo, int64_t hi) {
#ifdef PD_X86
  pd_rnn_step_float *s = arg;
  const int64_t H = s->hidden, GH = s->gh;
  if (!s->peep && pd_rnn_avx2()) {
    const bool wide = pd_rnn_avx512();
    for (int64_t b = lo; b < hi; b++)
      if (!pd_rnn_active_float(s, b))
        pd_rnn_frozen_float(s, b);
      else
        lstm_row_avx2(s->g + b * GH, s->h + b * H, s->c + b * H, s->y + b * s->ldy, s->cp + b * H, s->bound, H, 0, H,
                      wide);
    return;
  }
#endif
  lstm_fwd_rows_float(arg, lo, hi);
}

static void lstm_fwd_fast(pd_rnn_step_float *s) { lstm_fwd_with_float(s, lstm_fwd_rows_fast); }

static const pd_rnn_cell cell = {
    .gates = 4,
    .has_c = true,
    .in_c0 = C0,
    .in_p = P,
    .in_wl = WL,
    .out_ct = CT,
    .out_reserve = RESERVE,
    .fwd_float = lstm_fwd_fast,
    .fwd_double = lstm_fwd_double,
    .bwd_float = lstm_bwd_fast,
    .bwd_double = lstm_bwd_double,
    .fwd_packed = lstm_fwd_packed,
    .bwd_packed = lstm_bwd_packed,
    .packed_variants = 1 << 0,
};

/* left out after X: the weights made as <Y>.w, <Y>.r, <Y>.b (one layer:
 * WL, the weights of layers 1 and up, is named in the op's inputs) */
static const char *const fill_in[N_IN] = {[RNN_W] = "w", [RNN_R] = "r", [RNN_B] = "b"};
static const double param_init[N_IN] = {[RNN_X] = NAN,  [RNN_W] = NAN, [RNN_R] = NAN, [RNN_B] = 0, [RNN_LENGTHS] = NAN,
                                        [RNN_H0] = NAN, [C0] = NAN,    [P] = 0,       [WL] = NAN};
static const pd_kernel kernels[] = {
    PD_CPU_F32(pd_rnn_forward),
    PD_CPU_F64(pd_rnn_forward),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_rnn_forward),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(pd_rnn_backward),
    PD_CPU_F64(pd_rnn_backward),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_rnn_backward),
#endif
};

const pd_op_def pd_op_lstm = {
    .type = "lstm",
    .comment = "A whole LSTM over sequences [batch, time, input]: layers, directions, per-row lengths, "
               "initial and final states, optional peepholes and clip (docs/netdesc.md, Fused recurrent ops).",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = pd_rnn_infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .kernel_dtype = pd_rnn_key_dtype,
    .flops = pd_rnn_flops,
    .grad_flops = pd_rnn_grad_flops,
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
    .data = &cell,
    .param_init = param_init,
    .fill_in = fill_in,
};
