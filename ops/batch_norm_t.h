/* batch_norm_t.h — batch_norm's CPU kernels for one element type T
 * (base/tmpl.h): batch_norm.c includes this file once for float and once
 * for double. */

/* Sums over one row p[0..n) of a channel, in double, as four interleaved
 * partial sums: four short dependency chains instead of one long one, in the
 * same order on every call. */
static double PD_T(sum)(const T *p, int64_t n) {
  double a[4] = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= n; j += 4)
    for (int u = 0; u < 4; u++) a[u] += p[j + u];
  for (; j < n; j++) a[0] += p[j];
  return (a[0] + a[1]) + (a[2] + a[3]);
}
static double PD_T(sum_sq)(const T *p, int64_t n, double mean) {
  double a[4] = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= n; j += 4)
    for (int u = 0; u < 4; u++) a[u] += (p[j + u] - mean) * (p[j + u] - mean);
  for (; j < n; j++) a[0] += (p[j] - mean) * (p[j] - mean);
  return (a[0] + a[1]) + (a[2] + a[3]);
}
/* adds Σ g and Σ g · (p - mean) */
static void PD_T(sum_g)(const T *g, const T *p, int64_t n, double mean, double *sg, double *sgx) {
  double a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= n; j += 4)
    for (int u = 0; u < 4; u++) a[u] += g[j + u], b[u] += g[j + u] * (p[j + u] - mean);
  for (; j < n; j++) a[0] += g[j], b[0] += g[j] * (p[j] - mean);
  *sg += (a[0] + a[1]) + (a[2] + a[3]);
  *sgx += (b[0] + b[1]) + (b[2] + b[3]);
}

/* The statistics channel k of X [N, C, S] is normalised with: training, the
 * batch mean and biased variance over its M = N·S values (two passes);
 * inference, the running mean and variance. The forward and the backward
 * pass both call this, so they agree to the last bit. */
static void PD_T(stats)(pd_ctx *c, const T *x, int64_t n, int64_t ch, int64_t sp, int64_t k, double *mean,
                        double *var) {
  int64_t m = n * sp;
  if (!pd_ctx_training(c) || m == 0) {
    *mean = PD_DATA(pd_in(c, MEAN), T)[k];
    *var = PD_DATA(pd_in(c, VAR), T)[k];
    return;
  }
  double s = 0, q = 0;
  for (int64_t i = 0; i < n; i++) s += PD_T(sum)(x + (i * ch + k) * sp, sp);
  *mean = s / (double)m;
  for (int64_t i = 0; i < n; i++) q += PD_T(sum_sq)(x + (i * ch + k) * sp, sp, *mean);
  *var = q / (double)m;
}

/* Y = (X - mean) · Scale / sqrt(var + epsilon) + Bias. Training then moves
 * the running statistics (in place): running = momentum · running +
 * (1 - momentum) · batch, with the unbiased batch variance M/(M-1) · var as
 * PyTorch does (with M = 1 the running variance stays). */
static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X);
  int64_t n, ch, sp;
  split(xt, &n, &ch, &sp);
  const T *x = PD_DATA(xt, T), *scale = PD_DATA(pd_in(c, SCALE), T), *bias = PD_DATA(pd_in(c, BIAS), T);
  T *y = PD_DATA(pd_out(c, Y), T), *rmean = PD_DATA(pd_out(c, MEAN_OUT), T);
  T *rvar = PD_DATA(pd_out(c, VAR_OUT), T);
  double mom = pd_attr_f(c, A_MOMENTUM), eps = pd_attr_f(c, A_EPSILON);
  int64_t m = n * sp;
  bool update = pd_ctx_training(c) && m > 0;
  for (int64_t k = 0; k < ch; k++) {
    double mean, var;
    PD_T(stats)(c, x, n, ch, sp, k, &mean, &var);
    double a = scale[k] / sqrt(var + eps), b = bias[k];
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + (i * ch + k) * sp;
      T *q = y + (i * ch + k) * sp;
      for (int64_t j = 0; j < sp; j++) q[j] = (T)((p[j] - mean) * a + b);
    }
    if (update) {
      rmean[k] = (T)pd_bn_running_mean(rmean[k], mean, mom);
      if (m > 1) rvar[k] = (T)pd_bn_running_var(rvar[k], var, mom, (double)m);
    }
  }
  return PD_OK;
}

/* With xhat = (X - mean) · inv_std, inv_std = 1 / sqrt(var + epsilon), per
 * channel: dBias = Σ dY, dScale = Σ dY · xhat, and
 *   training:  dX = Scale · inv_std · (dY - dBias / M - xhat · dScale / M)
 *              (the batch statistics depend on X);
 *   inference: dX = Scale · inv_std · dY (the running ones do not). */
static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, G_X), *dxt = pd_out(c, X), *dst = pd_out(c, SCALE), *dbt = pd_out(c, BIAS);
  int64_t n, ch, sp;
  split(xt, &n, &ch, &sp);
  const T *x = PD_DATA(xt, T), *dy = PD_DATA(pd_in(c, G_DY), T), *scale = PD_DATA(pd_in(c, G_SCALE), T);
  double m = (double)(n * sp), eps = pd_attr_f(c, A_EPSILON);
  bool training = pd_ctx_training(c);
  for (int64_t k = 0; k < ch; k++) {
    double mean, var, sdy = 0, sdyx = 0;
    PD_T(stats)(c, x, n, ch, sp, k, &mean, &var);
    double inv = 1 / sqrt(var + eps);
    for (int64_t i = 0; i < n; i++) PD_T(sum_g)(dy + (i * ch + k) * sp, x + (i * ch + k) * sp, sp, mean, &sdy, &sdyx);
    sdyx *= inv;
    if (dst) PD_DATA(dst, T)[k] = (T)sdyx;
    if (dbt) PD_DATA(dbt, T)[k] = (T)sdy;
    if (!dxt) continue;
    /* dX = a · dY + b · X + d, the formula above multiplied out */
    pd_bn_coef q = pd_bn_grad_coefs(scale[k], mean, inv, sdy, sdyx, m, training);
    double a = q.a, b = q.b, d = q.d;
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + (i * ch + k) * sp, *g = dy + (i * ch + k) * sp;
      T *q = PD_DATA(dxt, T) + (i * ch + k) * sp;
      for (int64_t j = 0; j < sp; j++) q[j] = (T)(a * g[j] + b * p[j] + d);
    }
  }
  return PD_OK;
}
