/* batch_norm.c — batch normalisation per channel of X [N, C, ...] (NCHW, or
 * [N, C]): Y = (X - mean) / sqrt(var + epsilon) · Scale + Bias, with mean and
 * var over the N·H·W values of each channel. Training uses the batch's own
 * statistics and moves the running Mean and Variance (state, updated in place)
 * toward them; inference uses the running statistics and leaves them alone.
 * The backward pass recomputes the batch statistics from X (the grad op of
 * an op with five inputs and five outputs would exceed PD_MAX_SLOTS), so no
 * SavedMean/SavedInvStd outputs. One body for float and double; sums in
 * double. */
#include <math.h>

#include "gpu_ops.h"
#include "kmath.h"
#include "core/op.h"

enum { X, SCALE, BIAS, MEAN, VAR, N_IN };
enum { Y, MEAN_OUT, VAR_OUT, N_OUT };
enum { A_MOMENTUM, A_EPSILON, N_ATTRS };

static const pd_slot_def inputs[] = {
    {"X", "input [N, C] or [N, C, H, W] (any dims after C are spatial), float32 or float64", 0},
    {"Scale", "per-channel scale (gamma) [C]; starts at 1", PD_SLOT_PARAM},
    {"Bias", "per-channel shift (beta) [C]; starts at 0", PD_SLOT_PARAM},
    {"Mean", "running mean [C], used for inference; state, starts at 0", PD_SLOT_STATE | PD_SLOT_NO_GRAD},
    {"Variance", "running variance [C], used for inference; state, starts at 1", PD_SLOT_STATE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    {"Y", "(X - mean) / sqrt(var + epsilon) * Scale + Bias, X's shape", 0},
    {"MeanOut", "the updated running mean: must be the Mean variable (updated in place)", 0},
    {"VarianceOut", "the updated running variance: must be the Variance variable (updated in place)", 0},
};
static const pd_attr_def attrs[] = {
    {"momentum", "running = momentum * running + (1 - momentum) * batch statistic", PD_ATTR_FLOAT, .def = "f: 0.9",
     .min_kind = PD_GE, .min = 0, .max_kind = PD_GE, .max = 1},
    {"epsilon", "added to the variance before the square root", PD_ATTR_FLOAT, .def = "f: 1e-5", .min_kind = PD_GT,
     .min = 0},
};
/* Initial values per input slot: Scale 1, Bias 0 (parameters); Mean 0, Variance 1 (state). */
static const double param_init[] = {NAN, 1, 0, NAN, NAN};
static const double state_init[] = {0, 0, 0, 0, 1};

/* X [N, C, d2, d3...] is read as [N, C, S] with S = d2 · d3 · ... */
static void split(const pd_tensor *x, int64_t *n, int64_t *ch, int64_t *sp) {
  *n = x->dims[0];
  *ch = x->dims[1];
  *sp = 1;
  for (int i = 2; i < x->ndim; i++) *sp = (*sp < 0 || x->dims[i] < 0) ? -1 : *sp * x->dims[i];
}

/* The running statistics are updated in place: MeanOut must be Mean's
 * variable (otherwise Mean would never move and inference would use 0 and 1). */
static pd_status check_in_place(pd_ctx *c, int in, int out) {
  if (pd_out(c, out) == pd_in(c, in)) return PD_OK;
  return pd_ctx_fail(
      c, PD_ERR_INPUT, "output %s must be the variable of input %s (\"%s\"), updated in place; got \"%s\"",
      c->op->def->outputs[out].name, c->op->def->inputs[in].name, pd_ctx_in_name(c, in, 0), pd_ctx_out_name(c, out, 0));
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  char xs[128];
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  if (x->ndim < 2)
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must have at least 2 dims [N, C, ...], got %s",
                       pd_dims_str(x->ndim, x->dims, xs, sizeof xs));
  int64_t ch = x->dims[1];
  if (ch < 0)
    return pd_ctx_fail(c, PD_ERR_INPUT, "the channel dim of X (dim 1) must be known, got shape %s",
                       pd_dims_str(x->ndim, x->dims, xs, sizeof xs));
  pd_status st = PD_OK;
  for (int s = SCALE; s <= VAR && !st; s++) st = pd_ctx_param_shape(c, s, x->dtype, 1, &ch);
  if (!st) st = check_in_place(c, MEAN, MEAN_OUT);
  if (!st) st = check_in_place(c, VAR, VAR_OUT);
  if (!st) st = pd_ctx_set_shape(c, pd_out(c, Y), x->dtype, x->ndim, x->dims);
  for (int s = MEAN_OUT; s <= VAR_OUT && !st; s++) st = pd_ctx_set_shape(c, pd_out(c, s), x->dtype, 1, &ch);
  return st;
}

