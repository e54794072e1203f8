/* conv2d_t.h — conv2d's CPU kernels for one element type T (base/tmpl.h):
 * conv2d.c includes this file once for float and once for double. The float
 * kernels take the AVX-512 paths of conv2d_avx512.c where the plan says so.
 *
 * im2col: image xp [C, hp, wp] (padding included) to rows (c, i, j) of col
 * (row stride ld), row (c, i, j) holding the tap (i, j) of channel c for
 * every output position. With stride 1 each output row's taps are a
 * contiguous run, copied in 32-byte blocks (the last one overlapping): the
 * runs are short (Wo). col2im is its adjoint: it adds each row back into the
 * padded gradient at the taps it read.
 *
 * Forward, per chunk of nb images: unroll them side by side into col
 * [C kh kw, nb P], one product per group into stage [M, nb P] (or, for a
 * single image, straight into Output), then the output pass adds the bias
 * while it copies stage into the images' [M, P] planes.
 *
 * Backward, per chunk: one pass over dOut sums dBias[m] (over n, oh, ow)
 * and gathers dOut to [M, nb P] like the forward's stage; dFilter_g^T +=
 * col_g · dOut_g^T (col unrolled again rather than kept from the forward: a
 * batch-sized buffer would leave the cache); dcol_g = Filter_g^T · dOut_g into
 * the same col buffer, folded into dInput by col2im. dFilter is summed
 * transposed, [kg, mg] per group, and transposed back once at the end:
 * BLIS's AVX-512 kernel fills its tiles better that way round. */

static inline void PD_T(copy_run)(T *restrict d, const T *restrict s, int64_t n) {
  enum { E = 32 / sizeof(T) };
  if (n < E) {
    for (int64_t k = 0; k < n; k++) d[k] = s[k];
    return;
  }
  for (int64_t k = 0; k + E < n; k += E) memcpy(d + k, s + k, 32);
  memcpy(d + n - E, s + n - E, 32);
}

/* x [C, H, W] into the padded image (or x itself without padding). */
static const T *PD_T(padded)(const geom *g, const plan *pl, const T *x) {
  if (!pl->pad) return x;
  T *xp = pl->pad;
  memset(xp, 0, sizeof(T) * (size_t)(g->c * pl->hp * pl->wp));
  for (int64_t ch = 0; ch < g->c; ch++)
    for (int64_t r = 0; r < g->h; r++)
      memcpy(xp + (ch * pl->hp + r + g->ph) * pl->wp + g->pw, x + (ch * g->h + r) * g->w, sizeof(T) * (size_t)g->w);
  return xp;
}

static void PD_T(im2col)(const geom *g, const plan *pl, const T *x, T *restrict col) {
  const T *xp = PD_T(padded)(g, pl, x);
  if (sizeof(T) == sizeof(float) && g->sw == 1 && pd_cpu_avx512f()) {
    pd_conv2d_im2col_s1_avx512(g, pl, (const float *)xp, (float *)col);
    return;
  }
  const int64_t wo = g->wo, wp = pl->wp;
  for (int64_t ch = 0; ch < g->c; ch++)
    for (int64_t i = 0; i < g->kh; i++)
      for (int64_t j = 0; j < g->kw; j++, col += pl->ld) {
        const T *s = xp + (ch * pl->hp + i * g->dh) * wp + j * g->dw;
        T *d = col;
        for (int64_t oh = 0; oh < g->ho; oh++, s += g->sh * wp, d += wo)
          if (g->sw == 1)
            PD_T(copy_run)(d, s, wo);
          else
            for (int64_t ow = 0; ow < wo; ow++) d[ow] = s[ow * g->sw];
      }
}

