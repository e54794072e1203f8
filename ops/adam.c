/* adam.c — Adam with bias correction, per element, at update count t (input Step):
 * g' = g + wd p;  m = b1 m + (1 - b1) g';  v = b2 v + (1 - b2) g'^2;
 * p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). Outputs may be the inputs. */
#include <tgmath.h>

#include "gpu_ops.h"
#include "kmath.h"
#include "optim.h"
#include "cpu/parallel.h"

enum { PARAM, GRAD, MOMENT1, MOMENT2, LR, STEP, N_IN };
enum { PARAM_OUT, MOMENT1_OUT, MOMENT2_OUT, N_OUT };
enum { A_BETA1, A_BETA2, A_EPS, A_WD, N_ATTR };

static const pd_slot_def inputs[] = {
    {"Param", "the parameter to update", PD_SLOT_NO_GRAD},
    {"Grad", "its gradient, the shape of Param", PD_SLOT_NO_GRAD},
    {"Moment1", "running mean of the gradient m, the shape of Param (zeros at the start)", PD_SLOT_NO_GRAD},
    {"Moment2", "running mean of the squared gradient v, the shape of Param (zeros at the start)", PD_SLOT_NO_GRAD},
    {"LearningRate", "the step size lr, [1], float32 or float64", PD_SLOT_NO_GRAD},
    {"Step", "the update count t >= 1 (1 at the first update), [1], float64; kept by the trainer", PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    {"ParamOut", "the updated parameter; usually Param itself", 0},
    {"Moment1Out", "the updated m; usually Moment1 itself", 0},
    {"Moment2Out", "the updated v; usually Moment2 itself", 0},
};
static const pd_attr_def attrs[] = {
    {"beta1", "decay of the first moment", PD_ATTR_FLOAT, .def = "f: 0.9", .min_kind = PD_GE, .min = 0,
     .max_kind = PD_GT, .max = 1},
    {"beta2", "decay of the second moment", PD_ATTR_FLOAT, .def = "f: 0.999", .min_kind = PD_GE, .min = 0,
     .max_kind = PD_GT, .max = 1},
    {"epsilon", "added to the denominator", PD_ATTR_FLOAT, .def = "f: 1e-8", .min_kind = PD_GT, .min = 0},
    {"weight_decay", "L2 penalty: weight_decay * Param is added to the gradient", PD_ATTR_FLOAT, .def = "f: 0.0",
     .min_kind = PD_GE, .min = 0},
};

static pd_status infer(pd_ctx *c) {
  pd_status st = pd_optim_check_param(c, PARAM);
  if (!st) st = pd_optim_check_like(c, GRAD, PARAM);
  if (!st) st = pd_optim_check_like(c, MOMENT1, PARAM);
  if (!st) st = pd_optim_check_like(c, MOMENT2, PARAM);
  if (!st) st = pd_optim_check_lr(c, LR);
  if (!st) st = pd_optim_check_scalar(c, STEP, PD_F64);
  if (!st) st = pd_optim_out_like(c, PARAM_OUT, PARAM);
  if (!st) st = pd_optim_out_like(c, MOMENT1_OUT, PARAM);
  if (!st) st = pd_optim_out_like(c, MOMENT2_OUT, PARAM);
  return st;
}

/* The bias corrections are folded into two scalars, in double:
 * p -= lr_t m / (sqrt(v) + eps_t), lr_t = lr sqrt(1 - b2^t) / (1 - b1^t), eps_t = eps sqrt(1 - b2^t). */
/* Long parameters are updated by several threads, each a range of it. */
typedef struct job {
  const void *p, *g, *m, *v;
  void *p_out, *m_out, *v_out;
  double lr_t, eps_t, wd, b1, b2;
} job;

#define ADAM_UPDATE(T)                                                                                 \
  static void range_##T(void *arg, int64_t lo, int64_t hi) {                                           \
    const job *j = arg;                                                                                \
    const T *p = j->p, *g = j->g, *m = j->m, *v = j->v;                                                \
    T *p_out = j->p_out, *m_out = j->m_out, *v_out = j->v_out;                                         \
    const T lr_t = (T)j->lr_t, eps_t = (T)j->eps_t, wd = (T)j->wd, tb1 = (T)j->b1, tb2 = (T)j->b2;     \
    if (p_out == p && m_out == m && v_out == v) { /* in place: vectorizable */                         \
      T *restrict pp = p_out, *restrict mm = m_out, *restrict vv = v_out;                              \
      const T *restrict gg = g;                                                                        \
      for (int64_t i = lo; i < hi; i++)                                                                \
        pd_adam_##T(pp[i], gg[i], mm[i], vv[i], lr_t, eps_t, tb1, tb2, wd, &pp[i], &mm[i], &vv[i]);    \
      return;                                                                                          \
    }                                                                                                  \
    for (int64_t i = lo; i < hi; i++)                                                                  \
      pd_adam_##T(p[i], g[i], m[i], v[i], lr_t, eps_t, tb1, tb2, wd, &p_out[i], &m_out[i], &v_out[i]); \
  }                                                                                                    \
  static pd_status update_##T(pd_ctx *c) {                                                             \
    double t = PD_DATA(pd_in(c, STEP), double)[0];                                                     \
    if (!(t >= 1))                                                                                     \
      return pd_ctx_fail(c, PD_ERR_INPUT, "Step \"%s\" must hold the update count t >= 1, got %g",     \
                         pd_ctx_in_name(c, STEP, 0), t);                                               \
    double b1 = pd_attr_f(c, A_BETA1), b2 = pd_attr_f(c, A_BETA2);                                     \
    double lr_d, eps_d;                                                                                \
    pd_adam_coefs((T)pd_tensor_get(pd_in(c, LR), 0), b1, b2, pd_attr_f(c, A_EPS), t, &lr_d, &eps_d);   \
    job j = {PD_DATA(pd_in(c, PARAM), T),                                                              \
             PD_DATA(pd_in(c, GRAD), T),                                                               \
             PD_DATA(pd_in(c, MOMENT1), T),                                                            \
             PD_DATA(pd_in(c, MOMENT2), T),                                                            \
             PD_DATA(pd_out(c, PARAM_OUT), T),                                                         \
             PD_DATA(pd_out(c, MOMENT1_OUT), T),                                                       \
             PD_DATA(pd_out(c, MOMENT2_OUT), T),                                                       \
             (T)lr_d,                                                                                  \
             (T)eps_d,                                                                                 \
             pd_attr_f(c, A_WD),                                                                       \
             b1,                                                                                       \
             b2};                                                                                      \
    pd_parallel_for(pd_tensor_numel(pd_in(c, PARAM)), PD_UPDATE_GRAIN, range_##T, &j);                 \
    return PD_OK;                                                                                      \
  }
ADAM_UPDATE(float)
ADAM_UPDATE(double)

static const pd_kernel kernels[] = {
    PD_CPU_F32(update_float),
    PD_CPU_F64(update_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_adam_fwd),
#endif
};

const pd_op_def pd_op_adam = {
    .type = "adam",
    .flags = PD_OP_UPDATE,
    .comment = "Adam step with bias correction at update count t (input Step, t >= 1): with "
               "g' = Grad + weight_decay Param, m = b1 m + (1 - b1) g', v = b2 v + (1 - b2) g'^2, "
               "ParamOut = Param - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). "
               "Outputs may be the same variables as the inputs.",
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
