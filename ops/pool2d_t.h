/* pool2d_t.h — pool2d's CPU kernels for one element type T (base/tmpl.h):
 * pool2d.c includes this file once for float and once for double. */

/* Forward pools each output row in two passes, both windows being
 * rectangles: first down the window's rows, whole input rows at a time
 * (red[w] = max or sum over ih of x[ih, w], vectorised), then across each
 * output's columns of red. Max is exact in any order; a sum goes rows first.
 * Backward max scans the window for the index of its first maximum in
 * row-major order (a strict > scan, branch-free: the comparisons are
 * unpredictable), so ties go to the earliest element; the 2x2 path picks
 * the same element by arithmetic on the comparisons. Backward avg mirrors
 * the forward: across, share[w] = sum over the outputs whose columns hold w
 * of dOut / count, then down: dX[ih, :] += share for the window's rows. */
static void PD_T(forward_part)(void *arg, int part, int nparts) {
  const job *j = arg;
  const geom g = *j->g;
  int64_t lo, hi;
  pd_parallel_range(g.n * g.c, part, nparts, &lo, &hi);
  const T *x = (const T *)j->x + lo * g.h * g.w;
  T *y = (T *)j->y + lo * g.ho * g.wo, *red = (T *)j->scratch + part * row_stride(&g);
  const bool max2x2 = is_max2x2(&g);
  for (int64_t pl = lo; pl < hi; pl++, x += g.h * g.w) {
    if (max2x2 && PD_T(max2x2_plane)(x, g.w, g.ho, g.wo, y)) { /* AVX2, no NaN */
      y += g.ho * g.wo;
      continue;
    }
    /* whether the plane holds a NaN (one vectorised pass, in cache for the pooling): the plain max is fast,
     * pd_max keeps NaN but its blend is slower */
    int nan = 0;
    if (!g.avg)
      for (int64_t i = 0; i < g.h * g.w; i++) nan |= x[i] != x[i];
    for (int64_t oh = 0; oh < g.ho; oh++) {
      pd_span r = pd_pool_clip(oh, g.kh, g.sh, g.ph, g.h, g.exclusive);
      memcpy(red, x + r.lo * g.w, sizeof(T) * (size_t)g.w);
      for (int64_t ih = r.lo + 1; ih < r.hi; ih++) {
        const T *row = x + ih * g.w;
        if (g.avg)
          for (int64_t iw = 0; iw < g.w; iw++) red[iw] += row[iw];
        else if (nan)
          for (int64_t iw = 0; iw < g.w; iw++) red[iw] = PD_T(pd_max)(row[iw], red[iw]);
        else
          for (int64_t iw = 0; iw < g.w; iw++) red[iw] = row[iw] > red[iw] ? row[iw] : red[iw];
      }
      if (max2x2) { /* pairs side by side, vectorisable */
        if (nan)
          for (int64_t ow = 0; ow < g.wo; ow++) y[ow] = PD_T(pd_max)(red[2 * ow + 1], red[2 * ow]);
        else
          for (int64_t ow = 0; ow < g.wo; ow++) y[ow] = red[2 * ow + 1] > red[2 * ow] ? red[2 * ow + 1] : red[2 * ow];
        y += g.wo;
        continue;
      }
      for (int64_t ow = 0; ow < g.wo; ow++, y++) {
        pd_span q = pd_pool_clip(ow, g.kw, g.sw, g.pw, g.w, g.exclusive);
        T v = red[q.lo];
        if (g.avg) {
          for (int64_t iw = q.lo + 1; iw < q.hi; iw++) v += red[iw];
          v /= (T)(r.count * q.count);
        } else if (nan) {
          for (int64_t iw = q.lo + 1; iw < q.hi; iw++) v = PD_T(pd_max)(red[iw], v);
        } else {
          for (int64_t iw = q.lo + 1; iw < q.hi; iw++) v = red[iw] > v ? red[iw] : v;
        }
        *y = v;
      }
    }
  }
}

static pd_status PD_T(forward)(pd_ctx *c) {
  geom g;
  pd_status st = get_geom(c, pd_in(c, X), &g);
  const int parts = st ? 1 : plane_parts(&g);
  void *red = st ? NULL : scratch(c, pd_in(c, X)->dtype, parts * row_stride(&g), &st);
  if (st) return st;
  job j = {&g, PD_DATA(pd_in(c, X), T), NULL, PD_DATA(pd_out(c, OUT), T), red};
  pd_parallel_run(parts, PD_T(forward_part), &j);
  return PD_OK;
}

