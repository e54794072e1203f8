/* dropout_t.h — dropout's CPU kernels for one element type T (base/tmpl.h):
 * dropout.c includes this file once for float and once for double. */

/* mask ~ Bernoulli(1 - p): element i is kept when the i-th uniform draw of
 * the stream is >= p. */
static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X);
  const T *x = PD_DATA(xt, T);
  T *out = PD_DATA(pd_out(c, OUT), T), *mask = PD_DATA(pd_out(c, MASK), T);
  int64_t n = pd_tensor_numel(xt);
  if (!pd_ctx_training(c)) {
    if (n > 0 && out != x) memcpy(out, x, (size_t)n * sizeof(T));
    for (int64_t i = 0; i < n; i++) mask[i] = 1;
    return PD_OK;
  }
  double p = pd_attr_f(c, A_PROB);
  T keep_scale = (T)(1 / (1 - p));
  uint64_t s = pd_ctx_rng_seed(c);
  for (int64_t i = 0; i < n; i++) {
    bool keep = pd_rng_uniform_at(s, (uint64_t)i) >= p;
    mask[i] = keep;
    out[i] = x[i] * (keep ? keep_scale : 0); /* NaN * 0 stays NaN */
  }
  return PD_OK;
}

/* dX = dOut · Mask / (1 - p) when training; dOut in inference. Mask is not
 * differentiable: a gradient into it is ignored (it is 0 almost everywhere). */
static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *dxt = pd_out(c, X), *dyt = pd_in(c, G_DOUT);
  if (!dxt) return PD_OK;
  T *dx = PD_DATA(dxt, T);
  const T *mask = PD_DATA(pd_in(c, G_MASK), T), *dy = dyt ? PD_DATA(dyt, T) : 0;
  int64_t n = pd_tensor_numel(dxt);
  T scale = (T)(pd_ctx_training(c) ? 1 / (1 - pd_attr_f(c, A_PROB)) : 1);
  for (int64_t i = 0; i < n; i++) dx[i] = dy ? dy[i] * mask[i] * scale : 0;
  return PD_OK;
}
