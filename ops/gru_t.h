/* gru_t.h — the GRU cell's step for one element type T (base/tmpl.h);
 * gru.c includes it once for float and once for double. Gates r, z, n
 * (PyTorch's order); the kept value ex is h_prev R_n^T + Rb_n with
 * linear_before_reset (variant 1), r * h_prev without. */

/* One row's r and z, hidden units j0 .. j1-1, from their pre-activations;
 * then with linear_before_reset n (ex, h_prev R_n^T on entry, gains Rb_n,
 * rbn: NULL for none), without it ex = r * h_prev, n's product's input.
 * variant is a constant where it is inlined, so each case's loop
 * vectorises. */
static inline __attribute__((always_inline)) void PD_T(gru_rz_row)(T *restrict g, T *restrict ex, const T *restrict hp,
                                                                   const T *rbn, T bound, int64_t H, int64_t j0,
                                                                   int64_t j1, int variant) {
  for (int64_t j = j0; j < j1; j++) {
    T r = PD_T(pd_rnn_sigmoid)(PD_T(pd_rnn_bound)(g[j], bound));
    T z = PD_T(pd_rnn_sigmoid)(PD_T(pd_rnn_bound)(g[H + j], bound));
    g[j] = r, g[H + j] = z;
    if (variant) {
      T e = ex[j] + (rbn ? rbn[j] : 0);
      ex[j] = e;
      g[2 * H + j] = PD_T(pd_rnn_tanh)(PD_T(pd_rnn_bound)(g[2 * H + j] + r * e, bound));
    } else
      ex[j] = r * hp[j];
  }
}

/* One row's h from z and n, units j0 .. j1-1; act_n: n's activation first
 * (without linear_before_reset, once n's product is in). */
static inline __attribute__((always_inline)) void PD_T(gru_h_row)(T *restrict g, T *restrict h, T *restrict y,
                                                                  const T *restrict hp, T bound, int64_t H, int64_t j0,
                                                                  int64_t j1, bool act_n) {
  for (int64_t j = j0; j < j1; j++) {
    T z = g[H + j], n = g[2 * H + j];
    if (act_n) {
      n = PD_T(pd_rnn_tanh)(PD_T(pd_rnn_bound)(n, bound));
      g[2 * H + j] = n;
    }
    T hv = (1 - z) * n + z * hp[j];
    h[j] = hv, y[j] = hv;
  }
}

/* A row past its length in the forward: what gru_rz_row and gru_h_row
 * leave there (ex 0, h carried, output 0), units j0 .. j1-1. */
static inline void PD_T(gru_frozen_units)(PD_T(pd_rnn_step) * s, int64_t b, int64_t j0, int64_t j1) {
  int64_t H = s->hidden;
  for (int64_t j = j0; j < j1; j++) {
    s->ex[b * H + j] = 0;
    s->h[b * H + j] = s->hp[b * H + j];
    s->y[b * s->ldy + j] = 0;
  }
}

static void PD_T(gru_fwd_rz)(void *arg, int64_t lo, int64_t hi) {
  PD_T(pd_rnn_step) *s = arg;
  int64_t H = s->hidden, GH = s->gh;
  const T *rbn = s->rb ? s->rb + 2 * H : NULL;
  for (int64_t b = lo; b < hi; b++) {
    T *g = s->g + b * GH, *ex = s->ex + b * H;
    if (!PD_T(pd_rnn_active)(s, b))
      for (int64_t j = 0; j < H; j++) ex[j] = 0;
    else if (s->variant)
      PD_T(gru_rz_row)(g, ex, s->hp + b * H, rbn, s->bound, H, 0, H, 1);
    else
      PD_T(gru_rz_row)(g, ex, s->hp + b * H, rbn, s->bound, H, 0, H, 0);
  }
}

static void PD_T(gru_fwd_h)(void *arg, int64_t lo, int64_t hi) {
  PD_T(pd_rnn_step) *s = arg;
  int64_t H = s->hidden, GH = s->gh;
  for (int64_t b = lo; b < hi; b++) {
    T *g = s->g + b * GH, *h = s->h + b * H, *y = s->y + b * s->ldy;
    if (!PD_T(pd_rnn_active)(s, b))
      PD_T(pd_rnn_frozen)(s, b);
    else if (s->variant)
      PD_T(gru_h_row)(g, h, y, s->hp + b * H, s->bound, H, 0, H, false);
    else
      PD_T(gru_h_row)(g, h, y, s->hp + b * H, s->bound, H, 0, H, true);
  }
}

/* A step on R unpacked: the products, and the gate passes `rz` and `hrows`
 * (float's may be gru.c's vectorised ones) over the rows on the pool. */
static inline void PD_T(gru_fwd_with)(PD_T(pd_rnn_step) * s, pd_range_fn rz, pd_range_fn hrows) {
  int64_t H = s->hidden, GH = s->gh, grain = pd_rnn_row_grain(GH);
  const T *rn = s->r + 2 * H * H;
  PD_T(pd_gemm)(false, true, s->nact, 2 * H, H, 1, s->hp, H, s->r, H, 1, s->g, GH);
  if (s->variant) PD_T(pd_gemm)(false, true, s->nact, H, H, 1, s->hp, H, rn, H, 0, s->ex, H);
  pd_parallel_for(s->batch, grain, rz, s);
  if (!s->variant) /* n's product needs r first */
    PD_T(pd_gemm)(false, true, s->nact, H, H, 1, s->ex, H, rn, H, 1, s->g + 2 * H, GH);
  pd_parallel_for(s->batch, grain, hrows, s);
}
static inline void PD_T(gru_fwd)(PD_T(pd_rnn_step) * s) { PD_T(gru_fwd_with)(s, PD_T(gru_fwd_rz), PD_T(gru_fwd_h)); }

