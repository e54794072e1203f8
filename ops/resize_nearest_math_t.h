/* resize_nearest_math_t.h — resize_nearest's per-element forward and
 * backward for one element type T (base/tmpl.h), as PD_HD functions:
 * resize_nearest.h includes this file once for float and once for double. */

/* Out's flat element o. */
PD_HD T PD_T(pd_rn_out)(const T *x, const pd_rn_geom *g, int64_t o) {
  int64_t ow = o % g->wo, oh = (o / g->wo) % g->ho, p = o / (g->wo * g->ho);
  return x[(p * g->h + pd_rn_src(oh, g->sh, g->h)) * g->w + pd_rn_src(ow, g->sw, g->w)];
}

/* dX's flat element i: the sum of dOut over the block of outputs that read
 * it, row by row. */
PD_HD T PD_T(pd_rn_grad_at)(const T *dy, const pd_rn_geom *g, int64_t i) {
  int64_t iw = i % g->w, ih = (i / g->w) % g->h, p = i / (g->w * g->h);
  int64_t h0 = pd_rn_first(ih, g->sh, g->h, g->ho), h1 = pd_rn_first(ih + 1, g->sh, g->h, g->ho);
  int64_t w0 = pd_rn_first(iw, g->sw, g->w, g->wo), w1 = pd_rn_first(iw + 1, g->sw, g->w, g->wo);
  const T *d = dy + p * g->ho * g->wo;
  T acc = 0;
  for (int64_t oh = h0; oh < h1; oh++)
    for (int64_t ow = w0; ow < w1; ow++) acc += d[oh * g->wo + ow];
  return acc;
}
