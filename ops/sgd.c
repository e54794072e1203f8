/* sgd.c — plain gradient descent with optional weight decay (L2):
 * ParamOut = Param - lr (Grad + weight_decay Param). ParamOut may be Param
 * itself (each element is read before it is written). No gradient. */
#include "sgd.h"

#include "base/tmpl.h"
#include "kmath.h"
#include "optim.h"
#include "cpu/parallel.h"

static const pd_slot_def inputs[] = {
    [PARAM] = {"Param", "the parameter to update", PD_SLOT_NO_GRAD},
    [GRAD] = {"Grad", "its gradient, the shape of Param", PD_SLOT_NO_GRAD},
    [LR] = {"LearningRate", "the step size lr, [1], float32 or float64", PD_SLOT_NO_GRAD},
    [ROWS] = {"Rows",
              "int64 [n]: with a row-sparse Grad [n, ...] (embedding's), the rows of Param it updates, ascending, "
              "then -1; only those rows (and their state) change. Left out: Grad is dense",
              PD_SLOT_DISPENSABLE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {[PARAM_OUT] = {"ParamOut", "the updated parameter; usually Param itself", 0}};
static const pd_attr_def attrs[] = {
    [A_WD] = {"weight_decay", "L2 penalty: weight_decay * Param is added to the gradient", PD_ATTR_FLOAT,
              .def = "f: 0.0", .min_kind = PD_GE, .min = 0},
    [A_LR_MULT] = {"lr_mult",
                   "the parameter's multiplier of the learning rate (its var's lr_mult): the step uses lr * lr_mult",
                   PD_ATTR_FLOAT, .def = "f: 1.0", .min_kind = PD_GE, .min = 0},
};
static pd_status infer(pd_ctx *c) {
  pd_status st = pd_optim_check_param(c, PARAM);
  if (!st) st = pd_optim_check_grad(c, GRAD, ROWS, PARAM);
  if (!st) st = pd_optim_check_lr(c, LR);
  if (!st) st = pd_optim_out_like(c, PARAM_OUT, PARAM);
  return st;
}

/* Long parameters are updated by several threads, each a range of it. */
typedef struct job {
  const void *p, *g;
  void *out;
  double lr, wd;
} job;

#define T float
#include "sgd_t.h"
#undef T
#define T double
#include "sgd_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(update_float),
    PD_CPU_F64(update_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_sgd_fwd),
#endif
};

const pd_op_def pd_op_sgd = {
    .type = "sgd",
    .flags = PD_OP_UPDATE,
    .comment = "Stochastic gradient descent step: ParamOut = Param - lr (Grad + weight_decay Param). "
               "ParamOut may be the same variable as Param.",
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
