/* rnn_core_t.h — the fused recurrent ops' driver for one element type T
 * (base/tmpl.h): rnn_core.c includes it once for float and once for double.
 * Everything is time-major inside ([T, B, ...], one step a block of rows);
 * X, Y and their gradients are converted from and to batch-major once. */

/* The projection's epilogue: + Wb on every gate row, + Rb on those before
 * `fold` (the rest of Rb is the cell's: gru's n with linear_before_reset). */
typedef struct PD_T(rnn_bias) {
  const T *wb, *rb;
  int64_t fold;
} PD_T(rnn_bias);

/* the epilogue's body; rnn_core.c's rnn_bias_ep calls it (float's compiled
 * for AVX2 too) */
static inline __attribute__((always_inline)) void PD_T(rnn_bias_rows)(const PD_T(rnn_bias) * e, void *cv, int64_t ldc,
                                                                      int64_t rows, int64_t c0, int64_t cols) {
  /* the columns before fold and after it in two plain loops the compiler
   * vectorises (one with a branch per element does not); the sums are the
   * same: wb + rb, and wb + 0 (which turns a -0 bias into +0, as it did) */
  int64_t split = e->fold - c0 < 0 ? 0 : e->fold - c0 > cols ? cols : e->fold - c0;
  const T *restrict wb = e->wb + c0, *restrict rb = e->rb + c0;
  for (int64_t i = 0; i < rows; i++) {
    T *restrict row = (T *)cv + i * ldc;
    for (int64_t j = 0; j < split; j++) row[j] += wb[j] + rb[j];
    for (int64_t j = split; j < cols; j++) row[j] += wb[j] + (T)0;
  }
}

/* [B, T, n] <-> [T, B, n], split over the pool by time steps (to time
 * major) or rows (to batch major): each part writes whole rows of dst. */
typedef struct PD_T(rnn_relayout) {
  T *dst;
  const T *src;
  int64_t B, Tn, n;
} PD_T(rnn_relayout);
static void PD_T(rnn_to_time_major_part)(void *arg, int64_t lo, int64_t hi) {
  const PD_T(rnn_relayout) *a = arg;
  for (int64_t p = lo; p < hi; p++)
    for (int64_t b = 0; b < a->B; b++)
      memcpy(a->dst + (p * a->B + b) * a->n, a->src + (b * a->Tn + p) * a->n, sizeof(T) * (size_t)a->n);
}
static void PD_T(rnn_to_batch_major_part)(void *arg, int64_t lo, int64_t hi) {
  const PD_T(rnn_relayout) *a = arg;
  for (int64_t b = lo; b < hi; b++)
    for (int64_t p = 0; p < a->Tn; p++)
      memcpy(a->dst + (b * a->Tn + p) * a->n, a->src + (p * a->B + b) * a->n, sizeof(T) * (size_t)a->n);
}
static void PD_T(rnn_to_time_major)(T *dst, const T *src, int64_t B, int64_t Tn, int64_t n) {
  PD_T(rnn_relayout) a = {dst, src, B, Tn, n};
  pd_parallel_for(Tn, rnn_copy_grain(B * n), PD_T(rnn_to_time_major_part), &a);
}
static void PD_T(rnn_to_batch_major)(T *dst, const T *src, int64_t B, int64_t Tn, int64_t n) {
  PD_T(rnn_relayout) a = {dst, src, B, Tn, n};
  pd_parallel_for(B, rnn_copy_grain(Tn * n), PD_T(rnn_to_batch_major_part), &a);
}

/* The step struct's fields that do not change from step to step. */
static void PD_T(rnn_step_init)(PD_T(pd_rnn_step) * s, const rnn_dims *d, const T *r, const T *rb, const T *peep) {
  memset(s, 0, sizeof *s);
  s->batch = d->B, s->hidden = d->H, s->gh = d->GH;
  s->len = d->len;
  s->r = r, s->rb = rb, s->peep = peep;
  s->clip = (T)d->clip;
  s->bound = d->clip > 0 ? s->clip : (T)INFINITY;
  /* without a clip, bounds no kept value reaches */
  s->clo_s = d->clip > 0 ? PD_T(pd_rnn_sigmoid)(-s->clip) : -1,
  s->chi_s = d->clip > 0 ? PD_T(pd_rnn_sigmoid)(s->clip) : 2;
  s->clo_t = d->clip > 0 ? PD_T(pd_rnn_tanh)(-s->clip) : -2, s->chi_t = d->clip > 0 ? PD_T(pd_rnn_tanh)(s->clip) : 2;
  s->variant = d->variant;
  s->ldy = d->DH;
}

