/* act_t.h — an activation over a row, for one element type T (base/tmpl.h):
 * act.h includes this file once for float and once for double, giving
 * pd_act_forward_float, pd_act_backward_double and so on. */

static inline void PD_T(pd_act_forward)(pd_act a, const T *x, T *y, int64_t n) {
  switch (a) {
  case PD_ACT_NONE:
    if (x != y) memcpy(y, x, (size_t)n * sizeof(T));
    break;
  case PD_ACT_RELU:
    for (int64_t i = 0; i < n; i++) y[i] = PD_T(pd_relu)(x[i]);
    break;
  case PD_ACT_SIGMOID:
    PD_T(pd_act_sigmoid_row)(x, y, n);
    break;
  case PD_ACT_TANH:
    PD_T(pd_act_tanh_row)(x, y, n);
    break;
  }
}

/* dx = dy * act'(x), expressed through y = act(x). */
static inline void PD_T(pd_act_backward)(pd_act a, const T *y, const T *dy, T *dx, int64_t n) {
  switch (a) {
  case PD_ACT_NONE:
    if (dx != dy) memcpy(dx, dy, (size_t)n * sizeof(T));
    break;
  case PD_ACT_RELU:
    for (int64_t i = 0; i < n; i++) dx[i] = PD_T(pd_relu_grad)(y[i], dy[i]);
    break;
  case PD_ACT_SIGMOID:
    for (int64_t i = 0; i < n; i++) dx[i] = PD_T(pd_sigmoid_grad)(y[i], dy[i]);
    break;
  case PD_ACT_TANH:
    for (int64_t i = 0; i < n; i++) dx[i] = PD_T(pd_tanh_grad)(y[i], dy[i]);
    break;
  }
}
