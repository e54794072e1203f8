/* momentum.c — gradient descent with momentum (heavy ball or Nesterov), per element:
 * g' = g + weight_decay p;  v = mu v + g';  p -= lr (nesterov ? g' + mu v : v).
 * ParamOut and VelocityOut may be Param and Velocity themselves. No gradient. */
#include "momentum.h"

#include "base/tmpl.h"
#include "kmath.h"
#include "optim.h"
#include "cpu/parallel.h"

static const pd_slot_def inputs[] = {
    [PARAM] = {"Param", "the parameter to update", PD_SLOT_NO_GRAD},
    [GRAD] = {"Grad", "its gradient, the shape of Param", PD_SLOT_NO_GRAD},
    [VELOCITY] = {"Velocity", "the running velocity v, the shape of Param (zeros at the start)", PD_SLOT_NO_GRAD},
    [LR] = {"LearningRate", "the step size lr, [1], float32 or float64", PD_SLOT_NO_GRAD},
    [ROWS] = {"Rows",
              "int64 [n]: with a row-sparse Grad [n, ...] (embedding's), the rows of Param it updates, ascending, "
              "then -1; only those rows (and their state) change. Left out: Grad is dense",
              PD_SLOT_DISPENSABLE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    [PARAM_OUT] = {"ParamOut", "the updated parameter; usually Param itself", 0},
    [VELOCITY_OUT] = {"VelocityOut", "the updated velocity; usually Velocity itself", 0},
};
static const pd_attr_def attrs[] = {
    [A_MU] = {"mu", "momentum: the fraction of the velocity kept each step", PD_ATTR_FLOAT, .def = "f: 0.9",
              .min_kind = PD_GE, .min = 0},
    [A_NESTEROV] = {"use_nesterov", "Nesterov's variant: step along g' + mu v instead of v", PD_ATTR_BOOL,
                    .def = "b: false"},
    [A_WD] = {"weight_decay", "L2 penalty: weight_decay * Param is added to the gradient", PD_ATTR_FLOAT,
              .def = "f: 0.0", .min_kind = PD_GE, .min = 0},
    [A_LR_MULT] = {"lr_mult",
                   "the parameter's multiplier of the learning rate (its var's lr_mult): the step uses lr * lr_mult",
                   PD_ATTR_FLOAT, .def = "f: 1.0", .min_kind = PD_GE, .min = 0},
};
static pd_status infer(pd_ctx *c) {
  pd_status st = pd_optim_check_param(c, PARAM);
  if (!st) st = pd_optim_check_grad(c, GRAD, ROWS, PARAM);
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

#define T float
#include "momentum_t.h"
#undef T
#define T double
#include "momentum_t.h"
#undef T

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
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
};