/* Sums over one row p[0..n) of a channel, in double, as four interleaved
 * partial sums: four short dependency chains instead of one long one, in the
 * same order on every call. */
#define BN_SUMS(T)                                                                                 \
  static double sum_##T(const T *p, int64_t n) {                                                   \
    double a[4] = {0, 0, 0, 0};                                                                    \
    int64_t j = 0;                                                                                 \
    for (; j + 4 <= n; j += 4)                                                                     \
      for (int u = 0; u < 4; u++) a[u] += p[j + u];                                                \
    for (; j < n; j++) a[0] += p[j];                                                               \
    return (a[0] + a[1]) + (a[2] + a[3]);                                                          \
  }                                                                                                \
  static double sum_sq_##T(const T *p, int64_t n, double mean) {                                   \
    double a[4] = {0, 0, 0, 0};                                                                    \
    int64_t j = 0;                                                                                 \
    for (; j + 4 <= n; j += 4)                                                                     \
      for (int u = 0; u < 4; u++) a[u] += (p[j + u] - mean) * (p[j + u] - mean);                   \
    for (; j < n; j++) a[0] += (p[j] - mean) * (p[j] - mean);                                      \
    return (a[0] + a[1]) + (a[2] + a[3]);                                                          \
  }                                                                                                \
  /* adds Σ g and Σ g · (p - mean) */                                                           \
  static void sum_g_##T(const T *g, const T *p, int64_t n, double mean, double *sg, double *sgx) { \
    double a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0};                                               \
    int64_t j = 0;                                                                                 \
    for (; j + 4 <= n; j += 4)                                                                     \
      for (int u = 0; u < 4; u++) a[u] += g[j + u], b[u] += g[j + u] * (p[j + u] - mean);          \
    for (; j < n; j++) a[0] += g[j], b[0] += g[j] * (p[j] - mean);                                 \
    *sg += (a[0] + a[1]) + (a[2] + a[3]);                                                          \
    *sgx += (b[0] + b[1]) + (b[2] + b[3]);                                                         \
  }
BN_SUMS(float)
BN_SUMS(double)

/* The statistics channel k of X [N, C, S] is normalised with: training, the
 * batch mean and biased variance over its M = N·S values (two passes);
 * inference, the running mean and variance. The forward and the backward
 * pass both call this, so they agree to the last bit. */
#define BN_STATS(T)                                                                                        \
  static void stats_##T(pd_ctx *c, const T *x, int64_t n, int64_t ch, int64_t sp, int64_t k, double *mean, \
                        double *var) {                                                                     \
    int64_t m = n * sp;                                                                                    \
    if (!pd_ctx_training(c) || m == 0) {                                                                   \
      *mean = PD_DATA(pd_in(c, MEAN), T)[k];                                                               \
      *var = PD_DATA(pd_in(c, VAR), T)[k];                                                                 \
      return;                                                                                              \
    }                                                                                                      \
    double s = 0, q = 0;                                                                                   \
    for (int64_t i = 0; i < n; i++) s += sum_##T(x + (i * ch + k) * sp, sp);                               \
    *mean = s / (double)m;                                                                                 \
    for (int64_t i = 0; i < n; i++) q += sum_sq_##T(x + (i * ch + k) * sp, sp, *mean);                     \
    *var = q / (double)m;                                                                                  \
  }
