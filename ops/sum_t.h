/* sum_t.h — sum's CPU kernels for one element type T (base/tmpl.h): sum.c
 * includes this file once for float and once for double. */

/* Out may be one of the inputs (gradients summed in place): start from that
 * one, then add the others. */
static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *y = pd_out(c, OUT);
  T *out = PD_DATA(y, T);
  int n = pd_in_count(c, X), base = 0;
  int64_t len = pd_tensor_numel(y);
  for (int i = 0; i < n; i++)
    if (PD_DATA(pd_in_at(c, X, i), T) == out) base = i;
  const T *b = PD_DATA(pd_in_at(c, X, base), T);
  if (b != out) memcpy(out, b, (size_t)len * sizeof(T));
  for (int i = 0; i < n; i++) {
    if (i == base) continue;
    const T *xi = PD_DATA(pd_in_at(c, X, i), T);
    for (int64_t k = 0; k < len; k++) out[k] += xi[k];
  }
  return PD_OK;
}

static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *dy = pd_in(c, G_DOUT);
  const T *g = PD_DATA(dy, T);
  size_t bytes = (size_t)pd_tensor_numel(dy) * sizeof(T);
  for (int i = 0; i < pd_out_count(c, G_DX); i++) {
    pd_tensor *dx = pd_out_at(c, G_DX, i);
    if (dx && PD_DATA(dx, T) != g) memcpy(PD_DATA(dx, T), g, bytes);
  }
  return PD_OK;
}
