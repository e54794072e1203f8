/* clip_by_global_norm_t.h — clip_by_global_norm's CPU kernel for one element
 * type T (base/tmpl.h): clip_by_global_norm.c includes this file once for
 * float and once for double. */

/* The sum of x's squares in double, in CLIP_LANES running sums (element j
 * into sum j mod CLIP_LANES, each in order, then the sums in order): the
 * compiler keeps them in vector registers, where one running sum waited
 * for each add in turn (a char LM's 1.2 M gradient values: 0.86 ms on a
 * Zen 4 core, as long as the softmax and its gradient together). The same
 * bits on every CPU and for any threads. */
static double PD_T(sum_squares)(const T *x, int64_t len) {
  double acc[CLIP_LANES] = {0};
  int64_t j = 0;
  for (; j + CLIP_LANES <= len; j += CLIP_LANES)
    for (int k = 0; k < CLIP_LANES; k++) acc[k] += (double)x[j + k] * x[j + k];
  double sum = 0;
  for (int k = 0; k < CLIP_LANES; k++) sum += acc[k];
  for (; j < len; j++) sum += (double)x[j] * x[j];
  return sum;
}

static pd_status PD_T(forward)(pd_ctx *c) {
  int n = pd_in_count(c, X);
  double sum = 0;
  for (int i = 0; i < n; i++) {
    const pd_tensor *xt = pd_in_at(c, X, i);
    sum += PD_T(sum_squares)(PD_DATA(xt, T), pd_tensor_numel(xt));
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