BN_STATS(float)
BN_STATS(double)

/* Y = (X - mean) · Scale / sqrt(var + epsilon) + Bias. Training then moves
 * the running statistics (in place): running = momentum · running +
 * (1 - momentum) · batch, with the unbiased batch variance M/(M-1) · var as
 * PyTorch does (with M = 1 the running variance stays). */
#define BN_FORWARD(T)                                                                                      \
  static pd_status forward_##T(pd_ctx *c) {                                                                \
    pd_tensor *xt = pd_in(c, X);                                                                           \
    int64_t n, ch, sp;                                                                                     \
    split(xt, &n, &ch, &sp);                                                                               \
    const T *x = PD_DATA(xt, T), *scale = PD_DATA(pd_in(c, SCALE), T), *bias = PD_DATA(pd_in(c, BIAS), T); \
    T *y = PD_DATA(pd_out(c, Y), T), *rmean = PD_DATA(pd_out(c, MEAN_OUT), T);                             \
    T *rvar = PD_DATA(pd_out(c, VAR_OUT), T);                                                              \
    double mom = pd_attr_f(c, A_MOMENTUM), eps = pd_attr_f(c, A_EPSILON);                                  \
    int64_t m = n * sp;                                                                                    \
    bool update = pd_ctx_training(c) && m > 0;                                                             \
    for (int64_t k = 0; k < ch; k++) {                                                                     \
      double mean, var;                                                                                    \
      stats_##T(c, x, n, ch, sp, k, &mean, &var);                                                          \
      double a = scale[k] / sqrt(var + eps), b = bias[k];                                                  \
      for (int64_t i = 0; i < n; i++) {                                                                    \
        const T *p = x + (i * ch + k) * sp;                                                                \
        T *q = y + (i * ch + k) * sp;                                                                      \
        for (int64_t j = 0; j < sp; j++) q[j] = (T)((p[j] - mean) * a + b);                                \
      }                                                                                                    \
      if (update) {                                                                                        \
        rmean[k] = (T)pd_bn_running_mean(rmean[k], mean, mom);                                             \
        if (m > 1) rvar[k] = (T)pd_bn_running_var(rvar[k], var, mom, (double)m);                           \
      }                                                                                                    \
    }                                                                                                      \
    return PD_OK;                                                                                          \
  }
BN_FORWARD(float)
BN_FORWARD(double)

/* Grad op slots (see op.h): inputs X Scale Bias Mean Variance, Y MeanOut
 * VarianceOut, dY dMeanOut dVarianceOut; outputs dX dScale dBias (dMean and
 * dVariance: none, no-grad slots). */
enum {
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_SCALE = PD_GRAD_X(N_IN, N_OUT, SCALE),
  G_DY = PD_GRAD_DY(N_IN, N_OUT, Y),
};

/* Only Y carries a gradient back: the running statistics are not
 * differentiated, so a loss that reads them is refused rather than given a
 * wrong gradient. */
static pd_status grad_infer(pd_ctx *c) {
  if (!pd_in(c, G_DY)) return pd_ctx_fail(c, PD_ERR_INPUT, "needs the gradient of Y");
  for (int s = MEAN_OUT; s < N_OUT; s++)
    if (pd_in(c, PD_GRAD_DY(N_IN, N_OUT, s)))
      return pd_ctx_fail(c, PD_ERR_INPUT, "no gradient flows back through output %s (\"%s\"); only Y has one",
                         c->op->def->outputs[s].name, pd_ctx_in_name(c, PD_GRAD_Y(N_IN, N_OUT, s), 0));
  pd_status st = PD_OK;
  for (int s = X; s <= BIAS && !st; s++) {
    pd_tensor *in = pd_in(c, s);
    if (in) st = pd_ctx_set_shape(c, pd_out(c, s), in->dtype, in->ndim, in->dims);
  }
  return st;
}