/* Where the steps of one direction of one layer read and write: step i of
 * its loop (rnn_at) is time step i forward, Tn-1-i reversed, and the
 * backward's loop (back) walks them the other way. */
typedef struct PD_T(rnn_walk) {
  const rnn_dims *d;
  bool rev, back;
  T *g, *hs, *cs, *ex; /* the direction's parts of Reserve (cs, ex NULL where the cell has none) */
  T *y;                /* forward: the layer output of time step 0, this direction's columns */
  T *dg, *dex;         /* backward: step 0's gate gradients (dex NULL without ex) */
  const T *dy;         /* backward: the layer output's gradient at step 0 */
  int64_t ystep;       /* from one step's y (forward) or dy (backward) to the next */
  T *bsum;             /* backward: room for dG's and dEx's column sums, (1 + PD_RNN_MAX_CHUNKS) x (GH + H) */
} PD_T(rnn_walk);

/* s's per-step fields for step i of w's loop. */
static void PD_T(rnn_at)(const PD_T(rnn_walk) * w, PD_T(pd_rnn_step) * s, int64_t i) {
  const rnn_dims *d = w->d;
  const int64_t B = d->B, BH = B * d->H, q = w->back ? d->Tn - 1 - i : i;
  const int64_t p = w->rev ? d->Tn - 1 - q : q, prev = w->rev ? p + 2 : p;
  s->p = p, s->nact = rnn_active_rows(d, p);
  s->g = w->g + p * B * d->GH, s->hp = w->hs + prev * BH, s->h = w->hs + (p + 1) * BH;
  s->cp = w->cs ? w->cs + prev * BH : NULL, s->c = w->cs ? w->cs + (p + 1) * BH : NULL;
  s->ex = w->ex ? w->ex + p * BH : NULL;
  if (!w->back) {
    s->y = w->y + p * w->ystep;
    return;
  }
  s->dg = w->dg + p * B * d->GH, s->dex = w->dex ? w->dex + p * BH : NULL;
  s->dy = w->dy + p * w->ystep;
}

/* All Tn steps of w, forward and backward (rnn_core.c, after the template:
 * float's backward may go over the pool by rows for the whole sequence).
 * The backward returns true where it also left the column sums of dG and
 * dEx over all Tn B rows in w->bsum (GH, then H): the bias gradients'. */
static void PD_T(rnn_steps_fwd)(const pd_rnn_cell *cell, PD_T(pd_rnn_step) * s, const PD_T(rnn_walk) * w);
static bool PD_T(rnn_steps_bwd)(const pd_rnn_cell *cell, PD_T(pd_rnn_step) * s, const PD_T(rnn_walk) * w);

