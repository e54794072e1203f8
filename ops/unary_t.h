/* unary_t.h — the CPU kernels of leaky_relu, gelu, softplus and clip for
 * one element type T (base/tmpl.h): unary.h includes this file once for
 * float and once for double when PD_UNARY_OP is defined. */

static void PD_T(pd_unary_range_forward)(void *arg, int64_t lo, int64_t hi) {
  const pd_unary_job *j = arg;
  pd_unary_p p = j->p;
  const T *x = j->x;
  T *y = j->y;
  for (int64_t i = lo; i < hi; i++) y[i] = PD_T(pd_unary)(p, x[i]);
}

static void PD_T(pd_unary_range_backward)(void *arg, int64_t lo, int64_t hi) {
  const pd_unary_job *j = arg; /* y: dX */
  pd_unary_p p = j->p;
  const T *x = j->x, *dy = j->dy;
  T *dx = j->y;
  for (int64_t i = lo; i < hi; i++) dx[i] = PD_T(pd_unary_grad)(p, x[i], dy[i]);
}

static pd_status PD_T(pd_unary_forward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  pd_unary_job j = {pd_unary_params(c), PD_DATA(x, T), NULL, PD_DATA(pd_out(c, OUT), T)};
  pd_parallel_for(pd_tensor_numel(x), PD_ELEMENTWISE_GRAIN, PD_T(pd_unary_range_forward), &j);
  return PD_OK;
}

static pd_status PD_T(pd_unary_backward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, G_X), *dy = pd_in(c, G_DOUT), *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  pd_unary_job j = {pd_unary_params(c), PD_DATA(x, T), PD_DATA(dy, T), PD_DATA(dx, T)};
  pd_parallel_for(pd_tensor_numel(x), PD_ELEMENTWISE_GRAIN, PD_T(pd_unary_range_backward), &j);
  return PD_OK;
}
