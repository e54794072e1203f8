/* initializer.c — parameter initialisers and learning-rate schedules. */
#include "core/initializer.h"
#include "base/rng.h"
#include "base/util.h"

#include <float.h>
#include <math.h>
#include <string.h>

pd_status pd_init_param(const pd_var_info *vi, const Paddle__Initializer *def, uint64_t seed, pd_tensor *t,
                        pd_error *err) {
  if (!vi->init && !isnan(vi->param_init)) { /* the op's own default (batch_norm's scale: 1) */
    int64_t n = pd_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) pd_tensor_set(t, i, vi->param_init);
    return PD_OK;
  }
  const Paddle__Initializer *in = vi->init ? vi->init : def;
  const char *type = in && in->type ? in->type : (vi->meta.ndim >= 2 ? "xavier" : "constant");
  int64_t n = pd_tensor_numel(t);
  /* fans: rows are inputs for fc weights [K, N]; conv weights [O, I, kh, kw] */
  double fan_in = 1, fan_out = 1, rf = 1;
  if (t->ndim >= 2) {
    for (int d = 2; d < t->ndim; d++) rf *= (double)t->dims[d];
    if (t->ndim == 2)
      fan_in = (double)t->dims[0], fan_out = (double)t->dims[1];
    else
      fan_in = (double)t->dims[1] * rf, fan_out = (double)t->dims[0] * rf;
  } else if (t->ndim == 1)
    fan_in = fan_out = (double)t->dims[0];
  uint64_t s = seed ^ pd_hash_str(vi->name);
  double gain = in && in->has_gain ? in->gain : 1.0;
  bool uniform = in && in->has_uniform ? in->uniform : true;
  double lo = 0, hi = 0, mean = 0, std = 0, value = in && in->has_value ? in->value : 0;
  int kind; /* 0 constant, 1 uniform, 2 gaussian */
  if (!strcmp(type, "constant"))
    kind = 0;
  else if (!strcmp(type, "uniform")) {
    kind = 1;
    lo = in && in->has_min ? in->min : -0.05;
    hi = in && in->has_max ? in->max : 0.05;
    if (!(lo <= hi)) return pd_errorf(err, PD_ERR_INPUT, "variable \"%s\": uniform init needs min <= max", vi->name);
  } else if (!strcmp(type, "gaussian") || !strcmp(type, "normal")) {
    kind = 2;
    mean = in && in->has_mean ? in->mean : 0;
    std = in && in->has_std ? in->std : 0.01;
    if (!(std >= 0)) return pd_errorf(err, PD_ERR_INPUT, "variable \"%s\": gaussian init needs std >= 0", vi->name);
  } else if (!strcmp(type, "xavier") || !strcmp(type, "glorot")) {
    double a = gain * sqrt(6.0 / (fan_in + fan_out));
    kind = uniform ? 1 : 2;
    lo = -a, hi = a, std = gain * sqrt(2.0 / (fan_in + fan_out));
  } else if (!strcmp(type, "kaiming") || !strcmp(type, "he")) {
    double g = in && in->has_gain ? in->gain : sqrt(2.0);
    double a = g * sqrt(3.0 / fan_in);
    kind = uniform ? 1 : 2;
    lo = -a, hi = a, std = g / sqrt(fan_in);
  } else
    return pd_errorf(err, PD_ERR_INPUT,
                     "variable \"%s\": unknown initializer \"%s\"; use constant, uniform, gaussian, xavier (glorot) or "
                     "kaiming (he)",
                     vi->name, type);
  for (int64_t i = 0; i < n; i++) {
    double v = kind == 0 ? value : kind == 1 ? lo + (hi - lo) * pd_rng_uniform(&s) : mean + std * pd_rng_gaussian(&s);
    pd_tensor_set(t, i, v);
  }
  return PD_OK;
}

double pd_schedule_lr(const Paddle__OptimizerDesc *opt, int64_t step) {
  double base = opt->lr;
  const Paddle__LrSchedule *s = opt->schedule;
  if (!s) return base;
  if (s->warmup_steps > 0 && step < s->warmup_steps) {
    double start = s->warmup_start_lr;
    return start + (base - start) * (double)(step + 1) / (double)s->warmup_steps;
  }
  int64_t t = step - (s->warmup_steps > 0 ? s->warmup_steps : 0);
  const char *type = s->type ? s->type : "constant";
  if (!strcmp(type, "step")) return base * pow(s->gamma, (double)(t / s->step_size));
  if (!strcmp(type, "multistep")) { /* PyTorch's MultiStepLR: one factor per boundary passed */
    double lr = base;
    for (size_t i = 0; i < s->n_boundaries; i++)
      if (t >= s->boundaries[i]) lr *= s->gamma;
    return lr;
  }
  if (!strcmp(type, "exponential")) return base * pow(s->gamma, (double)t / (double)s->decay_steps);
  if (!strcmp(type, "polynomial")) {
    double f = t >= s->decay_steps ? 0 : 1 - (double)t / (double)s->decay_steps;
    return (base - s->end_lr) * pow(f, s->power) + s->end_lr;
  }
  if (!strcmp(type, "cosine")) {
    double f = t >= s->decay_steps ? 1 : (double)t / (double)s->decay_steps;
    return s->end_lr + 0.5 * (base - s->end_lr) * (1 + cos(3.141592653589793 * f));
  }
  return base;
}

