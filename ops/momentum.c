/* momentum.c — gradient descent with momentum (heavy ball or Nesterov), per element:
 * g' = g + weight_decay p;  v = mu v + g';  p -= lr (nesterov ? g' + mu v : v).
 * ParamOut and VelocityOut may be Param and Velocity themselves. No gradient. */
#include "gpu_ops.h"
#include "kmath.h"
#include "optim.h"
#include "cpu/parallel.h"

enum { PARAM, GRAD, VELOCITY, LR, N_IN };
enum { PARAM_OUT, VELOCITY_OUT, N_OUT };
enum { A_MU, A_NESTEROV, A_WD, N_ATTR };

static const pd_slot_def inputs[] = {
    {"Param", "the parameter to update", PD_SLOT_NO_GRAD},
    {"Grad", "its gradient, the shape of Param", PD_SLOT_NO_GRAD},
    {"Velocity", "the running velocity v, the shape of Param (zeros at the start)", PD_SLOT_NO_GRAD},
    {"LearningRate", "the step size lr, [1], float32 or float64", PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    {"ParamOut", "the updated parameter; usually Param itself", 0},
    {"VelocityOut", "the updated velocity; usually Velocity itself", 0},
};
static const pd_attr_def attrs[] = {
    {"mu", "momentum: the fraction of the velocity kept each step", PD_ATTR_FLOAT, .def = "f: 0.9", .min_kind = PD_GE,
     .min = 0},
    {"use_nesterov", "Nesterov's variant: step along g' + mu v instead of v", PD_ATTR_BOOL, .def = "b: false"},
    {"weight_decay", "L2 penalty: weight_decay * Param is added to the gradient", PD_ATTR_FLOAT, .def = "f: 0.0",
     .min_kind = PD_GE, .min = 0},
};

static pd_status infer(pd_ctx *c) {
  pd_status st = pd_optim_check_param(c, PARAM);
  if (!st) st = pd_optim_check_like(c, GRAD, PARAM);
  if (!st) st = pd_optim_check_like(c, VELOCITY, PARAM);
  if (!st) st = pd_optim_check_lr(c, LR);
  if (!st) st = pd_optim_out_like(c, PARAM_OUT, PARAM);
  if (!st) st = pd_optim_out_like(c, VELOCITY_OUT, PARAM);
  return st;
}

/* Long parameters are updated by several threads, each a range of it. */
typedef struct job {
  const void *p, *g, *v;
  void *p_out, *v_out;
  double lr, mu, wd;
  bool nesterov;
} job;

#define MOMENTUM_UPDATE(T)                                                                                           \
  static void range_##T(void *arg, int64_t lo, int64_t hi) {                                                         \
    const job *j = arg;                                                                                              \
    const T *p = j->p, *g = j->g, *v = j->v;                                                                         \
    T *p_out = j->p_out, *v_out = j->v_out, lr = (T)j->lr, mu = (T)j->mu, wd = (T)j->wd;                             \
    if (p_out == p && v_out == v) { /* in place, as the optimizer pass makes it: vectorizable */                     \
      T *restrict pp = p_out, *restrict vv = v_out;                                                                  \
      const T *restrict gg = g;                                                                                      \
      if (j->nesterov)                                                                                               \
        for (int64_t i = lo; i < hi; i++) pd_momentum_##T(pp[i], gg[i], vv[i], lr, mu, wd, true, &pp[i], &vv[i]);    \
      else                                                                                                           \
        for (int64_t i = lo; i < hi; i++) pd_momentum_##T(pp[i], gg[i], vv[i], lr, mu, wd, false, &pp[i], &vv[i]);   \
      return;                                                                                                        \
    }                                                                                                                \
    const bool nesterov = j->nesterov;                                                                               \
    for (int64_t i = lo; i < hi; i++) pd_momentum_##T(p[i], g[i], v[i], lr, mu, wd, nesterov, &p_out[i], &v_out[i]); \
  }                                                                                                                  \
  static pd_status update_##T(pd_ctx *c) {                                                                           \
    job j = {PD_DATA(pd_in(c, PARAM), T),                                                                            \
             PD_DATA(pd_in(c, GRAD), T),                                                                             \
             PD_DATA(pd_in(c, VELOCITY), T),                                                                         \
             PD_DATA(pd_out(c, PARAM_OUT), T),                                                                       \
             PD_DATA(pd_out(c, VELOCITY_OUT), T),                                                                    \
             (T)pd_tensor_get(pd_in(c, LR), 0),                                                                      \
             pd_attr_f(c, A_MU),                                                                                     \
             pd_attr_f(c, A_WD),                                                                                     \
             pd_attr_b(c, A_NESTEROV)};                                                                              \
    pd_parallel_for(pd_tensor_numel(pd_in(c, PARAM)), PD_UPDATE_GRAIN, range_##T, &j);                               \
    return PD_OK;                                                                                                    \
  }
MOMENTUM_UPDATE(float)
MOMENTUM_UPDATE(double)

static const pd_kernel kernels[] = {
    PD_CPU_F32(update_float),
    PD_CPU_F64(update_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_momentum_fwd),
#endif
};

const pd_op_def pd_op_momentum = {
    .type = "momentum",
    .flags = PD_OP_UPDATE,
    .comment = "Momentum step: g' = Grad + weight_decay Param; v = mu v + g'; ParamOut = Param - lr v "
               "(use_nesterov: Param - lr (g' + mu v)). Outputs may be the same variables as the inputs.",
    .inputs = inputs,
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .attrs = attrs,
    .n_attrs = N_ATTR,
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
};
