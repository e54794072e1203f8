/* cross_entropy_t.h — cross_entropy's CPU kernels for one element type T
 * (base/tmpl.h): cross_entropy.c includes this file once for float and once
 * for double. */

static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X), *lt = pd_in(c, LABEL);
  int64_t n = xt->dims[0], k = xt->dims[1];
  const T *x = PD_DATA(xt, T);
  T *out = PD_DATA(pd_out(c, OUT), T);
  if (pd_attr_b(c, A_SOFT)) {
    const T *l = PD_DATA(lt, T);
    for (int64_t i = 0; i < n; i++) out[i] = PD_T(pd_ce_soft_row)(x + i * k, l + i * k, k);
    return PD_OK;
  }
  const int64_t *label = PD_DATA(lt, int64_t);
  pd_status st = pd_label_check_range(c, label, n, k);
  if (st) return st;
  for (int64_t i = 0; i < n; i++) out[i] = PD_T(pd_ce_hard)(x[i * k + label[i]]);
  return PD_OK;
}

static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, G_X), *lt = pd_in(c, G_LABEL), *dyt = pd_in(c, G_DOUT);
  pd_tensor *dxt = pd_out(c, G_DX);
  if (!dxt) return PD_OK;
  int64_t n = xt->dims[0], k = xt->dims[1];
  const T *x = PD_DATA(xt, T), *dy = dyt ? PD_DATA(dyt, T) : NULL;
  T *dx = PD_DATA(dxt, T);
  bool soft = pd_attr_b(c, A_SOFT);
  if (soft) {
    const T *l = PD_DATA(lt, T);
    for (int64_t i = 0; i < n * k; i++) dx[i] = dy ? PD_T(pd_ce_soft_grad)(dy[i / k], l[i], x[i]) : 0;
    return PD_OK;
  }
  const int64_t *label = PD_DATA(lt, int64_t);
  pd_status st = pd_label_check_range(c, label, n, k);
  if (st) return st;
  for (int64_t i = 0; i < n * k; i++) dx[i] = 0;
  for (int64_t i = 0; dy && i < n; i++) {
    int64_t j = i * k + label[i];
    dx[j] = PD_T(pd_ce_hard_grad)(dy[i], x[j], true);
  }
  return PD_OK;
}