static void PD_T(col2im)(const geom *g, const plan *pl, const T *restrict col, T *dx) {
  const int64_t wo = g->wo, wp = pl->wp;
  T *acc = pl->pad ? pl->pad : dx;
  memset(acc, 0, sizeof(T) * (size_t)(g->c * pl->hp * wp));
  if (sizeof(T) == sizeof(float) && g->sw == 1 && pd_cpu_avx512f())
    pd_conv2d_col2im_s1_avx512(g, pl, (const float *)col, (float *)acc);
  else
    for (int64_t ch = 0; ch < g->c; ch++)
      for (int64_t i = 0; i < g->kh; i++)
        for (int64_t j = 0; j < g->kw; j++, col += pl->ld) {
          T *restrict a = acc + (ch * pl->hp + i * g->dh) * wp + j * g->dw;
          const T *s = col;
          for (int64_t oh = 0; oh < g->ho; oh++, a += g->sh * wp, s += wo)
            if (g->sw == 1)
              for (int64_t ow = 0; ow < wo; ow++) a[ow] += s[ow];
            else
              for (int64_t ow = 0; ow < wo; ow++) a[ow * g->sw] += s[ow];
        }
  if (pl->pad)
    for (int64_t ch = 0; ch < g->c; ch++)
      for (int64_t r = 0; r < g->h; r++)
        memcpy(dx + (ch * g->h + r) * g->w, acc + (ch * pl->hp + r + g->ph) * wp + g->pw, sizeof(T) * (size_t)g->w);
}

static void PD_T(forward_part)(void *arg, int t, int nt) {
  const job *j = arg;
  const geom g = *j->g;
  plan pl = part_plan(j->pl, t, sizeof(T));
  const T *x = j->x, *w = j->w, *b = j->b;
  T *y = j->y, *col = pl.col, *stage = pl.stage;
  const int64_t chw = g.c * g.h * g.w, P = g.p, M = g.m;
  int64_t lo, hi;
  pd_parallel_range(g.n, t, nt, &lo, &hi);
  if (sizeof(T) == sizeof(float) && pl.packed) {
    float *bp = (float *)pl.col, *ct = bp + (g.kg * pl.uk.nr + 16 + 15) / 16 * 16;
    for (int64_t n = lo; n < hi; n++)
      pd_conv2d_packed_forward(&g, &pl, (const float *)PD_T(padded)(&g, &pl, x + n * chw), (const float *)b, bp, ct,
                               (float *)(y + n * M * P));
    return;
  }
  if (sizeof(T) == sizeof(float) && pl.direct) {
    for (int64_t n = lo; n < hi; n++)
      pd_conv2d_direct_forward(&g, &pl, (const float *)PD_T(padded)(&g, &pl, x + n * chw), (const float *)w,
                               (const float *)b, (float *)(y + n * M * P));
    return;
  }
  for (int64_t n0 = lo; n0 < hi; n0 += pl.nb) {
    const int64_t cnt = hi - n0 < pl.nb ? hi - n0 : pl.nb, cols = cnt * P;
    const T *src = col;
    int64_t ld = pl.ld;
    if (col)
      for (int64_t i = 0; i < cnt; i++) PD_T(im2col)(&g, &pl, x + (n0 + i) * chw, col + i * P);
    else
      src = x + n0 * chw, ld = P;
    T *dst = cnt == 1 ? y + n0 * M * P : stage;
    const int64_t ldd = cnt == 1 ? P : pl.ld;
    if (cnt == 1 && b)
      for (int64_t m = 0; m < M; m++)
        for (int64_t p = 0; p < P; p++) dst[m * P + p] = b[m];
    for (int64_t gr = 0; gr < g.groups; gr++) {
      PD_T(pd_gemm)
      (false, false, g.mg, cols, g.kg, 1, w + gr * g.mg * g.kg, g.kg, src + gr * g.kg * ld, ld, cnt == 1 && b ? 1 : 0,
       dst + gr * g.mg * ldd, ldd);
    }
    if (cnt > 1)
      for (int64_t i = 0; i < cnt; i++)
        for (int64_t m = 0; m < M; m++) {
          T *o = y + ((n0 + i) * M + m) * P, bm = b ? b[m] : 0;
          const T *s = stage + m * ldd + i * P;
          for (int64_t p = 0; p < P; p++) o[p] = s[p] + bm;
        }
  }
}

