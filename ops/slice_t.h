/* slice_t.h — slice's CPU kernels for one element type T (base/tmpl.h):
 * slice.c includes this file once for float and once for double. Elements
 * are split among threads in ranges; each computes its own (slice.h's
 * math): forward by Out's element, backward by dX's (a gather). */

static void PD_T(fwd_range)(void *arg, int64_t lo, int64_t hi) {
  const job *j = arg;
  const T *x = j->x;
  T *y = j->y;
  for (int64_t o = lo; o < hi; o++) y[o] = x[pd_slice_src(j->g, j->first, o)];
}

static void PD_T(bwd_range)(void *arg, int64_t lo, int64_t hi) {
  const job *j = arg;
  const T *dy = j->x;
  T *dx = j->y;
  for (int64_t i = lo; i < hi; i++) {
    int64_t o = pd_slice_dst(j->g, j->first, i);
    dx[i] = o < 0 ? (T)0 : dy[o];
  }
}

static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  pd_slice_geom g = pd_slice_geom_of(c, x);
  int64_t first[PD_MAX_DIMS];
  pd_status st = firsts(c, &g, STARTS, first);
  if (st) return st;
  job j = {&g, first, PD_DATA(x, T), PD_DATA(pd_out(c, OUT), T)};
  pd_parallel_for(g.numel_out, PD_INDEXED_GRAIN, PD_T(fwd_range), &j);
  return PD_OK;
}

static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  pd_slice_geom g = pd_slice_geom_of(c, dx);
  int64_t first[PD_MAX_DIMS];
  pd_status st = firsts(c, &g, G_STARTS, first);
  if (st) return st;
  job j = {&g, first, PD_DATA(pd_in(c, G_DOUT), T), PD_DATA(dx, T)};
  pd_parallel_for(g.numel_in, PD_INDEXED_GRAIN, PD_T(bwd_range), &j);
  return PD_OK;
}
