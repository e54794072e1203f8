/* lstm_t.h — the LSTM cell's step for one element type T (base/tmpl.h);
 * lstm.c includes it once for float and once for double. Gates in the
 * order i, f, g, o (PyTorch's); P in ONNX's order i, o, f. */

/* One row's gates and states, hidden units j0 .. j1-1; has_peep is a constant where it is inlined,
 * so that the loop of each case vectorises. */
static inline __attribute__((always_inline)) void PD_T(lstm_row)(T *restrict g, T *restrict h, T *restrict c,
                                                                 T *restrict y, const T *restrict cp, const T *peep,
                                                                 T bound, int64_t H, int64_t j0, int64_t j1,
                                                                 bool has_peep) {
  const T *pi = peep, *po = peep + H, *pf = peep + 2 * H;
  for (int64_t j = j0; j < j1; j++) {
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
      PD_T(lstm_row)(g, h, c, y, s->cp + b * H, s->peep, s->bound, H, 0, H, true);
    else
      PD_T(lstm_row)(g, h, c, y, s->cp + b * H, s->hp, s->bound, H, 0, H, false);
  }
}

/* A step on R unpacked: the product, then the gate pass `rows` (float's
 * may be lstm.c's vectorised one) over the rows on the pool. */
static inline void PD_T(lstm_fwd_with)(PD_T(pd_rnn_step) * s, pd_range_fn rows) {
  int64_t H = s->hidden, GH = s->gh;
  PD_T(pd_gemm)(false, true, s->nact, GH, H, 1, s->hp, H, s->r, H, 1, s->g, GH);
  pd_parallel_for(s->batch, pd_rnn_row_grain(GH), rows, s);
}
static inline void PD_T(lstm_fwd)(PD_T(pd_rnn_step) * s) { PD_T(lstm_fwd_with)(s, PD_T(lstm_fwd_rows)); }

/* One row's gate gradients; dh and dc from step p+1 in, dc for step p-1
 * out (dh's is the product after the pass). As lstm_row, per case of
 * has_peep and want_dp (P's gradient summed into dpeep). */
static inline __attribute__((always_inline)) void PD_T(lstm_bwd_row)(const T *restrict g, const T *restrict c,
                                                                     const T *restrict cp, const T *restrict dy,
                                                                     T *restrict dg, T *restrict dh, T *restrict dc,
                                                                     const T *peep, T *dpeep, const T *bounds,
                                                                     int64_t H, bool has_peep, bool want_dp) {
  const T *pi = peep, *po = peep + H, *pf = peep + 2 * H;
  T *dpi = dpeep, *dpo = dpeep + H, *dpf = dpeep + 2 * H;
  const T lo_s = bounds[0], hi_s = bounds[1], lo_t = bounds[2], hi_t = bounds[3];
  for (int64_t j = 0; j < H; j++) {
    T i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j], cn = c[j];
    T tc = PD_T(pd_rnn_tanh)(cn), dhv = dh[j] + dy[j];
    T dao = dhv * tc * o * (1 - o) * PD_T(pd_rnn_keep)(o, lo_s, hi_s);
    T dcv = dc[j] + dhv * o * (1 - tc * tc);
    if (has_peep) dcv += dao * po[j];
    T dai = dcv * gg * i * (1 - i) * PD_T(pd_rnn_keep)(i, lo_s, hi_s);
    T daf = dcv * cp[j] * f * (1 - f) * PD_T(pd_rnn_keep)(f, lo_s, hi_s);
    T dag = dcv * i * (1 - gg * gg) * PD_T(pd_rnn_keep)(gg, lo_t, hi_t);
    T dcp = dcv * f;
    if (has_peep) dcp += dai * pi[j] + daf * pf[j];
    if (want_dp) dpi[j] += dai * cp[j], dpf[j] += daf * cp[j], dpo[j] += dao * cn;
    dc[j] = dcp;
    dg[j] = dai, dg[H + j] = daf, dg[2 * H + j] = dag, dg[3 * H + j] = dao;
    dh[j] = 0;
  }
}

static void PD_T(lstm_bwd_rows)(void *arg, int64_t lo, int64_t hi) {
  PD_T(pd_rnn_step) *s = arg;
  int64_t H = s->hidden, GH = s->gh;
  const T bounds[4] = {s->clo_s, s->chi_s, s->clo_t, s->chi_t};
  for (int64_t b = lo; b < hi; b++) {
    if (!PD_T(pd_rnn_active)(s, b)) {
      PD_T(pd_rnn_frozen_grad)(s, b);
      continue;
    }
    const T *g = s->g + b * GH, *c = s->c + b * H, *cp = s->cp + b * H, *dy = s->dy + b * s->ldy;
    T *dg = s->dg + b * GH, *dh = s->dh + b * H, *dc = s->dc + b * H;
    if (s->peep && s->dpeep)
      PD_T(lstm_bwd_row)(g, c, cp, dy, dg, dh, dc, s->peep, s->dpeep, bounds, H, true, true);
    else if (s->peep)
      PD_T(lstm_bwd_row)(g, c, cp, dy, dg, dh, dc, s->peep, NULL, bounds, H, true, false);
    else
      PD_T(lstm_bwd_row)(g, c, cp, dy, dg, dh, dc, NULL, NULL, bounds, H, false, false);
  }
}

/* The backward of a step on R unpacked, the gate gradients by `rows`. */
static inline void PD_T(lstm_bwd_with)(PD_T(pd_rnn_step) * s, pd_range_fn rows) {
  /* P's gradient sums over the rows in order: one part then */
  if (s->dpeep)
    rows(s, 0, s->batch);
  else
    pd_parallel_for(s->batch, pd_rnn_row_grain(s->gh), rows, s);
  PD_T(pd_gemm)(false, false, s->nact, s->hidden, s->gh, 1, s->dg, s->gh, s->r, s->hidden, 1, s->dh, s->hidden);
}
static inline void PD_T(lstm_bwd)(PD_T(pd_rnn_step) * s) { PD_T(lstm_bwd_with)(s, PD_T(lstm_bwd_rows)); }