static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, INPUT), *bt = pd_in(c, BIAS);
  geom g;
  plan pl;
  pd_status st = get_geom(c, xt, &g);
  if (st) return st;
  const pd_wino_form *wf = wino_form(&g);
  if (wf)
    return PD_T(pd_wino_forward)(c, &g, wf, conv_parts(&g), PD_DATA(xt, T), PD_DATA(pd_in(c, FILTER), T),
                                 bt ? PD_DATA(bt, T) : NULL, PD_DATA(pd_out(c, OUTPUT), T));
  st = make_plan(c, &g, xt->dtype, false, &pl);
  if (st) return st;
  job j = {.g = &g,
           .pl = &pl,
           .x = PD_DATA(xt, T),
           .w = PD_DATA(pd_in(c, FILTER), T),
           .b = bt ? PD_DATA(bt, T) : NULL,
           .y = PD_DATA(pd_out(c, OUTPUT), T)};
  if (sizeof(T) == sizeof(float) && pl.packed) {
    pack_filter(&g, &pl.uk, (const float *)j.w, pl.wpack);
    pd_conv2d_tap_offsets(&g, &pl, pl.offs);
  }
  pd_parallel_run(pl.parts, PD_T(forward_part), &j);
  return PD_OK;
}

/* sum of n values, in 16 interleaved partial sums (so it vectorises,
 * in a fixed order) */
static T PD_T(sum)(const T *v, int64_t n) {
  T part[16] = {0}, s = 0;
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    for (int l = 0; l < 16; l++) part[l] += v[k + l];
  for (; k < n; k++) s += v[k];
  for (int l = 0; l < 16; l++) s += part[l];
  return s;
}

static void PD_T(backward_part)(void *arg, int t, int nt) {
  const job *j = arg;
  const geom g = *j->g;
  plan pl = part_plan(j->pl, t, sizeof(T));
  const T *x = j->x, *w = j->w, *dy = j->dy;
  T *dx = j->dx, *dw = j->dw ? pl.dw : NULL, *db = j->db ? (t ? pl.db : j->db) : NULL;
  T *col = pl.col, *stage = pl.stage;
  const int64_t chw = g.c * g.h * g.w, P = g.p, M = g.m;
  int64_t lo, hi;
  pd_parallel_range(g.n, t, nt, &lo, &hi);
  if (db) memset(db, 0, sizeof(T) * (size_t)M);
  if (dw && lo == hi) memset(dw, 0, sizeof(T) * (size_t)(M * g.kg));
  for (int64_t n0 = lo; n0 < hi; n0 += pl.nb) {
    const int64_t cnt = hi - n0 < pl.nb ? hi - n0 : pl.nb, cols = cnt * P;
    const T *gy = dy + n0 * M * P;
    int64_t ldy = P;
    /* one pass over the chunk's dOut: the bias sums, and the gather */
    for (int64_t i = 0; i < cnt; i++)
      for (int64_t m = 0; m < M; m++) {
        const T *row = gy + (i * M + m) * P;
        if (db) db[m] += PD_T(sum)(row, P);
        if (cnt > 1) memcpy(stage + m * pl.ld + i * P, row, sizeof(T) * (size_t)P);
      }
    if (cnt > 1) gy = stage, ldy = pl.ld;
    if (dw && sizeof(T) == sizeof(float) && pl.direct) {
      if (n0 == lo) memset(pl.dacc, 0, sizeof(float) * (size_t)(M * g.kg * 16));
      for (int64_t i = 0; i < cnt; i++)
        pd_conv2d_direct_dfilter(&g, &pl, (const float *)PD_T(padded)(&g, &pl, x + (n0 + i) * chw),
                                 (const float *)(dy + (n0 + i) * M * P), (float *)pl.dacc);
      if (n0 + cnt >= hi) pd_conv2d_direct_dfilter_sum(&g, (const float *)pl.dacc, (float *)dw);
    } else if (dw) {
      const T *src = col;
      int64_t ld = pl.ld;
      if (col)
        for (int64_t i = 0; i < cnt; i++) PD_T(im2col)(&g, &pl, x + (n0 + i) * chw, col + i * P);
      else
        src = x + n0 * chw, ld = P;
      for (int64_t gr = 0; gr < g.groups; gr++) {
        PD_T(pd_gemm)
        (false, true, g.kg, g.mg, cols, 1, src + gr * g.kg * ld, ld, gy + gr * g.mg * ldy, ldy, n0 == lo ? 0 : 1,
         dw + gr * g.mg * g.kg, g.mg);
      }
    }
    if (dx) {
      T *dst = col ? col : dx + n0 * chw;
      const int64_t ld = col ? pl.ld : P;
      for (int64_t gr = 0; gr < g.groups; gr++) {
        PD_T(pd_gemm)
        (true, false, g.kg, cols, g.mg, 1, w + gr * g.mg * g.kg, g.kg, gy + gr * g.mg * ldy, ldy, 0,
         dst + gr * g.kg * ld, ld);
      }
      if (col)
        for (int64_t i = 0; i < cnt; i++) PD_T(col2im)(&g, &pl, col + i * P, dx + (n0 + i) * chw);
    }
  }
}

