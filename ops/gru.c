/* gru.c — a whole GRU as one op (ONNX's and PyTorch's formulas):
 *   r = sigmoid(x Wr^T + h Rr^T + Wbr + Rbr)   z likewise
 *   n = tanh(x Wn^T + Wbn + r * (h Rn^T + Rbn))    linear_before_reset 1 (PyTorch's)
 *   n = tanh(x Wn^T + Wbn + (r * h) Rn^T + Rbn)    linear_before_reset 0 (ONNX's default)
 *   h = (1 - z) * n + z * h_prev
 * over layers, directions and per-row lengths. The driver is rnn_core.c;
 * this file is the cell (gru_t.h) and the slots. docs/netdesc.md. */
/* The gate pass's clamps and selects vectorise only where gcc may
 * if-convert a float comparison (nothing here reads the FP exception flags). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <string.h>

#include "core/op.h"
#include "cpu/blas.h"
#include "cpu/parallel.h"
#include "kmath.h"
#include "rnn_simd.h"
#include "rnn_core.h"

enum { WL = RNN_H0 + 1, N_IN };
enum { RESERVE = RNN_HT + 1, N_OUT };
enum { A_LBR = RNN_A_OWN };

static const pd_slot_def inputs[] = {
    [RNN_X] = {"X", "the sequences [batch, time, input]", 0},
    [RNN_W] = {"W", "layer 0's input weights [directions, 3*hidden, input], gates r z n", PD_SLOT_PARAM},
    [RNN_R] = {"R", "recurrent weights [layers*directions, 3*hidden, hidden]", PD_SLOT_PARAM},
    [RNN_B] = {"B", "biases [layers*directions, 6*hidden]: Wb then Rb; left out: none",
               PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
    [RNN_LENGTHS] = {"Lengths", "int64 [batch]: each row's steps, 1 to time (left out: all)",
                     PD_SLOT_DISPENSABLE | PD_SLOT_NO_GRAD},
    [RNN_H0] = {"H0", "initial h [layers*directions, batch, hidden] (left out: zeros)", PD_SLOT_DISPENSABLE},
    [WL] = {"WL", "the input weights of layers 1 and up [(layers-1)*directions, 3*hidden, directions*hidden]",
            PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
};
static const pd_slot_def outputs[] = {
    [RNN_Y] = {"Y", "the last layer's h at every step [batch, time, directions*hidden], 0 past a row's length", 0},
    [RNN_HT] = {"HT", "final h [layers*directions, batch, hidden] (at each row's last step)", PD_SLOT_DISPENSABLE},
    [RESERVE] = {"Reserve", "the values kept for the gradient (named <Y>@STEPS when left out)",
                 PD_SLOT_DISPENSABLE | PD_SLOT_STEPS},
};
static const pd_attr_def attrs[] = {
    PD_RNN_COMMON_ATTRS,
    [A_LBR] = {"linear_before_reset", "1: r multiplies h R_n^T + Rb_n (PyTorch); 0: r multiplies h (ONNX's default)",
               PD_ATTR_INT, .def = "i: 0", .min_kind = PD_GE, .min = 0, .max_kind = PD_GE, .max = 1},
};

#define T float
#include "gru_t.h"
#undef T
#define T double
#include "gru_t.h"
#undef T

/* ---- float: the gate passes 8 units at a time, steps on packed R ---- */

#ifdef PD_X86
#define T v8
#include "gru_simd_t.h"
#undef T
#define T v16
#include "gru_simd_t.h"
#undef T

/* The rows on vectors: 16 units at a time where the CPU has AVX-512
 * (wide), then 8, the rest as gru_t.h's rows. */
__attribute__((target("avx2,fma"))) static void gru_rz_row_avx2(float *restrict g, float *restrict ex,
                                                                const float *restrict hp, const float *rbn, float bound,
                                                                int64_t H, int64_t j0, int64_t j1, int variant,
                                                                bool wide) {
  int64_t j = wide ? gru_rz_cols_v16(g, ex, hp, rbn, bound, H, j0, j1, variant) : j0;
  j = gru_rz_cols_v8(g, ex, hp, rbn, bound, H, j, j1, variant);
  if (j < j1) {
    if (variant)
      gru_rz_row_float(g, ex, hp, rbn, bound, H, j, j1, 1);
    else
      gru_rz_row_float(g, ex, hp, rbn, bound, H, j, j1, 0);
  }
}

__attribute__((target("avx2,fma"))) static void gru_h_row_avx2(float *restrict g, float *restrict h, float *restrict y,
                                                               const float *restrict hp, float bound, int64_t H,
                                                               int64_t j0, int64_t j1, bool act_n, bool wide) {
  int64_t j = wide ? gru_h_cols_v16(g, h, y, hp, bound, H, j0, j1, act_n) : j0;
  j = gru_h_cols_v8(g, h, y, hp, bound, H, j, j1, act_n);
  if (j < j1) {
    if (act_n)
      gru_h_row_float(g, h, y, hp, bound, H, j, j1, true);
    else
      gru_h_row_float(g, h, y, hp, bound, H, j, j1, false);
  }
}

