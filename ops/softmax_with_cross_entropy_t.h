/* softmax_with_cross_entropy_t.h — the op's CPU kernels for one element
 * type T (base/tmpl.h): softmax_with_cross_entropy.c includes this file
 * once for float and once for double. */

/* A row's max and sum over 8 running lanes (the loops vectorise; one
 * running value waits on each element's compare or add). A NaN in z[0]
 * gives a NaN max, one elsewhere is passed over (and reaches the sum
 * through exp). */
static inline T PD_T(swce_max)(const T *z, int64_t k) {
  T lane[8];
  int64_t j = 0;
  for (int l = 0; l < 8; l++) lane[l] = z[0];
  for (; j + 8 <= k; j += 8)
    for (int l = 0; l < 8; l++) lane[l] = z[j + l] > lane[l] ? z[j + l] : lane[l];
  T m = lane[0];
  for (int l = 1; l < 8; l++) m = lane[l] > m ? lane[l] : m;
  for (; j < k; j++) m = z[j] > m ? z[j] : m;
  return m;
}
static inline T PD_T(swce_sum)(const T *s, int64_t k) {
  T lane[8] = {0};
  int64_t j = 0;
  for (; j + 8 <= k; j += 8)
    for (int l = 0; l < 8; l++) lane[l] += s[j + l];
  T sum = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
  for (; j < k; j++) sum += s[j];
  return sum;
}

/* Per row: Softmax, and Loss from lse - Z[j] = (m - Z[j]) + log(sum), which keeps
 * the big terms apart (m and Z[j] cancel exactly; log(sum) is in [0, log C]). */
static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *zt = pd_in(c, LOGITS), *lt = pd_in(c, LABEL);
  int64_t n, k;
  pd_lastdim_rows(zt, &n, &k);
  bool soft = pd_attr_b(c, A_SOFT);
  const int64_t *label = soft ? NULL : PD_DATA(lt, int64_t);
  const T *soft_l = soft ? PD_DATA(lt, T) : NULL;
  if (!soft) {
    pd_status st = check_range(c, zt, label, n, k);
    if (st) return st;
  }
  const T *z = PD_DATA(zt, T);
  T *s = PD_DATA(pd_out(c, SOFTMAX), T), *loss = PD_DATA(pd_out(c, LOSS), T);
  for (int64_t i = 0; i < n; i++, z += k, s += k) {
    T m = PD_T(swce_max)(z, k);
    for (int64_t j = 0; j < k; j++) s[j] = z[j] - m;
    PD_T(swce_exp)(s, k);
    T sum = PD_T(swce_sum)(s, k);
    T log_sum = log(sum), inv = 1 / sum;
    for (int64_t j = 0; j < k; j++) s[j] *= inv;
    if (!soft) {
      loss[i] = PD_T(pd_swce_term)(m, z[label[i]], log_sum);
      continue;
    }
    T acc = 0;
    for (int64_t j = 0; j < k; j++) acc += soft_l[i * k + j] * PD_T(pd_swce_term)(m, z[j], log_sum);
    loss[i] = acc;
  }
  return PD_OK;
}

/* dZ = (S sum_j L_j - L) dLoss (hard labels: S - onehot), plus, when a
 * gradient reaches the Softmax output too, the softmax backward
 * S (dS - <dS, S>). */
static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *smt = pd_in(c, G_SOFTMAX), *lt = pd_in(c, G_LABEL);
  pd_tensor *dst = pd_in(c, G_DSOFTMAX), *dlt = pd_in(c, G_DLOSS), *dzt = pd_out(c, G_DLOGITS);
  if (!dzt) return PD_OK;
  int64_t n, k;
  pd_lastdim_rows(smt, &n, &k);
  bool soft = pd_attr_b(c, A_SOFT);
  const int64_t *label = soft ? NULL : PD_DATA(lt, int64_t);
  const T *soft_l = soft ? PD_DATA(lt, T) : NULL;
  if (!soft) {
    pd_status st = check_range(c, smt, label, n, k);
    if (st) return st;
  }
  const T *s = PD_DATA(smt, T), *ds = dst ? PD_DATA(dst, T) : NULL;
  const T *dloss = dlt ? PD_DATA(dlt, T) : NULL;
  T *dz = PD_DATA(dzt, T);
  for (int64_t i = 0; i < n; i++, s += k, dz += k) {
    T g = dloss ? dloss[i] : 0;
    if (soft) {
      const T *l = soft_l + i * k;
      T mass = 0;
      for (int64_t j = 0; j < k; j++) mass += l[j];
      for (int64_t j = 0; j < k; j++) dz[j] = PD_T(pd_swce_soft_grad)(s[j], l[j], mass, g);
    } else { /* every column, then the label's again: the loop vectorises (the same values) */
      for (int64_t j = 0; j < k; j++) dz[j] = PD_T(pd_swce_hard_grad)(s[j], g, false);
      dz[label[i]] = PD_T(pd_swce_hard_grad)(s[label[i]], g, true);
    }
    if (ds) {
      const T *dsi = ds + i * k;
      T dot = 0;
      for (int64_t j = 0; j < k; j++) dot += dsi[j] * s[j];
      for (int64_t j = 0; j < k; j++) dz[j] += PD_T(pd_softmax_grad)(s[j], dsi[j], dot);
    }
  }
  return PD_OK;
}