static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, G_INPUT), *dxt = pd_out(c, INPUT), *dwt = pd_out(c, FILTER), *dbt = pd_out(c, BIAS);
  geom g;
  plan pl;
  pd_status st = get_geom(c, xt, &g);
  if (st) return st;
  const pd_wino_form *wf = wino_form(&g);
  if (wf)
    return PD_T(pd_wino_backward)(c, &g, wf, conv_parts(&g), PD_DATA(xt, T), PD_DATA(pd_in(c, G_FILTER), T),
                                  PD_DATA(pd_in(c, G_DOUT), T), dxt ? PD_DATA(dxt, T) : NULL,
                                  dwt ? PD_DATA(dwt, T) : NULL, dbt ? PD_DATA(dbt, T) : NULL);
  st = make_plan(c, &g, xt->dtype, true, &pl);
  if (st) return st;
  job j = {.g = &g,
           .pl = &pl,
           .x = PD_DATA(xt, T),
           .w = PD_DATA(pd_in(c, G_FILTER), T),
           .dy = PD_DATA(pd_in(c, G_DOUT), T),
           .dx = dxt ? PD_DATA(dxt, T) : NULL,
           .dw = dwt ? PD_DATA(dwt, T) : NULL,
           .db = dbt ? PD_DATA(dbt, T) : NULL};
  pd_parallel_run(pl.parts, PD_T(backward_part), &j);
  /* the parts' sums, added in part order (dFilter's transposed back: part 0's copied, the others added) */
  T *dw = j.dw, *db = j.db;
  for (int t = 0; t < pl.parts; t++) {
    const plan p = part_plan(&pl, t, sizeof(T));
    const T *pw = p.dw;
    if (dw)
      for (int64_t gr = 0; gr < g.groups; gr++, pw += g.mg * g.kg)
        for (int64_t k = 0; k < g.kg; k++)
          for (int64_t m = 0; m < g.mg; m++) {
            T *d = dw + gr * g.mg * g.kg + m * g.kg + k;
            *d = t ? *d + pw[k * g.mg + m] : pw[k * g.mg + m];
          }
    if (db && t)
      for (int64_t k = 0; k < g.m; k++) db[k] += ((const T *)p.db)[k];
  }
  return PD_OK;
}