static pd_status PD_T(rnn_forward)(pd_ctx *c, const pd_rnn_cell *cell, rnn_dims *d) {
  int64_t B = d->B, Tn = d->Tn, H = d->H, GH = d->GH, DH = d->DH, BH = B * H;
  T *res = PD_DATA(pd_out_at(c, cell->out_reserve, 0), T);
  const T *x = PD_DATA(pd_in(c, RNN_X), T), *w0 = PD_DATA(pd_in(c, RNN_W), T), *rw = PD_DATA(pd_in(c, RNN_R), T);
  pd_tensor *wl_t = cell->in_wl >= 0 ? pd_in(c, cell->in_wl) : NULL, *b_t = pd_in(c, RNN_B);
  pd_tensor *p_t = cell->in_p >= 0 ? pd_in(c, cell->in_p) : NULL, *h0_t = pd_in(c, RNN_H0);
  pd_tensor *c0_t = cell->in_c0 >= 0 ? pd_in(c, cell->in_c0) : NULL;
  T *xtm = res + rnn_off_xtm(d);
  PD_T(rnn_to_time_major)(xtm, x, B, Tn, d->I);
  PD_T(pd_rnn_step) s;
  for (int64_t l = 0; l < d->L; l++) {
    const T *in = l ? res + rnn_off_out(d, l - 1) : xtm;
    int64_t nin = l ? DH : d->I;
    for (int64_t dir = 0; dir < d->dirs; dir++) {
      int64_t k = l * d->dirs + dir;
      bool rev = d->reverse || dir == 1;
      const T *w = l ? PD_DATA(wl_t, T) + ((l - 1) * d->dirs + dir) * GH * DH : w0 + dir * GH * d->I;
      const T *wb = b_t ? PD_DATA(b_t, T) + k * 2 * GH : NULL;
      T *g = res + rnn_off_g(d, k), *hs = res + rnn_off_h(d, k);
      T *cs = cell->has_c ? res + rnn_off_c(d, k) : NULL, *ex = cell->extra ? res + rnn_off_ex(d, k) : NULL;
      PD_T(rnn_bias) e = {wb, wb ? wb + GH : NULL, d->fold};
      PD_T(pd_gemm_ep)
      (false, true, Tn * B, GH, nin, 1, in, nin, w, nin, 0, g, GH, wb ? PD_T(rnn_bias_ep) : NULL, &e);
      int64_t init = rev ? Tn + 1 : 0, unused = rev ? 0 : Tn + 1;
      /* the end slot no step reads or writes: zeros, so Reserve is all defined (the GPU's too) */
      memset(hs + unused * BH, 0, sizeof(T) * (size_t)BH);
      if (cs) memset(cs + unused * BH, 0, sizeof(T) * (size_t)BH);
      if (h0_t)
        memcpy(hs + init * BH, PD_DATA(h0_t, T) + k * BH, sizeof(T) * (size_t)BH);
      else
        memset(hs + init * BH, 0, sizeof(T) * (size_t)BH);
      if (cs && c0_t)
        memcpy(cs + init * BH, PD_DATA(c0_t, T) + k * BH, sizeof(T) * (size_t)BH);
      else if (cs)
        memset(cs + init * BH, 0, sizeof(T) * (size_t)BH);
      PD_T(rnn_step_init)(&s, d, rw + k * GH * H, wb ? wb + GH : NULL, p_t ? PD_DATA(p_t, T) + k * 3 * H : NULL);
      pd_rnn_packed pk;
      pd_status st = PD_T(rnn_packed_start_fwd)(c, cell, d, rw + k * GH * H, hs + init * BH, &pk, &s.pk);
      if (st) return st;
      /* the last layer writes Y where it is, batch-major (row b of step p
       * at p DH + b Tn DH; pd_rnn_infer keeps Y off the weights read
       * meanwhile): a [T, B] copy of it cost ~1 % of a char LM step */
      const bool last = l == d->L - 1;
      T *y = last ? PD_DATA(pd_out(c, RNN_Y), T) : res + rnn_off_out(d, l);
      PD_T(rnn_walk) walk = {d, rev, false, g, hs, cs, ex, y + dir * H, NULL, NULL, NULL, last ? DH : B * DH, NULL};
      if (last) s.ldy = Tn * DH;
      PD_T(rnn_steps_fwd)(cell, &s, &walk);
    }
  }
  /* the final states last: HT may be the very variable H0 is (read above) */
  for (int64_t k = 0; k < d->L * d->dirs; k++) {
    int64_t last = (d->reverse || k % d->dirs == 1) ? 1 : Tn;
    pd_tensor *ht = pd_out(c, RNN_HT), *ct = cell->out_ct >= 0 ? pd_out(c, cell->out_ct) : NULL;
    if (ht) memcpy(PD_DATA(ht, T) + k * BH, res + rnn_off_h(d, k) + last * BH, sizeof(T) * (size_t)BH);
    if (ct) memcpy(PD_DATA(ct, T) + k * BH, res + rnn_off_c(d, k) + last * BH, sizeof(T) * (size_t)BH);
  }
  return PD_OK;
}

/* out[0 : n] += the rows [0, rows) of a (ld apart), in order (so a sum's
 * bits do not depend on the vector width): the column sums of rnn_core.c's
 * rnn_colsum and of the backward's parts, float's compiled for AVX2 too. */
static inline __attribute__((always_inline)) void PD_T(rnn_sum_rows)(T *restrict out, const T *restrict a, int64_t rows,
                                                                     int64_t n, int64_t ld) {
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < n; j++) out[j] += a[i * ld + j];
}

/* The weight gradients of direction k of layer l, as products over all
 * T*B rows, once its step loop has filled dG (and dEx); the biases' from
 * the step loop's column sums where it left them (sums: dG's, then
 * dEx's), else summed here. */
