/* fill_constant_t.h — fill_constant's CPU kernel for one element type T
 * (base/tmpl.h): fill_constant.c includes this file once per dtype. */

static pd_status PD_T(fill)(pd_ctx *c) {
  pd_tensor *y = pd_out(c, OUT);
  T *out = PD_DATA(y, T), v = (T)pd_attr_f(c, A_VALUE);
  int64_t n = pd_tensor_numel(y);
  for (int64_t i = 0; i < n; i++) out[i] = v;
  return PD_OK;
}
