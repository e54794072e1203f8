/* lstm_t.h — the LSTM cell's step for one element type T (base/tmpl.h);
 * lstm.c includes it once for float and once for double. Gates in the
 * order i, f, g, o (PyTorch's); P in ONNX's order i, o, f. */

/* One row's gates and states; has_peep is a constant where it is inlined,
 * so that the loop of each case vectorises. */
static inline __attribute__((always_inline)) void PD_T(lstm_row)(T *restrict g, T *restrict h, T *restrict c,
                                                                 T *restrict y, const T *restrict cp, const T *peep,
                                                                 T bound, int64_t H, bool has_peep) {
  const T *pi = peep, *po = peep + H, *pf = peep + 2 * H;
  for (int64_t j = 0; j < H; j++) {
    T ai = g[j], af = g[H + j], ag = g[2 * H + j], ao = g[3 * H + j];
    if (has_peep) ai += pi[j] * cp[j], af += pf[j] * cp[j];
    T i = PD_T(pd_rnn_sigmoid)(PD_T(pd_rnn_bound)(ai, bound));
    T f = PD_T(pd_rnn_sigmoid)(PD_T(pd_rnn_bound)(af, bound));
    T gg = PD_T(pd_rnn_tanh)(PD_T(pd_rnn_bound)(ag, bound));
    T cn = f * cp[j] + i * gg;
    if (has_peep) ao += po[j] * cn;
    T o = PD_T(pd_rnn_sigmoid)(PD_T(pd_rnn_bound)(ao, bound));
    g[j] = i, g[H + j] = f, g[2 * H + j] = gg, g[3 * H + j] = o;
    c[j] = cn;
    T hv = o * PD_T(pd_rnn_tanh)(cn);
    h[j] = hv, y[j] = hv;
  }
}

static void PD_T(lstm_fwd_rows)(void *arg, int64_t lo, int64_t hi) {
  PD_T(pd_rnn_step) *s = arg;
  int64_t H = s->hidden, GH = s->gh;
  for (int64_t b = lo; b < hi; b++) {
    if (!PD_T(pd_rnn_active)(s, b)) {
      PD_T(pd_rnn_frozen)(s, b);
      continue;
    }
    T *g = s->g + b * GH, *h = s->h + b * H, *c = s->c + b * H, *y = s->y + b * s->ldy;
    if (s->peep)
      PD_T(lstm_row)(g, h, c, y, s->cp + b * H, s->peep, s->bound, H, true);
    else
      PD_T(lstm_row)(g, h, c, y, s->cp + b * H, s->hp, s->bound, H, false);
  }
}

static void PD_T(lstm_fwd)(PD_T(pd_rnn_step) * s) {
  int64_t H = s->hidden, GH = s->gh;
  PD_T(pd_gemm)(false, true, s->nact, GH, H, 1, s->hp, H, s->r, H, 1, s->g, GH);
  pd_parallel_for(s->batch, pd_rnn_row_grain(GH), PD_T(lstm_fwd_rows), s);
}

static inline __attribute__((always_inline)) void PD_T(lstm_bwd_row)(PD_T(pd_rnn_step) * s, int64_t b, bool has_peep) {
  int64_t H = s->hidden, GH = s->gh;
  const T *pi = s->peep, *po = s->peep + H, *pf = s->peep + 2 * H;
  T *dpi = s->dpeep, *dpo = s->dpeep + H, *dpf = s->dpeep + 2 * H;
  const T *restrict g = s->g + b * GH, *restrict c = s->c + b * H, *restrict cp = s->cp + b * H;
  const T *restrict dy = s->dy + b * s->ldy;
  T *restrict dg = s->dg + b * GH, *restrict dh = s->dh + b * H, *restrict dc = s->dc + b * H;
  for (int64_t j = 0; j < H; j++) {
    T i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j], cn = c[j];
    T tc = PD_T(pd_rnn_tanh)(cn), dhv = dh[j] + dy[j];
    T dao = dhv * tc * o * (1 - o) * PD_T(pd_rnn_keep_s)(s, o);
    T dcv = dc[j] + dhv * o * (1 - tc * tc);
    if (has_peep) dcv += dao * po[j];
    T dai = dcv * gg * i * (1 - i) * PD_T(pd_rnn_keep_s)(s, i);
    T daf = dcv * cp[j] * f * (1 - f) * PD_T(pd_rnn_keep_s)(s, f);
    T dag = dcv * i * (1 - gg * gg) * PD_T(pd_rnn_keep_t)(s, gg);
    dc[j] = dcv * f;
    if (has_peep) dc[j] += dai * pi[j] + daf * pf[j];
    if (has_peep && dpi) dpi[j] += dai * cp[j], dpf[j] += daf * cp[j], dpo[j] += dao * cn;
    dg[j] = dai, dg[H + j] = daf, dg[2 * H + j] = dag, dg[3 * H + j] = dao;
    dh[j] = 0;
  }
}

static void PD_T(lstm_bwd_rows)(void *arg, int64_t lo, int64_t hi) {
  PD_T(pd_rnn_step) *s = arg;
  for (int64_t b = lo; b < hi; b++) {
    if (!PD_T(pd_rnn_active)(s, b))
      PD_T(pd_rnn_frozen_grad)(s, b);
    else if (s->peep)
      PD_T(lstm_bwd_row)(s, b, true);
    else
      PD_T(lstm_bwd_row)(s, b, false);
  }
}

static void PD_T(lstm_bwd)(PD_T(pd_rnn_step) * s) {
  /* P's gradient sums over the rows in order: one part then */
  if (s->dpeep)
    PD_T(lstm_bwd_rows)(s, 0, s->batch);
  else
    pd_parallel_for(s->batch, pd_rnn_row_grain(s->gh), PD_T(lstm_bwd_rows), s);
  PD_T(pd_gemm)(false, false, s->nact, s->hidden, s->gh, 1, s->dg, s->gh, s->r, s->hidden, 1, s->dh, s->hidden);
}