__attribute__((target("avx2,fma"))) static void gru_bwd_row_avx2(const float *restrict g, const float *restrict hp,
                                                                 const float *restrict ex, const float *restrict dy,
                                                                 float *restrict dg, float *restrict dh,
                                                                 float *restrict dex, const float *bounds, int64_t H,
                                                                 int variant, bool clip, bool wide) {
  int64_t j = wide ? gru_bwd_cols_v16(g, hp, ex, dy, dg, dh, dex, bounds, H, 0, variant, clip) : 0;
  j = gru_bwd_cols_v8(g, hp, ex, dy, dg, dh, dex, bounds, H, j, variant, clip);
  if (j < H) {
    if (variant)
      gru_bwd_row_float(g, hp, ex, dy, dg, dh, dex, bounds, H, j, H, 1);
    else
      gru_bwd_row_float(g, hp, ex, dy, dg, dh, dex, bounds, H, j, H, 0);
  }
}
#endif

/* The float gate passes: gru_t.h's rows with the AVX2 row functions where
 * the CPU has them. */
static void gru_fwd_rz_fast(void *arg, int64_t lo, int64_t hi) {
#ifdef PD_X86
  pd_rnn_step_float *s = arg;
  if (pd_rnn_avx2()) {
    const bool wide = pd_rnn_avx512();
    const int64_t H = s->hidden, GH = s->gh;
    const float *rbn = s->rb ? s->rb + 2 * H : NULL;
    for (int64_t b = lo; b < hi; b++)
      if (!pd_rnn_active_float(s, b))
        memset(s->ex + b * H, 0, sizeof(float) * (size_t)H);
      else
        gru_rz_row_avx2(s->g + b * GH, s->ex + b * H, s->hp + b * H, rbn, s->bound, H, 0, H, s->variant, wide);
    return;
  }
#endif
  gru_fwd_rz_float(arg, lo, hi);
}

static void gru_fwd_h_fast(void *arg, int64_t lo, int64_t hi) {
#ifdef PD_X86
  pd_rnn_step_float *s = arg;
  if (pd_rnn_avx2()) {
    const bool wide = pd_rnn_avx512();
    const int64_t H = s->hidden, GH = s->gh;
    for (int64_t b = lo; b < hi; b++)
      if (!pd_rnn_active_float(s, b))
        pd_rnn_frozen_float(s, b);
      else
        gru_h_row_avx2(s->g + b * GH, s->h + b * H, s->y + b * s->ldy, s->hp + b * H, s->bound, H, 0, H, !s->variant,
                       wide);
    return;
  }
#endif
  gru_fwd_h_float(arg, lo, hi);
}

static void gru_bwd_zn_fast(void *arg, int64_t lo, int64_t hi) {
#ifdef PD_X86
  pd_rnn_step_float *s = arg;
  if (pd_rnn_avx2()) {
    const bool wide = pd_rnn_avx512();
    const int64_t H = s->hidden, GH = s->gh;
    const float bounds[4] = {s->clo_s, s->chi_s, s->clo_t, s->chi_t};
    for (int64_t b = lo; b < hi; b++)
      if (!pd_rnn_active_float(s, b))
        pd_rnn_frozen_grad_float(s, b);
      else
        gru_bwd_row_avx2(s->g + b * GH, s->hp + b * H, s->ex + b * H, s->dy + b * s->ldy, s->dg + b * GH, s->dh + b * H,
                         s->dex + b * H, bounds, H, s->variant, s->clip > 0, wide);
    return;
  }
#endif
  gru_bwd_zn_float(arg, lo, hi);
}

static void gru_fwd_fast(pd_rnn_step_float *s) { gru_fwd_with_float(s, gru_fwd_rz_fast, gru_fwd_h_fast); }
static void gru_bwd_fast(pd_rnn_step_float *s) { gru_bwd_with_float(s, gru_bwd_zn_fast); }

/* Forward on packed R (the cell's fwd_packed; linear_before_reset only:
 * without it n's product needs every unit's r first), the hidden blocks
 * [hb0, hb1): each block's r and z panels times h_prev added to the
 * projection in g, its n panel into ex, then the block's gate pass, h also
 * written packed for the next step's product. A block's columns are its
 * part's alone, so one pass over the pool a step (rnn_core.c). */