static void PD_T(rnn_weight_grads)(pd_ctx *c, const pd_rnn_cell *cell, const rnn_dims *d, int64_t l, int64_t k,
                                   const T *in, int64_t nin, const T *hprev, const T *ex, const T *dg, const T *dex,
                                   const T *sums) {
  int64_t M = d->Tn * d->B, GH = d->GH, H = d->H, sp = d->split;
  pd_tensor *dw_t = l ? (cell->in_wl >= 0 ? pd_out(c, cell->in_wl) : NULL) : pd_out(c, RNN_W);
  pd_tensor *dr_t = pd_out(c, RNN_R), *db_t = pd_out(c, RNN_B);
  int64_t dir = k % d->dirs;
  if (dw_t) {
    T *dw = PD_DATA(dw_t, T) + (l ? ((l - 1) * d->dirs + dir) * GH * d->DH : dir * GH * d->I);
    PD_T(pd_gemm)(true, false, GH, nin, M, 1, dg, GH, in, nin, 0, dw, nin);
  }
  /* the rows past split (gru's n): with linear_before_reset the product
   * was h_prev R_n^T (its gradient dEx), without it (r * h_prev) R_n^T */
  const T *ta = d->variant ? dex : dg + sp, *tb = d->variant ? hprev : ex;
  int64_t tlda = d->variant ? H : GH;
  if (dr_t) {
    T *dr = PD_DATA(dr_t, T) + k * GH * H;
    PD_T(pd_gemm)(true, false, sp, H, M, 1, dg, GH, hprev, H, 0, dr, H);
    if (sp < GH) PD_T(pd_gemm)(true, false, GH - sp, H, M, 1, ta, tlda, tb, H, 0, dr + sp * H, H);
  }
  if (db_t) {
    T *db = PD_DATA(db_t, T) + k * 2 * GH;
    if (sums)
      memcpy(db, sums, sizeof(T) * (size_t)GH);
    else
      PD_T(rnn_colsum)(db, dg, M, GH, GH);
    /* Rb's gradient of the rows before split is Wb's: the same sums */
    memcpy(db + GH, db, sizeof(T) * (size_t)sp);
    if (sp < GH && sums)
      memcpy(db + GH + sp, d->variant ? sums + GH : sums + sp, sizeof(T) * (size_t)(GH - sp));
    else if (sp < GH)
      PD_T(rnn_colsum)(db + GH + sp, ta, M, GH - sp, tlda);
  }
}

