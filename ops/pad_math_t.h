/* pad_math_t.h — pad's per-element forward and backward for one element
 * type T (base/tmpl.h), as PD_HD functions: pad.h includes this file once
 * for float and once for double. */

/* Out's flat element o: the input element it reads, or value. */
PD_HD T PD_T(pd_pad_out)(const T *x, const pd_pad_geom *g, int64_t o, T value) {
  int64_t off = 0, mul = 1;
  for (int d = g->nd - 1; d >= 0; d--) {
    int64_t s = pd_pad_src(g->mode, o % g->out[d], g->in[d], g->pb[d]);
    if (s < 0) return value;
    off += s * mul;
    mul *= g->in[d];
    o /= g->out[d];
  }
  return x[off];
}

/* dX's flat element i: the sum of dOut over the outputs that read it, in
 * increasing output order (the spans of each dim, last dim fastest). */
PD_HD T PD_T(pd_pad_grad_at)(const T *dy, const pd_pad_geom *g, int64_t i) {
  int64_t lo[PD_MAX_DIMS][3], hi[PD_MAX_DIMS][3], pos[PD_MAX_DIMS];
  int ns[PD_MAX_DIMS], si[PD_MAX_DIMS];
  for (int d = g->nd - 1; d >= 0; d--) {
    ns[d] = pd_pad_spans(g->mode, i % g->in[d], g->in[d], g->pb[d], g->pe[d], lo[d], hi[d]);
    i /= g->in[d];
    si[d] = 0;
    pos[d] = lo[d][0];
  }
  T acc = 0;
  for (;;) {
    int64_t off = 0;
    for (int d = 0; d < g->nd; d++) off = off * g->out[d] + pos[d];
    acc += dy[off];
    int d = g->nd - 1;
    for (; d >= 0; d--) { /* the next output: an odometer over the dims' spans */
      if (++pos[d] < hi[d][si[d]]) break;
      if (++si[d] < ns[d]) {
        pos[d] = lo[d][si[d]];
        break;
      }
      si[d] = 0;
      pos[d] = lo[d][0];
    }
    if (d < 0) return acc;
  }
}