static void gru_fwd_packed(pd_rnn_step_float *s, int64_t hb0, int64_t hb1) {
  const pd_rnn_packed *pk = s->pk;
  const int64_t H = s->hidden, GH = s->gh, nr = pk->uk.nr, nact = s->nact;
  const float *a = pk->a[s->cur], *rbn = s->rb ? s->rb + 2 * H : NULL;
  const bool avx2 = pd_rnn_avx2(), wide = avx2 && pd_rnn_avx512();
  /* part 0 times its products for the profile (the parts run side by side) */
  bool timed = hb0 == 0 && pd_blas_profiling();
  double spent = 0;
  for (int64_t hb = hb0; hb < hb1; hb++) {
    int64_t j0 = hb * nr, j1 = j0 + nr < H ? j0 + nr : H;
    /* n's projection, which no product here touches, from memory while
     * the products run (the gate pass waited on it) */
    for (int64_t b = 0; b < s->batch; b++) {
      const char *gn = (const char *)(s->g + b * GH + 2 * H + j0);
      __builtin_prefetch(gn);
      __builtin_prefetch(gn + sizeof(float) * (size_t)(j1 - j0) - 1);
    }
    double t0 = timed ? pd_blas_now() : 0;
    /* r and z together (pd_rnn_products2), then n's into ex */
    const float *bp = pk->b + hb * 3 * pk->bs;
    pd_rnn_products2(pk, 0, pk->npan, nact, j1 - j0, H, a, bp, s->g + j0, bp + pk->bs, s->g + H + j0, 1, GH);
    for (int64_t p = 0; p < pk->npan && pd_rnn_panel_r0(pk, p) < nact; p++) {
      int64_t r0 = pd_rnn_panel_r0(pk, p), m = pd_rnn_panel_rows(pk, p, nact);
      pd_rnn_panel_product(pk, p, m, j1 - j0, H, a + p * pk->as, bp + 2 * pk->bs, 0, s->ex + r0 * H + j0, H);
    }
    if (timed) spent += pd_blas_now() - t0;
    for (int64_t b = 0; b < s->batch; b++) {
      float *g = s->g + b * GH, *h = s->h + b * H, *y = s->y + b * s->ldy, *ex = s->ex + b * H;
      const float *hp = s->hp + b * H;
      if (!pd_rnn_active_float(s, b)) gru_frozen_units_float(s, b, j0, j1);
#ifdef PD_X86
      else if (avx2) {
        gru_rz_row_avx2(g, ex, hp, rbn, s->bound, H, j0, j1, 1, wide);
        gru_h_row_avx2(g, h, y, hp, s->bound, H, j0, j1, false, wide);
      }
#endif
      else {
        gru_rz_row_float(g, ex, hp, rbn, s->bound, H, j0, j1, 1);
        gru_h_row_float(g, h, y, hp, s->bound, H, j0, j1, false);
      }
    }
    pd_rnn_packed_h(s, j0, j1);
  }
  if (timed) pd_blas_profile_add(spent, 2.0 * (double)nact * (double)GH * (double)H);
  (void)avx2, (void)wide;
}

/* Backward on packed R (the cell's bwd_packed; linear_before_reset), the
 * batch panels [lo, hi): the gate gradients, then [dG_r, dG_z, dEx]
 * written packed: with R's rows r z n that is the whole of dh's product,
 * dh += dG_r R_r + dG_z R_z + dEx R_n. */
static void gru_bwd_packed(pd_rnn_step_float *s, int64_t lo, int64_t hi) {
  const pd_rnn_packed *pk = s->pk;
  const int64_t H = s->hidden, GH = s->gh;
  for (int64_t pn = lo; pn < hi; pn++) {
    int64_t r0 = pd_rnn_panel_r0(pk, pn), ph = pd_rnn_panel_h(pk, pn), rows = pd_rnn_panel_rows(pk, pn, s->batch);
    gru_bwd_zn_fast(s, r0, r0 + rows);
    float *ap = pk->a[0] + pn * pk->as;
    pd_rnn_pack(ap, ph, s->dg + r0 * GH, GH, rows, 2 * H);
    pd_rnn_pack(ap + 2 * H * ph, ph, s->dex + r0 * H, H, rows, H);
  }
}

static const pd_rnn_cell cell = {
    .gates = 3,
    .extra = true,
    .split = 2,
    .in_c0 = -1,
    .in_p = -1,
    .in_wl = WL,
    .out_ct = -1,
    .out_reserve = RESERVE,
    .fwd_float = gru_fwd_fast,
    .fwd_double = gru_fwd_double,
    .bwd_float = gru_bwd_fast,
    .bwd_double = gru_bwd_double,
    .fwd_packed = gru_fwd_packed,
    .bwd_packed = gru_bwd_packed,
    .packed_variants = 1 << 1,
};

/* left out after X: the weights made as <Y>.w, <Y>.r, <Y>.b (one layer:
 * WL, the weights of layers 1 and up, is named in the op's inputs) */
static const char *const fill_in[N_IN] = {[RNN_W] = "w", [RNN_R] = "r", [RNN_B] = "b"};
static const double param_init[N_IN] = {
    [RNN_X] = NAN, [RNN_W] = NAN, [RNN_R] = NAN, [RNN_B] = 0, [RNN_LENGTHS] = NAN, [RNN_H0] = NAN, [WL] = NAN};
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

const pd_op_def pd_op_gru = {
    .type = "gru",
    .comment = "A whole GRU over sequences [batch, time, input]: layers, directions, per-row lengths, initial and "
               "final states, linear_before_reset 0 or 1, optional clip (docs/netdesc.md, Fused recurrent ops).",
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
