/* pad_t.h — pad's CPU kernels for one element type T (base/tmpl.h): pad.c
 * includes this file once for float and once for double. Elements are
 * split among threads in ranges; each computes its own (pad.h's math). */

static void PD_T(fwd_range)(void *arg, int64_t lo, int64_t hi) {
  const job *j = arg;
  const T *x = j->x;
  T *y = j->y, v = (T)j->value;
  for (int64_t o = lo; o < hi; o++) y[o] = PD_T(pd_pad_out)(x, j->g, o, v);
}

static void PD_T(bwd_range)(void *arg, int64_t lo, int64_t hi) {
  const job *j = arg;
  const T *dy = j->x;
  T *dx = j->y;
  for (int64_t i = lo; i < hi; i++) dx[i] = PD_T(pd_pad_grad_at)(dy, j->g, i);
}

static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  pd_pad_geom g = pd_pad_geom_of(c, x);
  job j = {&g, PD_DATA(x, T), PD_DATA(pd_out(c, OUT), T), pd_attr_f(c, A_VALUE)};
  pd_parallel_for(g.numel_out, PD_INDEXED_GRAIN, PD_T(fwd_range), &j);
  return PD_OK;
}

static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  pd_pad_geom g = pd_pad_geom_of(c, dx);
  job j = {&g, PD_DATA(pd_in(c, G_DOUT), T), PD_DATA(dx, T), 0};
  pd_parallel_for(g.numel_in, PD_INDEXED_GRAIN, PD_T(bwd_range), &j);
  return PD_OK;
}