/* With xhat = (X - mean) · inv_std, inv_std = 1 / sqrt(var + epsilon), per
 * channel: dBias = Σ dY, dScale = Σ dY · xhat, and
 *   training:  dX = Scale · inv_std · (dY - dBias / M - xhat · dScale / M)
 *              (the batch statistics depend on X);
 *   inference: dX = Scale · inv_std · dY (the running ones do not). */
#define BN_BACKWARD(T)                                                                                                 \
  static pd_status backward_##T(pd_ctx *c) {                                                                           \
    pd_tensor *xt = pd_in(c, G_X), *dxt = pd_out(c, X), *dst = pd_out(c, SCALE), *dbt = pd_out(c, BIAS);               \
    int64_t n, ch, sp;                                                                                                 \
    split(xt, &n, &ch, &sp);                                                                                           \
    const T *x = PD_DATA(xt, T), *dy = PD_DATA(pd_in(c, G_DY), T), *scale = PD_DATA(pd_in(c, G_SCALE), T);             \
    double m = (double)(n * sp), eps = pd_attr_f(c, A_EPSILON);                                                        \
    bool training = pd_ctx_training(c);                                                                                \
    for (int64_t k = 0; k < ch; k++) {                                                                                 \
      double mean, var, sdy = 0, sdyx = 0;                                                                             \
      stats_##T(c, x, n, ch, sp, k, &mean, &var);                                                                      \
      double inv = 1 / sqrt(var + eps);                                                                                \
      for (int64_t i = 0; i < n; i++) sum_g_##T(dy + (i * ch + k) * sp, x + (i * ch + k) * sp, sp, mean, &sdy, &sdyx); \
      sdyx *= inv;                                                                                                     \
      if (dst) PD_DATA(dst, T)[k] = (T)sdyx;                                                                           \
      if (dbt) PD_DATA(dbt, T)[k] = (T)sdy;                                                                            \
      if (!dxt) continue;                                                                                              \
      /* dX = a · dY + b · X + d, the formula above multiplied out */                                                \
      pd_bn_coef q = pd_bn_grad_coefs(scale[k], mean, inv, sdy, sdyx, m, training);                                    \
      double a = q.a, b = q.b, d = q.d;                                                                                \
      for (int64_t i = 0; i < n; i++) {                                                                                \
        const T *p = x + (i * ch + k) * sp, *g = dy + (i * ch + k) * sp;                                               \
        T *q = PD_DATA(dxt, T) + (i * ch + k) * sp;                                                                    \
        for (int64_t j = 0; j < sp; j++) q[j] = (T)(a * g[j] + b * p[j] + d);                                          \
      }                                                                                                                \
    }                                                                                                                  \
    return PD_OK;                                                                                                      \
  }
BN_BACKWARD(float)
BN_BACKWARD(double)

/* About 8 operations per element forward (two statistics passes, the affine
 * map) and 12 backward (the statistics again, two sums, dX). */
static double flops(pd_ctx *c) { return 8.0 * (double)pd_tensor_numel(pd_in(c, X)); }
static double grad_flops(pd_ctx *c) { return 12.0 * (double)pd_tensor_numel(pd_in(c, G_X)); }

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_batch_norm_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_batch_norm_bwd),
#endif
};

const pd_op_def pd_op_batch_norm = {
    .type = "batch_norm",
    .comment = "Batch normalisation per channel of X [N, C, ...]: Y = (X - mean) / sqrt(var + epsilon) * Scale + "
               "Bias. Training uses the batch's mean and biased variance and updates the running Mean and Variance "
               "in place (the variance with the unbiased batch variance, as PyTorch does); inference uses the "
               "running statistics and leaves them unchanged. Scale and Bias are parameters (starting at 1 and 0), "
               "Mean and Variance state (starting at 0 and 1); all four have shape [C] and need not be declared.",
    .inputs = inputs,
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .attrs = attrs,
    .n_attrs = N_ATTRS,
    .infer_shape = infer,
    .flops = flops,
    .grad_flops = grad_flops,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
    .grad_infer_shape = grad_infer,
    .param_init = param_init,
    .state_init = state_init,
};