bool pd_plateau_step(const Paddle__LrSchedule *s, pd_plateau *p, double loss) {
  if (loss < p->best * (1 - s->threshold)) { /* a NaN loss is never better */
    p->best = loss;
    p->bad = 0;
  } else {
    p->bad++;
  }
  if (p->bad <= s->patience) return false;
  p->bad = 0;
  double lr = fmax(p->lr * s->factor, s->min_lr);
  if (!(p->lr - lr > 1e-8)) return false;
  p->lr = lr;
  return true;
}

pd_status pd_schedule_check(const Paddle__OptimizerDesc *opt, pd_error *err) {
  if (!(opt->lr > 0 && opt->lr <= FLT_MAX)) /* the step takes it as a float32 */
    return pd_errorf(err, PD_ERR_INPUT, "train.optimizer.lr must be > 0 and at most %g (a float32), got %g", FLT_MAX,
                     opt->lr);
  const Paddle__LrSchedule *s = opt->schedule;
  if (!s) return PD_OK;
  const char *type = s->type ? s->type : "constant";
  if (!strcmp(type, "constant")) return PD_OK;
  if (!strcmp(type, "step")) {
    if (s->step_size <= 0 || !(s->gamma > 0))
      return pd_errorf(err, PD_ERR_INPUT, "schedule \"step\" needs step_size > 0 and gamma > 0");
    return PD_OK;
  }
  if (!strcmp(type, "multistep")) {
    if (!s->n_boundaries || !(s->gamma > 0))
      return pd_errorf(err, PD_ERR_INPUT, "schedule \"multistep\" needs boundaries (steps) and gamma > 0");
    for (size_t i = 0; i < s->n_boundaries; i++)
      if (s->boundaries[i] <= 0 || (i && s->boundaries[i] <= s->boundaries[i - 1]))
        return pd_errorf(err, PD_ERR_INPUT,
                         "schedule \"multistep\": boundaries must be steps > 0 in increasing order, got %lld after "
                         "%lld",
                         (long long)s->boundaries[i], i ? (long long)s->boundaries[i - 1] : 0LL);
    return PD_OK;
  }
  if (!strcmp(type, "plateau")) {
    if (!(s->factor > 0 && s->factor < 1) || s->patience < 0 || !(s->threshold >= 0) || !(s->min_lr >= 0))
      return pd_errorf(err, PD_ERR_INPUT,
                       "schedule \"plateau\" needs 0 < factor < 1, patience >= 0, threshold >= 0 and min_lr >= 0");
    return PD_OK;
  }
  if (!strcmp(type, "exponential") || !strcmp(type, "polynomial") || !strcmp(type, "cosine")) {
    if (s->decay_steps <= 0) return pd_errorf(err, PD_ERR_INPUT, "schedule \"%s\" needs decay_steps > 0", type);
    if (!strcmp(type, "exponential") && !(s->gamma > 0))
      return pd_errorf(err, PD_ERR_INPUT, "schedule \"exponential\" needs gamma > 0");
    return PD_OK;
  }
  return pd_errorf(err, PD_ERR_INPUT,
                   "unknown learning-rate schedule \"%s\"; use constant, step, multistep, exponential, polynomial, "
                   "cosine or plateau",
                   type);
}

/* A state variable's first value: its own `init`, else the value the op
 * reading it gives (batch_norm's running mean 0 and variance 1), else zero
 * for optimizer state; anything else has no value to start from. */
static pd_status init_state(const pd_net *net, const pd_var_info *vi, uint64_t seed, pd_tensor *t, pd_error *err) {
  if (vi->init) return pd_init_param(vi, NULL, seed, t, err);
  if (vi->optimizer_state) return PD_OK; /* allocated zeroed */
  if (isnan(vi->state_init))
    return pd_error_at(err, PD_ERR_INPUT, net->file, net->src, net->src_len, vi->line, vi->col,
                       "STATE variable \"%s\" has no value to start from: give it an init (var { name: \"%s\" "
                       "kind: STATE init { type: \"constant\" value: ... } }) or load it with --params DIR",
                       vi->name, vi->name);
  if (vi->state_init != 0) {
    int64_t n = pd_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) pd_tensor_set(t, i, vi->state_init);
  }
  return PD_OK;
}

pd_status pd_init_persistables(const pd_net *net, pd_scope *scope, const Paddle__Initializer *def, uint64_t seed,
                               pd_error *err) {
  pd_status st = PD_OK;
  for (int v = 0; v < net->nvars && !st; v++) {
    const pd_var_info *vi = &net->vars[v];
    if (vi->kind != PD_VAR_PARAM && vi->kind != PD_VAR_STATE) continue;
    pd_var *var = pd_scope_find(scope, vi->name);
    if (var && var->tensor.storage) continue;
    if (!(var = pd_scope_var(scope, vi->name))) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    var->tensor.dtype = vi->meta.dtype;
    st = pd_tensor_set_dims(&var->tensor, vi->meta.ndim, vi->meta.dims, err);
    if (!st) st = pd_tensor_alloc(&var->tensor, err);
    if (!st && vi->kind == PD_VAR_PARAM) st = pd_init_param(vi, def, seed, &var->tensor, err);
    if (!st && vi->kind == PD_VAR_STATE) st = init_state(net, vi, seed, &var->tensor, err);
  }
  return st;
}