static void PD_T(backward_part)(void *arg, int part, int nparts) {
  const job *j = arg;
  const geom g = *j->g;
  int64_t lo, hi;
  pd_parallel_range(g.n * g.c, part, nparts, &lo, &hi);
  const T *x = (const T *)j->x + lo * g.h * g.w, *dy = (const T *)j->dy + lo * g.ho * g.wo;
  T *dx = (T *)j->y + lo * g.h * g.w, *share = j->scratch ? (T *)j->scratch + part * row_stride(&g) : NULL;
  const bool max2x2 = is_max2x2(&g);
  /* 2x2: each pair of dX rows is zeroed just before its scatter, while in cache (a memset of the whole part
   * first leaves the rows to be fetched again) */
  if (!max2x2) memset(dx, 0, sizeof(T) * (size_t)((hi - lo) * g.h * g.w));
  for (int64_t pl = lo; pl < hi; pl++, x += g.h * g.w, dx += g.h * g.w) {
    if (max2x2 && 2 * g.ho < g.h) /* rows below the last window */
      memset(dx + 2 * g.ho * g.w, 0, sizeof(T) * (size_t)((g.h - 2 * g.ho) * g.w));
    for (int64_t oh = 0; oh < g.ho; oh++, dy += g.wo) {
      pd_span r = pd_pool_clip(oh, g.kh, g.sh, g.ph, g.h, g.exclusive);
      if (max2x2) { /* the first of the 4 in row-major order that is largest takes dOut */
        const T *a = x + 2 * oh * g.w, *b = a + g.w;
        T *d = dx + 2 * oh * g.w;
        if (g.wo >= 8 && PD_T(max2x2_grad_rows)(a, b, dy, g.w, g.wo, d, d + g.w)) continue; /* AVX2, no NaN */
        memset(d, 0, sizeof(T) * (size_t)(2 * g.w));
        int nan = 0; /* any NaN in the two rows (vectorised): the rare case has a loop of its own */
        for (int64_t iw = 0; iw < 2 * g.wo; iw++) nan |= (a[iw] != a[iw]) | (b[iw] != b[iw]);
        for (int64_t ow = 0; ow < g.wo && !nan; ow++) {
          /* k: which of the 4, by arithmetic (branches mispredict here) */
          T v0 = a[2 * ow], v1 = a[2 * ow + 1], v2 = b[2 * ow], v3 = b[2 * ow + 1];
          int64_t k = v1 > v0;
          T best = v1 > v0 ? v1 : v0;
          int64_t gt2 = v2 > best;
          best = v2 > best ? v2 : best;
          k += (2 - k) * gt2;
          k += (3 - k) * (int64_t)(v3 > best);
          d[(k >> 1) * g.w + 2 * ow + (k & 1)] = dy[ow];
        }
        for (int64_t ow = 0; ow < g.wo && nan; ow++) { /* the first NaN of a window holding one */
          const T *w4[4] = {a + 2 * ow, a + 2 * ow + 1, b + 2 * ow, b + 2 * ow + 1};
          int64_t k = 0;
          for (int i = 1; i < 4; i++)
            if (PD_T(pd_nan_gt)(*w4[i], *w4[k])) k = i;
          d[(k >> 1) * g.w + 2 * ow + (k & 1)] = dy[ow];
        }
        continue;
      }
      if (g.avg) {
        memset(share, 0, sizeof(T) * (size_t)g.w);
        for (int64_t ow = 0; ow < g.wo; ow++) {
          pd_span q = pd_pool_clip(ow, g.kw, g.sw, g.pw, g.w, g.exclusive);
          T v = dy[ow] / (T)(r.count * q.count);
          for (int64_t iw = q.lo; iw < q.hi; iw++) share[iw] += v;
        }
        for (int64_t ih = r.lo; ih < r.hi; ih++) {
          T *row = dx + ih * g.w;
          for (int64_t iw = 0; iw < g.w; iw++) row[iw] += share[iw];
        }
        continue;
      }
      for (int64_t ow = 0; ow < g.wo; ow++) {
        pd_span q = pd_pool_clip(ow, g.kw, g.sw, g.pw, g.w, g.exclusive);
        int64_t at = r.lo * g.w + q.lo, nan_at = -1; /* the first maximum; the first NaN */
        T best = x[at];
        for (int64_t ih = r.lo; ih < r.hi; ih++)
          for (int64_t iw = q.lo; iw < q.hi; iw++) {
            T v = x[ih * g.w + iw];
            bool gt = v > best;
            best = gt ? v : best;
            at = gt ? ih * g.w + iw : at;
            nan_at = ((v != v) & (nan_at < 0)) ? ih * g.w + iw : nan_at;
          }
        if (nan_at >= 0) at = nan_at;
        dx[at] += dy[ow];
      }
    }
  }
}

static pd_status PD_T(backward)(pd_ctx *c) {
  geom g;
  pd_status st = get_geom(c, pd_in(c, G_X), &g);
  const int parts = st ? 1 : plane_parts(&g);
  void *share = st || !g.avg ? NULL : scratch(c, pd_in(c, G_X)->dtype, parts * row_stride(&g), &st);
  if (st) return st;
  job j = {&g, PD_DATA(pd_in(c, G_X), T), PD_DATA(pd_in(c, G_DOUT), T), PD_DATA(pd_out(c, G_DX), T), share};
  pd_parallel_run(parts, PD_T(backward_part), &j);
  return PD_OK;
}
