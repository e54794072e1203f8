/* scale_t.h — scale's CPU kernels for one element type T (base/tmpl.h):
 * scale.c includes this file once for float and once for double. */

typedef struct PD_T(scale_job) {
  const T *x;
  T *out, a, d;
} PD_T(scale_job);

static void PD_T(range)(void *arg, int64_t lo, int64_t hi) {
  const PD_T(scale_job) *j = arg; /* in locals: out could alias *j, for all the compiler knows */
  const T *x = j->x, a = j->a, d = j->d;
  T *out = j->out;
  for (int64_t i = lo; i < hi; i++) out[i] = PD_T(pd_scale)(x[i], a, d);
}

static void PD_T(grad_range)(void *arg, int64_t lo, int64_t hi) {
  const PD_T(scale_job) *j = arg;
  const T *x = j->x, a = j->a;
  T *out = j->out;
  for (int64_t i = lo; i < hi; i++) out[i] = a * x[i];
}

static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  double s = pd_attr_f(c, A_SCALE), b = pd_attr_f(c, A_BIAS);
  PD_T(scale_job) j = {PD_DATA(x, T), PD_DATA(pd_out(c, OUT), T), (T)s, (T)(pd_attr_b(c, A_AFTER) ? b : s * b)};
  pd_parallel_for(pd_tensor_numel(x), PD_ELEMENTWISE_GRAIN, PD_T(range), &j);
  return PD_OK;
}

static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *dy = pd_in(c, G_DOUT), *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  PD_T(scale_job) j = {PD_DATA(dy, T), PD_DATA(dx, T), (T)pd_attr_f(c, A_SCALE), 0};
  pd_parallel_for(pd_tensor_numel(dy), PD_ELEMENTWISE_GRAIN, PD_T(grad_range), &j);
  return PD_OK;
}
