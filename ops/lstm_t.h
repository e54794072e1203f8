/* lstm_t.h — the LSTM cell's step for one element type T (base/tmpl.h);
 * lstm.c includes it once for float and once for double. Gates in the
 * order i, f, g, o (PyTorch's); P in ONNX's order i, o, f. */

static void PD_T(lstm_fwd)(PD_T(pd_rnn_step) * s) {
  int64_t H = s->hidden, GH = s->gh;
  PD_T(pd_gemm)(false, true, s->nact, GH, H, 1, s->hp, H, s->r, H, 1, s->g, GH);
  const T *pi = s->peep, *po = s->peep ? s->peep + H : NULL, *pf = s->peep ? s->peep + 2 * H : NULL;
  for (int64_t b = 0; b < s->batch; b++) {
    if (!PD_T(pd_rnn_active)(s, b)) {
      PD_T(pd_rnn_frozen)(s, b);
      continue;
    }
    T *g = s->g + b * GH, *h = s->h + b * H, *c = s->c + b * H, *y = s->y + b * s->ldy;
    const T *cp = s->cp + b * H;
    for (int64_t j = 0; j < H; j++) {
      T ai = g[j], af = g[H + j], ag = g[2 * H + j], ao = g[3 * H + j];
      if (pi) ai += pi[j] * cp[j], af += pf[j] * cp[j];
      T i = PD_T(pd_sigmoid)(PD_T(pd_rnn_clip)(s, ai)), f = PD_T(pd_sigmoid)(PD_T(pd_rnn_clip)(s, af));
      T gg = PD_T(pd_tanh)(PD_T(pd_rnn_clip)(s, ag));
      T cn = f * cp[j] + i * gg;
      if (po) ao += po[j] * cn;
      T o = PD_T(pd_sigmoid)(PD_T(pd_rnn_clip)(s, ao));
      g[j] = i, g[H + j] = f, g[2 * H + j] = gg, g[3 * H + j] = o;
      c[j] = cn;
      h[j] = y[j] = o * PD_T(pd_tanh)(cn);
    }
  }
}

/* 0 where the clip attribute bounded the pre-activation of a kept value. */
static inline T PD_T(lstm_keep_s)(const PD_T(pd_rnn_step) * s, T a) {
  return s->clip > 0 && (a <= s->clo_s || a >= s->chi_s) ? 0 : 1;
}
static inline T PD_T(lstm_keep_t)(const PD_T(pd_rnn_step) * s, T a) {
  return s->clip > 0 && (a <= s->clo_t || a >= s->chi_t) ? 0 : 1;
}

static void PD_T(lstm_bwd)(PD_T(pd_rnn_step) * s) {
  int64_t H = s->hidden, GH = s->gh;
  const T *pi = s->peep, *po = s->peep ? s->peep + H : NULL, *pf = s->peep ? s->peep + 2 * H : NULL;
  T *dpi = s->dpeep, *dpo = s->dpeep ? s->dpeep + H : NULL, *dpf = s->dpeep ? s->dpeep + 2 * H : NULL;
  for (int64_t b = 0; b < s->batch; b++) {
    if (!PD_T(pd_rnn_active)(s, b)) {
      PD_T(pd_rnn_frozen_grad)(s, b);
      continue;
    }
    const T *g = s->g + b * GH, *c = s->c + b * H, *cp = s->cp + b * H, *dy = s->dy + b * s->ldy;
    T *dg = s->dg + b * GH, *dh = s->dh + b * H, *dc = s->dc + b * H;
    for (int64_t j = 0; j < H; j++) {
      T i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j], cn = c[j];
      T tc = PD_T(pd_tanh)(cn), dhv = dh[j] + dy[j];
      T dao = dhv * tc * o * (1 - o) * PD_T(lstm_keep_s)(s, o);
      T dcv = dc[j] + dhv * o * (1 - tc * tc) + (po ? dao * po[j] : 0);
      T dai = dcv * gg * i * (1 - i) * PD_T(lstm_keep_s)(s, i);
      T daf = dcv * cp[j] * f * (1 - f) * PD_T(lstm_keep_s)(s, f);
      T dag = dcv * i * (1 - gg * gg) * PD_T(lstm_keep_t)(s, gg);
      dc[j] = dcv * f + (pi ? dai * pi[j] + daf * pf[j] : 0);
      if (dpi) dpi[j] += dai * cp[j], dpf[j] += daf * cp[j], dpo[j] += dao * cn;
      dg[j] = dai, dg[H + j] = daf, dg[2 * H + j] = dag, dg[3 * H + j] = dao;
      dh[j] = 0;
    }
  }
  PD_T(pd_gemm)(false, false, s->nact, H, GH, 1, s->dg, GH, s->r, H, 1, s->dh, H);
}
