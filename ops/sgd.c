/* sgd.c — plain gradient descent with optional weight decay (L2):
 * ParamOut = Param - lr (Grad + weight_decay Param). ParamOut may be Param
 * itself (each element is read before it is written). No gradient. */
#include "gpu_ops.h"
#include "kmath.h"
#include "optim.h"
#include "cpu/parallel.h"

enum { PARAM, GRAD, LR, N_IN };
enum { PARAM_OUT, N_OUT };
enum { A_WD, N_ATTR };

static const pd_slot_def inputs[] = {
    {"Param", "the parameter to update", PD_SLOT_NO_GRAD},
    {"Grad", "its gradient, the shape of Param", PD_SLOT_NO_GRAD},
    {"LearningRate", "the step size lr, [1], float32 or float64", PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {{"ParamOut", "the updated parameter; usually Param itself", 0}};
static const pd_attr_def attrs[] = {
    {"weight_decay", "L2 penalty: weight_decay * Param is added to the gradient", PD_ATTR_FLOAT, .def = "f: 0.0",
     .min_kind = PD_GE, .min = 0},
};

static pd_status infer(pd_ctx *c) {
  pd_status st = pd_optim_check_param(c, PARAM);
  if (!st) st = pd_optim_check_like(c, GRAD, PARAM);
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

#define SGD_UPDATE(T)                                                                                   \
  static void range_##T(void *arg, int64_t lo, int64_t hi) {                                            \
    const job *j = arg;                                                                                 \
    const T *p = j->p, *g = j->g;                                                                       \
    T *out = j->out, lr = (T)j->lr, wd = (T)j->wd;                                                      \
    if (out == p) { /* in place: vectorizable */                                                        \
      T *restrict pp = out;                                                                             \
      const T *restrict gg = g;                                                                         \
      for (int64_t i = lo; i < hi; i++) pp[i] = pd_sgd_##T(pp[i], gg[i], lr, wd);                       \
      return;                                                                                           \
    }                                                                                                   \
    for (int64_t i = lo; i < hi; i++) out[i] = pd_sgd_##T(p[i], g[i], lr, wd);                          \
  }                                                                                                     \
  static pd_status update_##T(pd_ctx *c) {                                                              \
    job j = {PD_DATA(pd_in(c, PARAM), T), PD_DATA(pd_in(c, GRAD), T), PD_DATA(pd_out(c, PARAM_OUT), T), \
             (T)pd_tensor_get(pd_in(c, LR), 0), pd_attr_f(c, A_WD)};                                    \
    pd_parallel_for(pd_tensor_numel(pd_in(c, PARAM)), PD_UPDATE_GRAIN, range_##T, &j);                  \
    return PD_OK;                                                                                       \
  }
SGD_UPDATE(float)
SGD_UPDATE(double)

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
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .attrs = attrs,
    .n_attrs = N_ATTR,
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
};
