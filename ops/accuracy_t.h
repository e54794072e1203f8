/* accuracy_t.h — accuracy's CPU kernel for one element type T (base/tmpl.h):
 * accuracy.c includes this file once for float and once for double. */

static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, SCORES), *ct = pd_out(c, CORRECT), *tt = pd_out(c, TOTAL);
  int64_t n = xt->dims[0], k = xt->dims[1], topk = pd_attr_i(c, A_K), correct = 0;
  const int64_t *label = PD_DATA(pd_in(c, LABEL), int64_t);
  pd_status st = pd_label_check_range(c, label, n, k);
  if (st) return st;
  const T *x = PD_DATA(xt, T);
  for (int64_t i = 0; i < n; i++, x += k) correct += PD_T(pd_acc_row)(x, k, label[i], topk);
  PD_DATA(pd_out(c, ACCURACY), T)[0] = (T)(n > 0 ? (double)correct / (double)n : 0);
  if (ct) PD_DATA(ct, int64_t)[0] = correct;
  if (tt) PD_DATA(tt, int64_t)[0] = n;
  return PD_OK;
}
