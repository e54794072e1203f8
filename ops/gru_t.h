/* gru_t.h — the GRU cell's step for one element type T (base/tmpl.h);
 * gru.c includes it once for float and once for double. Gates r, z, n
 * (PyTorch's order); the kept value ex is h_prev R_n^T + Rb_n with
 * linear_before_reset (variant 1), r * h_prev without. */

/* r and z from their pre-activations; h from n's. */
static inline void PD_T(gru_rz)(const PD_T(pd_rnn_step) * s, T *g, int64_t H) {
  for (int64_t j = 0; j < 2 * H; j++) g[j] = PD_T(pd_rnn_sigmoid)(PD_T(pd_rnn_clip)(s, g[j]));
}
static inline void PD_T(gru_h)(PD_T(pd_rnn_step) * s, int64_t b) {
  int64_t H = s->hidden;
  T *g = s->g + b * s->gh, *h = s->h + b * H, *y = s->y + b * s->ldy;
  const T *hp = s->hp + b * H;
  for (int64_t j = 0; j < H; j++) h[j] = y[j] = (1 - g[H + j]) * g[2 * H + j] + g[H + j] * hp[j];
}

/* r and z; then n (linear_before_reset) or r * h_prev, n's product's input. */
static void PD_T(gru_fwd_rz)(void *arg, int64_t lo, int64_t hi) {
  PD_T(pd_rnn_step) *s = arg;
  int64_t H = s->hidden, GH = s->gh;
  for (int64_t b = lo; b < hi; b++) {
    T *g = s->g + b * GH, *ex = s->ex + b * H;
    if (!PD_T(pd_rnn_active)(s, b)) {
      for (int64_t j = 0; j < H; j++) ex[j] = 0;
      continue;
    }
    PD_T(gru_rz)(s, g, H);
    const T *hp = s->hp + b * H;
    for (int64_t j = 0; j < H; j++) {
      if (s->variant) {
        ex[j] += s->rb ? s->rb[2 * H + j] : 0;
        g[2 * H + j] = PD_T(pd_rnn_tanh)(PD_T(pd_rnn_clip)(s, g[2 * H + j] + g[j] * ex[j]));
      } else
        ex[j] = g[j] * hp[j];
    }
  }
}

static void PD_T(gru_fwd_h)(void *arg, int64_t lo, int64_t hi) {
  PD_T(pd_rnn_step) *s = arg;
  int64_t H = s->hidden, GH = s->gh;
  for (int64_t b = lo; b < hi; b++) {
    if (!PD_T(pd_rnn_active)(s, b)) {
      PD_T(pd_rnn_frozen)(s, b);
      continue;
    }
    T *g = s->g + b * GH;
    if (!s->variant)
      for (int64_t j = 0; j < H; j++) g[2 * H + j] = PD_T(pd_rnn_tanh)(PD_T(pd_rnn_clip)(s, g[2 * H + j]));
    PD_T(gru_h)(s, b);
  }
}

static void PD_T(gru_fwd)(PD_T(pd_rnn_step) * s) {
  int64_t H = s->hidden, GH = s->gh, grain = pd_rnn_row_grain(GH);
  const T *rn = s->r + 2 * H * H;
  PD_T(pd_gemm)(false, true, s->nact, 2 * H, H, 1, s->hp, H, s->r, H, 1, s->g, GH);
  if (s->variant) PD_T(pd_gemm)(false, true, s->nact, H, H, 1, s->hp, H, rn, H, 0, s->ex, H);
  pd_parallel_for(s->batch, grain, PD_T(gru_fwd_rz), s);
  if (!s->variant) /* n's product needs r first */
    PD_T(pd_gemm)(false, true, s->nact, H, H, 1, s->ex, H, rn, H, 1, s->g + 2 * H, GH);
  pd_parallel_for(s->batch, grain, PD_T(gru_fwd_h), s);
}

static void PD_T(gru_bwd_zn)(void *arg, int64_t lo, int64_t hi) {
  PD_T(pd_rnn_step) *s = arg;
  int64_t H = s->hidden, GH = s->gh;
  const T lo_s = s->clo_s, hi_s = s->chi_s, lo_t = s->clo_t, hi_t = s->chi_t;
  for (int64_t b = lo; b < hi; b++) {
    if (!PD_T(pd_rnn_active)(s, b)) {
      PD_T(pd_rnn_frozen_grad)(s, b);
      continue;
    }
    const T *g = s->g + b * GH, *hp = s->hp + b * H, *ex = s->ex + b * H, *dy = s->dy + b * s->ldy;
    T *dg = s->dg + b * GH, *dh = s->dh + b * H, *dex = s->dex + b * H;
    for (int64_t j = 0; j < H; j++) {
      T r = g[j], z = g[H + j], n = g[2 * H + j], dhv = dh[j] + dy[j];
      T dnp = dhv * (1 - z) * (1 - n * n) * PD_T(pd_rnn_keep)(n, lo_t, hi_t);
      dg[H + j] = dhv * (hp[j] - n) * z * (1 - z) * PD_T(pd_rnn_keep)(z, lo_s, hi_s);
      dg[2 * H + j] = dnp;
      dh[j] = dhv * z;
      if (s->variant) {
        dex[j] = dnp * r;
        dg[j] = dnp * ex[j] * r * (1 - r) * PD_T(pd_rnn_keep)(r, lo_s, hi_s);
      } else
        dex[j] = 0;
    }
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
    const T *g = s->g + b * GH, *hp = s->hp + b * H, *drh = s->tmp + b * H;
    T *dg = s->dg + b * GH, *dh = s->dh + b * H;
    for (int64_t j = 0; j < H; j++) {
      dg[j] = drh[j] * hp[j] * g[j] * (1 - g[j]) * PD_T(pd_rnn_keep)(g[j], lo_s, hi_s);
      dh[j] += drh[j] * g[j];
    }
  }
}

static void PD_T(gru_bwd)(PD_T(pd_rnn_step) * s) {
  int64_t H = s->hidden, GH = s->gh, grain = pd_rnn_row_grain(GH);
  const T *rn = s->r + 2 * H * H;
  pd_parallel_for(s->batch, grain, PD_T(gru_bwd_zn), s);
  if (s->variant)
    PD_T(pd_gemm)(false, false, s->nact, H, H, 1, s->dex, H, rn, H, 1, s->dh, H);
  else {
    PD_T(pd_gemm)(false, false, s->nact, H, H, 1, s->dg + 2 * H, GH, rn, H, 0, s->tmp, H);
    pd_parallel_for(s->nact, grain, PD_T(gru_bwd_r), s);
  }
  PD_T(pd_gemm)(false, false, s->nact, H, 2 * H, 1, s->dg, GH, s->r, H, 1, s->dh, H);
}
