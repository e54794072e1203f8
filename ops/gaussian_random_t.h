/* gaussian_random_t.h — gaussian_random's CPU kernel for one element type T
 * (base/tmpl.h): gaussian_random.c includes this file once per type. */

static pd_status PD_T(draw)(pd_ctx *c) {
  pd_tensor *y = pd_out(c, OUT);
  T *out = PD_DATA(y, T);
  int64_t seed = pd_attr_i(c, A_SEED), n = pd_tensor_numel(y);
  uint64_t s = seed ? (uint64_t)seed : pd_ctx_rng_seed(c);
  double a = pd_attr_f(c, A_P1), b = pd_attr_f(c, A_P2);
  for (int64_t i = 0; i < n; i++) out[i] = (T)(a + b * pd_rng_gaussian_at(s, (uint64_t)i));
  return PD_OK;
}
