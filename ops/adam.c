/* adam.c — Adam with bias correction, per element, at update count t (input Step):
 * g' = g + wd p;  m = b1 m + (1 - b1) g';  v = b2 v + (1 - b2) g'^2;
 * p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). Outputs may be the inputs. */
#include "adam.h"

#include <tgmath.h>

#include "base/tmpl.h"
#include "kmath.h"
#include "optim.h"
#include "cpu/parallel.h"

static const pd_slot_def inputs[] = {
    [PARAM] = {"Param", "the parameter to update", PD_SLOT_NO_GRAD},
    [GRAD] = {"Grad", "its gradient, the shape of Param", PD_SLOT_NO_GRAD},
    [MOMENT1] = {"Moment1", "running mean of the gradient m, the shape of Param (zeros at the start)", PD_SLOT_NO_GRAD},
    [MOMENT2] = {"Moment2", "running mean of the squared gradient v, the shape of Param (zeros at the start)",
                 PD_SLOT_NO_GRAD},
    [LR] = {"LearningRate", "the step size lr, [1], float32 or float64", PD_SLOT_NO_GRAD},
    [STEP] = {"Step", "the update count t >= 1 (1 at the first update), [1], float64; kept by the trainer",
              PD_SLOT_NO_GRAD},
    [ROWS] = {"Rows",
              "int64 [n]: with a row-sparse Grad [n, ...] (embedding's), the rows of Param it updates, ascending, "
              "then -1; only those rows (and their state) change. Left out: Grad is dense",
              PD_SLOT_DISPENSABLE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    [PARAM_OUT] = {"ParamOut", "the updated parameter; usually Param itself", 0},
    [MOMENT1_OUT] = {"Moment1Out", "the updated m; usually Moment1 itself", 0},
    [MOMENT2_OUT] = {"Moment2Out", "the updated v; usually Moment2 itself", 0},
};
static const pd_attr_def attrs[] = {
    [A_BETA1] = {"beta1", "decay of the first moment", PD_ATTR_FLOAT, .def = "f: 0.9", .min_kind = PD_GE, .min = 0,
                 .max_kind = PD_GT, .max = 1},
    [A_BETA2] = {"beta2", "decay of the second moment", PD_ATTR_FLOAT, .def = "f: 0.999", .min_kind = PD_GE, .min = 0,
                 .max_kind = PD_GT, .max = 1},
    [A_EPS] = {"epsilon", "added to the denominator", PD_ATTR_FLOAT, .def = "f: 1e-8", .min_kind = PD_GT, .min = 0},
    [A_WD] = {"weight_decay", "L2 penalty: weight_decay * Param is added to the gradient", PD_ATTR_FLOAT,
              .def = "f: 0.0", .min_kind = PD_GE, .min = 0},
    [A_LR_MULT] = {"lr_mult",
                   "the parameter's multiplier of the learning rate (its var's lr_mult): the step uses lr * lr_mult",
                   PD_ATTR_FLOAT, .def = "f: 1.0", .min_kind = PD_GE, .min = 0},
};
static pd_status infer(pd_ctx *c) {
  pd_status st = pd_optim_check_param(c, PARAM);
  if (!st) st = pd_optim_check_grad(c, GRAD, ROWS, PARAM);
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

#define T float
#include "adam_t.h"
#undef T
#define T double
#include "adam_t.h"
#undef T

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
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
};