/* One row's gate gradients but r's without linear_before_reset (gru_bwd_r
 * then), units j0 .. j1-1: dh from step p+1 in, its share through z out
 * (the products add the rest); dex, the gradient of ex (0 without
 * linear_before_reset). As gru_rz_row, per case of variant. */
static inline __attribute__((always_inline)) void
PD_T(gru_bwd_row)(const T *restrict g, const T *restrict hp, const T *restrict ex, const T *restrict dy, T *restrict dg,
                  T *restrict dh, T *restrict dex, const T *bounds, int64_t H, int64_t j0, int64_t j1, int variant) {
  const T lo_s = bounds[0], hi_s = bounds[1], lo_t = bounds[2], hi_t = bounds[3];
  for (int64_t j = j0; j < j1; j++) {
    T r = g[j], z = g[H + j], n = g[2 * H + j], dhv = dh[j] + dy[j];
    T dnp = dhv * (1 - z) * (1 - n * n) * PD_T(pd_rnn_keep)(n, lo_t, hi_t);
    dg[H + j] = dhv * (hp[j] - n) * z * (1 - z) * PD_T(pd_rnn_keep)(z, lo_s, hi_s);
    dg[2 * H + j] = dnp;
    dh[j] = dhv * z;
    if (variant) {
      dex[j] = dnp * r;
      dg[j] = dnp * ex[j] * r * (1 - r) * PD_T(pd_rnn_keep)(r, lo_s, hi_s);
    } else
      dex[j] = 0;
  }
}

static void PD_T(gru_bwd_zn)(void *arg, int64_t lo, int64_t hi) {
  PD_T(pd_rnn_step) *s = arg;
  int64_t H = s->hidden, GH = s->gh;
  const T bounds[4] = {s->clo_s, s->chi_s, s->clo_t, s->chi_t};
  for (int64_t b = lo; b < hi; b++) {
    if (!PD_T(pd_rnn_active)(s, b)) {
      PD_T(pd_rnn_frozen_grad)(s, b);
      continue;
    }
    const T *g = s->g + b * GH, *hp = s->hp + b * H, *ex = s->ex + b * H, *dy = s->dy + b * s->ldy;
    T *dg = s->dg + b * GH, *dh = s->dh + b * H, *dex = s->dex + b * H;
    if (s->variant)
      PD_T(gru_bwd_row)(g, hp, ex, dy, dg, dh, dex, bounds, H, 0, H, 1);
    else
      PD_T(gru_bwd_row)(g, hp, ex, dy, dg, dh, dex, bounds, H, 0, H, 0);
  }
}

/* without linear_before_reset: from d(r * h_prev) (in tmp), r's gradient
 * and h_prev's share */
static void PD_T(gru_bwd_r)(void *arg, int64_t lo, int64_t hi) {
  PD_T(pd_rnn_step) *s = arg;
  int64_t H = s->hidden, GH = s->gh;
  const T lo_s = s->clo_s, hi_s = s->chi_s;
  for (int64_t b = lo; b < hi; b++) {
    if (!PD_T(pd_rnn_active)(s, b)) continue;
    const T *restrict g = s->g + b * GH, *restrict hp = s->hp + b * H, *restrict drh = s->tmp + b * H;
    T *restrict dg = s->dg + b * GH, *restrict dh = s->dh + b * H;
    for (int64_t j = 0; j < H; j++) {
      dg[j] = drh[j] * hp[j] * g[j] * (1 - g[j]) * PD_T(pd_rnn_keep)(g[j], lo_s, hi_s);
      dh[j] += drh[j] * g[j];
    }
  }
}

/* The backward of a step on R unpacked, the gate gradients by `zn`. */
static inline void PD_T(gru_bwd_with)(PD_T(pd_rnn_step) * s, pd_range_fn zn) {
  int64_t H = s->hidden, GH = s->gh, grain = pd_rnn_row_grain(GH);
  const T *rn = s->r + 2 * H * H;
  pd_parallel_for(s->batch, grain, zn, s);
  if (s->variant)
    PD_T(pd_gemm)(false, false, s->nact, H, H, 1, s->dex, H, rn, H, 1, s->dh, H);
  else {
    PD_T(pd_gemm)(false, false, s->nact, H, H, 1, s->dg + 2 * H, GH, rn, H, 0, s->tmp, H);
    pd_parallel_for(s->nact, grain, PD_T(gru_bwd_r), s);
  }
  PD_T(pd_gemm)(false, false, s->nact, H, 2 * H, 1, s->dg, GH, s->r, H, 1, s->dh, H);
}
static inline void PD_T(gru_bwd)(PD_T(pd_rnn_step) * s) { PD_T(gru_bwd_with)(s, PD_T(gru_bwd_zn)); }
