/* act.h — the activations fused into fc and used by relu/sigmoid/tanh: the
 * per-element math for forward and backward, written once. Backward is in
 * terms of the output y, so the input need not be kept. */
#ifndef PD_ACT_H
#define PD_ACT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "cpu/vmath.h"
#include "kmath.h"

typedef enum pd_act { PD_ACT_NONE, PD_ACT_RELU, PD_ACT_SIGMOID, PD_ACT_TANH } pd_act;

static const char *const pd_act_names[] = {"none", "relu", "sigmoid", "tanh", 0};

static inline pd_act pd_act_parse(const char *s) {
  for (int i = 0; pd_act_names[i]; i++)
    if (strcmp(s, pd_act_names[i]) == 0) return (pd_act)i;
  return PD_ACT_NONE;
}

/* sigmoid and tanh of a row on the CPU: float by lib/cpu/vmath.h's vectors
 * (within 3 ulp; libm's call per element cost as much as the fc before
 * it), double by libm. */
static inline void pd_act_sigmoid_row_float(const float *x, float *y, int64_t n) { pd_vsigmoid_f32(x, y, n); }
static inline void pd_act_tanh_row_float(const float *x, float *y, int64_t n) { pd_vtanh_f32(x, y, n); }
static inline void pd_act_sigmoid_row_double(const double *x, double *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = pd_sigmoid_double(x[i]);
}
static inline void pd_act_tanh_row_double(const double *x, double *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = pd_tanh_double(x[i]);
}

/* A row at a time (fc's epilogue, the activation ops' CPU kernels):
 * pd_act_forward_T and pd_act_backward_T. */
#define T float
#include "act_t.h"
#undef T
#define T double
#include "act_t.h"
#undef T

/* One element, the activation chosen at run time (the GPU kernels). */
PD_HD float pd_act_float(pd_act a, float x) {
  return a == PD_ACT_RELU      ? pd_relu_float(x)
         : a == PD_ACT_SIGMOID ? pd_sigmoid_float(x)
         : a == PD_ACT_TANH    ? pd_tanh_float(x)
                               : x;
}
PD_HD float pd_act_grad_float(pd_act a, float y, float dy) {
  return a == PD_ACT_RELU      ? pd_relu_grad_float(y, dy)
         : a == PD_ACT_SIGMOID ? pd_sigmoid_grad_float(y, dy)
         : a == PD_ACT_TANH    ? pd_tanh_grad_float(y, dy)
                               : dy;
}

/* ---- the activation ops (relu.c, sigmoid.c, tanh.c) ----
 * One implementation for all three; the def's `data` says which activation.
 * Out has X's shape; the backward works from Out (see pd_act_backward_T).
 * Their slots carry a prefix: fc, which has its own X and Out, includes
 * this header too. */
enum { PD_ACT_X, PD_ACT_N_IN };
enum { PD_ACT_OUT, PD_ACT_N_OUT };
/* Grad op slots (see op.h): inputs X Out dOut, output dX. */
enum {
  PD_ACT_G_OUT = PD_GRAD_Y(PD_ACT_N_IN, PD_ACT_N_OUT, PD_ACT_OUT),
  PD_ACT_G_DOUT = PD_GRAD_DY(PD_ACT_N_IN, PD_ACT_N_OUT, PD_ACT_OUT),
  PD_ACT_G_DX = PD_GRAD_DX(PD_ACT_N_IN, PD_ACT_N_OUT, PD_ACT_X)
};

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_act_fwd(pd_ctx *c);
pd_status pd_gpu_act_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#ifdef PD_ACT_OP

#include "cpu/parallel.h"

static inline pd_act pd_act_of(pd_ctx *c) { return *(const pd_act *)c->op->def->data; }

static pd_status pd_act_infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, PD_ACT_X);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  return pd_ctx_set_shape(c, pd_out(c, PD_ACT_OUT), x->dtype, x->ndim, x->dims);
}

/* Long arrays are split among threads (PD_ELEMENTWISE_GRAIN elements at
 * least per part). */
typedef struct pd_act_job {
  pd_act a;
  const void *x, *dy;
  void *y;
} pd_act_job;

#define T float
#include "act_op_t.h"
#undef T
#define T double
#include "act_op_t.h"
#undef T

static const pd_slot_def pd_act_inputs[] = {[PD_ACT_X] = {"X", "input tensor", 0}};
static const pd_kernel pd_act_kernels[] = {
    PD_CPU_F32(pd_act_op_forward_float),
    PD_CPU_F64(pd_act_op_forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_act_fwd),
#endif
};
static const pd_kernel pd_act_grad_kernels[] = {
    PD_CPU_F32(pd_act_op_backward_float),
    PD_CPU_F64(pd_act_op_backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_act_bwd),
#endif
};

/* The def of an activation op: its type, comment, output slot and kind. */
#define PD_ACT_OP_DEF(TYPE, COMMENT, OUTPUTS, KIND)                                                                   \
  {                                                                                                                   \
    .type = TYPE, .comment = COMMENT, .inputs = pd_act_inputs, .n_inputs = PD_LEN(pd_act_inputs), .outputs = OUTPUTS, \
    .n_outputs = PD_LEN(OUTPUTS), .infer_shape = pd_act_infer, .kernels = pd_act_kernels,                             \
    .n_kernels = PD_LEN(pd_act_kernels), .grad_kernels = pd_act_grad_kernels,                                         \
    .n_grad_kernels = PD_LEN(pd_act_grad_kernels), .data = KIND, .inplace = 1,                                        \
    .grad_inplace = true, /* element i from element i: Out over X, dX over dOut */                                    \
  }

#endif

#endif