static pd_status PD_T(rnn_backward)(pd_ctx *c, const pd_rnn_cell *cell, rnn_dims *d) {
  int64_t B = d->B, Tn = d->Tn, H = d->H, GH = d->GH, DH = d->DH, BH = B * H, M = Tn * B;
  int ni = d->n_in, no = d->n_out;
  const T *res = PD_DATA(pd_in(c, ni + cell->out_reserve), T);
  const T *w0 = PD_DATA(pd_in(c, RNN_W), T), *rw = PD_DATA(pd_in(c, RNN_R), T);
  pd_tensor *wl_t = cell->in_wl >= 0 ? pd_in(c, cell->in_wl) : NULL, *b_t = pd_in(c, RNN_B);
  pd_tensor *p_t = cell->in_p >= 0 ? pd_in(c, cell->in_p) : NULL;
  pd_tensor *dy_t = pd_in(c, ni + no + RNN_Y), *dht_t = pd_in(c, ni + no + RNN_HT);
  pd_tensor *dct_t = cell->out_ct >= 0 ? pd_in(c, ni + no + cell->out_ct) : NULL;
  pd_tensor *dx_t = pd_out(c, RNN_X), *dh0_t = pd_out(c, RNN_H0);
  pd_tensor *dc0_t = cell->in_c0 >= 0 ? pd_out(c, cell->in_c0) : NULL;
  pd_tensor *dp_t = cell->in_p >= 0 ? pd_out(c, cell->in_p) : NULL;
  /* scratch: dG, dEx, two [T, B, max(I, DH)] gradients of layer inputs and
   * outputs used in turn, dh, dc, a [B, H] temporary, a row of H zeros and
   * the step loop's column sums (rnn_walk.bsum) */
  int64_t nmax = d->I > DH ? d->I : DH;
  pd_tensor *work = &c->op->work[0];
  work->dtype = pd_in(c, RNN_X)->dtype;
  int64_t nsum = (1 + PD_RNN_MAX_CHUNKS) * (GH + H);
  int64_t total = M * GH + (cell->extra ? M * H : 0) + 2 * M * nmax + 3 * BH + H + nsum;
  pd_status st = pd_tensor_set_dims(work, 1, &total, c->err);
  if (!st) st = pd_ctx_alloc(c, work);
  if (st) return st;
  T *dg = PD_DATA(work, T), *dex = cell->extra ? dg + M * GH : NULL;
  T *da[2] = {dg + M * GH + (cell->extra ? M * H : 0), NULL};
  da[1] = da[0] + M * nmax;
  T *dh = da[1] + M * nmax, *dc = dh + BH, *tmp = dc + BH, *zeros = tmp + BH, *bsum = zeros + H;
  /* the last layer reads dY where it is, batch-major (row b of step p at
   * p DH + b Tn DH): a [T, B] copy of it cost ~1 % of a char LM step;
   * without a dY, every row reads one row of zeros (ldy 0), where zeroing
   * [T, B, DH] took the caller ~1 % of fashion_lstm_fused's 2-thread step
   * with the other core idle */
  const T *dy = dy_t ? PD_DATA(dy_t, T) : NULL;
  memset(zeros, 0, sizeof(T) * (size_t)H);
  if (dp_t) memset(PD_DATA(dp_t, T), 0, pd_tensor_bytes(dp_t));
  PD_T(pd_rnn_step) s;
  int cur = 0;
  for (int64_t l = d->L - 1; l >= 0; l--) {
    const T *in = l ? res + rnn_off_out(d, l - 1) : res + rnn_off_xtm(d);
    int64_t nin = l ? DH : d->I;
    bool want_din = l > 0 || dx_t;
    for (int64_t dir = 0; dir < d->dirs; dir++) {
      int64_t k = l * d->dirs + dir;
      bool rev = d->reverse || dir == 1;
      const T *w = l ? PD_DATA(wl_t, T) + ((l - 1) * d->dirs + dir) * GH * DH : w0 + dir * GH * d->I;
      const T *wb = b_t ? PD_DATA(b_t, T) + k * 2 * GH : NULL;
      const T *g = res + rnn_off_g(d, k), *hs = res + rnn_off_h(d, k);
      const T *cs = cell->has_c ? res + rnn_off_c(d, k) : NULL, *ex = cell->extra ? res + rnn_off_ex(d, k) : NULL;
      if (dht_t)
        memcpy(dh, PD_DATA(dht_t, T) + k * BH, sizeof(T) * (size_t)BH);
      else
        memset(dh, 0, sizeof(T) * (size_t)BH);
      if (dct_t)
        memcpy(dc, PD_DATA(dct_t, T) + k * BH, sizeof(T) * (size_t)BH);
      else
        memset(dc, 0, sizeof(T) * (size_t)BH);
      PD_T(rnn_step_init)(&s, d, rw + k * GH * H, wb ? wb + GH : NULL, p_t ? PD_DATA(p_t, T) + k * 3 * H : NULL);
      s.dh = dh, s.dc = cell->has_c ? dc : NULL, s.tmp = tmp;
      s.dpeep = dp_t ? PD_DATA(dp_t, T) + k * 3 * H : NULL;
      pd_rnn_packed pk;
      if ((st = PD_T(rnn_packed_start_bwd)(c, cell, d, rw + k * GH * H, &pk, &s.pk))) return st;
      PD_T(rnn_walk) walk = {d, rev, true, (T *)g, (T *)hs, (T *)cs, (T *)ex, NULL, dg, dex, NULL, 0, bsum};
      if (l == d->L - 1 && dy)
        walk.dy = dy + dir * H, walk.ystep = DH, s.ldy = Tn * DH;
      else if (l == d->L - 1)
        walk.dy = zeros, walk.ystep = 0, s.ldy = 0;
      else
        walk.dy = da[cur] + dir * H, walk.ystep = B * DH;
      const bool summed = PD_T(rnn_steps_bwd)(cell, &s, &walk);
      if (dh0_t) memcpy(PD_DATA(dh0_t, T) + k * BH, dh, sizeof(T) * (size_t)BH);
      if (dc0_t) memcpy(PD_DATA(dc0_t, T) + k * BH, dc, sizeof(T) * (size_t)BH);
      PD_T(rnn_weight_grads)(c, cell, d, l, k, in, nin, hs + (rev ? 2 : 0) * BH, ex, dg, dex, summed ? bsum : NULL);
      if (want_din) PD_T(pd_gemm)(false, false, M, nin, GH, 1, dg, GH, w, nin, dir ? 1 : 0, da[!cur], nin);
    }
    if (want_din) cur = !cur;
  }
  if (dx_t) PD_T(rnn_to_batch_major)(PD_DATA(dx_t, T), da[cur], B, Tn, d->I);
  return PD_OK;
}
