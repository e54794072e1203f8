/* clip_by_global_norm_t.h — clip_by_global_norm's CPU kernel for one element
 * type T (base/tmpl.h): clip_by_global_norm.c includes this file once for
 * float and once for double. */

static pd_status PD_T(forward)(pd_ctx *c) {
  int n = pd_in_count(c, X);
  double sum = 0;
  for (int i = 0; i < n; i++) {
    const pd_tensor *xt = pd_in_at(c, X, i);
    const T *x = PD_DATA(xt, T);
    for (int64_t j = 0, len = pd_tensor_numel(xt); j < len; j++) sum += (double)x[j] * x[j];
  }
  T scale = (T)pd_clip_scale(sum, pd_attr_f(c, A_MAX_NORM));
  for (int i = 0; i < n; i++) {
    const pd_tensor *xt = pd_in_at(c, X, i);
    const T *x = PD_DATA(xt, T);
    T *out = PD_DATA(pd_out_at(c, OUT, i), T);
    if (scale == 1 && out == x) continue; /* in place, nothing to do */
    for (int64_t j = 0, len = pd_tensor_numel(xt); j < len; j++) out[j] = x[j] * scale;
  }
  return PD_OK;
}
