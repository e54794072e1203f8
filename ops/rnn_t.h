/* rnn_t.h — the plain RNN cell's step for one element type T (base/tmpl.h):
 * h = act(x W^T + h_prev R^T + Wb + Rb), act tanh or relu (variant 1).
 * rnn.c includes it once for float and once for double. */

static inline T PD_T(rnn_act)(const PD_T(pd_rnn_step) * s, T a) {
  a = PD_T(pd_rnn_clip)(s, a);
  if (s->variant) return a > 0 || a != a ? a : 0; /* a NaN stays NaN */
  return PD_T(pd_rnn_tanh)(a);
}

/* act' from the kept value h, 0 where the clip bounded the pre-activation
 * (tanh: at tanh(+-clip), lo and hi; relu: at clip, hi) */
static inline T PD_T(rnn_act_grad)(int relu, T h, T lo, T hi) {
  if (relu) return h > 0 && h < hi ? 1 : 0;
  return PD_T(pd_rnn_keep)(h, lo, hi) * (1 - h * h);
}

static void PD_T(cell_fwd_rows)(void *arg, int64_t lo, int64_t hi) {
  PD_T(pd_rnn_step) *s = arg;
  int64_t H = s->hidden;
  for (int64_t b = lo; b < hi; b++) {
    if (!PD_T(pd_rnn_active)(s, b)) {
      PD_T(pd_rnn_frozen)(s, b);
      continue;
    }
    T *g = s->g + b * H, *h = s->h + b * H, *y = s->y + b * s->ldy;
    for (int64_t j = 0; j < H; j++) g[j] = h[j] = y[j] = PD_T(rnn_act)(s, g[j]);
  }
}

static void PD_T(cell_fwd)(PD_T(pd_rnn_step) * s) {
  int64_t H = s->hidden;
  PD_T(pd_gemm)(false, true, s->nact, H, H, 1, s->hp, H, s->r, H, 1, s->g, H);
  pd_parallel_for(s->batch, pd_rnn_row_grain(H), PD_T(cell_fwd_rows), s);
}

static void PD_T(cell_bwd_rows)(void *arg, int64_t lo, int64_t hi) {
  PD_T(pd_rnn_step) *s = arg;
  int64_t H = s->hidden;
  for (int64_t b = lo; b < hi; b++) {
    if (!PD_T(pd_rnn_active)(s, b)) {
      PD_T(pd_rnn_frozen_grad)(s, b);
      continue;
    }
    const T *h = s->g + b * H, *dy = s->dy + b * s->ldy;
    const int relu = s->variant;
    const T klo = s->clo_t, khi = relu ? (s->clip > 0 ? s->clip : (T)INFINITY) : s->chi_t;
    T *dg = s->dg + b * H, *dh = s->dh + b * H;
    for (int64_t j = 0; j < H; j++) {
      dg[j] = (dh[j] + dy[j]) * PD_T(rnn_act_grad)(relu, h[j], klo, khi);
      dh[j] = 0;
    }
  }
}

static void PD_T(cell_bwd)(PD_T(pd_rnn_step) * s) {
  int64_t H = s->hidden;
  pd_parallel_for(s->batch, pd_rnn_row_grain(H), PD_T(cell_bwd_rows), s);
  PD_T(pd_gemm)(false, false, s->nact, H, H, 1, s->dg, H, s->r, H, 1, s->dh, H);
}
