/* act_op_t.h — the CPU kernels of the activation ops (relu, sigmoid, tanh)
 * for one element type T (base/tmpl.h): act.h includes this file once for
 * float and once for double when PD_ACT_OP is defined. */

static void PD_T(pd_act_range_forward)(void *arg, int64_t lo, int64_t hi) {
  const pd_act_job *j = arg;
  PD_T(pd_act_forward)(j->a, (const T *)j->x + lo, (T *)j->y + lo, hi - lo);
}

static void PD_T(pd_act_range_backward)(void *arg, int64_t lo, int64_t hi) {
  const pd_act_job *j = arg; /* x: Out, y: dX */
  PD_T(pd_act_backward)(j->a, (const T *)j->x + lo, (const T *)j->dy + lo, (T *)j->y + lo, hi - lo);
}

static pd_status PD_T(pd_act_op_forward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, PD_ACT_X);
  pd_act_job j = {pd_act_of(c), PD_DATA(x, T), NULL, PD_DATA(pd_out(c, PD_ACT_OUT), T)};
  pd_parallel_for(pd_tensor_numel(x), PD_ELEMENTWISE_GRAIN, PD_T(pd_act_range_forward), &j);
  return PD_OK;
}

static pd_status PD_T(pd_act_op_backward)(pd_ctx *c) {
  pd_tensor *y = pd_in(c, PD_ACT_G_OUT), *dy = pd_in(c, PD_ACT_G_DOUT), *dx = pd_out(c, PD_ACT_G_DX);
  if (!dx) return PD_OK;
  pd_act_job j = {pd_act_of(c), PD_DATA(y, T), PD_DATA(dy, T), PD_DATA(dx, T)};
  pd_parallel_for(pd_tensor_numel(y), PD_ELEMENTWISE_GRAIN, PD_T(pd_act_range_backward), &j);
  return PD_OK;
}
