/* act.h — the activations fused into fc and used by relu/sigmoid/tanh: the
 * per-element math for forward and backward, written once. Backward is in
 * terms of the output y, so the input need not be kept. */
#ifndef PD_ACT_H
#define PD_ACT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kmath.h"

typedef enum pd_act { PD_ACT_NONE, PD_ACT_RELU, PD_ACT_SIGMOID, PD_ACT_TANH } pd_act;

static const char *const pd_act_names[] = {"none", "relu", "sigmoid", "tanh", 0};

static inline pd_act pd_act_parse(const char *s) {
  for (int i = 0; pd_act_names[i]; i++)
    if (strcmp(s, pd_act_names[i]) == 0) return (pd_act)i;
  return PD_ACT_NONE;
}

#define PD_ACT_DEFINE(T)                                                                        \
  static inline void pd_act_forward_##T(pd_act a, const T *x, T *y, int64_t n) {                \
    switch (a) {                                                                                \
    case PD_ACT_NONE:                                                                           \
      if (x != y) memcpy(y, x, (size_t)n * sizeof(T));                                          \
      break;                                                                                    \
    case PD_ACT_RELU:                                                                           \
      for (int64_t i = 0; i < n; i++) y[i] = pd_relu_##T(x[i]);                                 \
      break;                                                                                    \
    case PD_ACT_SIGMOID:                                                                        \
      for (int64_t i = 0; i < n; i++) y[i] = pd_sigmoid_##T(x[i]);                              \
      break;                                                                                    \
    case PD_ACT_TANH:                                                                           \
      for (int64_t i = 0; i < n; i++) y[i] = pd_tanh_##T(x[i]);                                 \
      break;                                                                                    \
    }                                                                                           \
  }                                                                                             \
  /* dx = dy * act'(x), expressed through y = act(x). */                                        \
  static inline void pd_act_backward_##T(pd_act a, const T *y, const T *dy, T *dx, int64_t n) { \
    switch (a) {                                                                                \
    case PD_ACT_NONE:                                                                           \
      if (dx != dy) memcpy(dx, dy, (size_t)n * sizeof(T));                                      \
      break;                                                                                    \
    case PD_ACT_RELU:                                                                           \
      for (int64_t i = 0; i < n; i++) dx[i] = pd_relu_grad_##T(y[i], dy[i]);                    \
      break;                                                                                    \
    case PD_ACT_SIGMOID:                                                                        \
      for (int64_t i = 0; i < n; i++) dx[i] = pd_sigmoid_grad_##T(y[i], dy[i]);                 \
      break;                                                                                    \
    case PD_ACT_TANH:                                                                           \
      for (int64_t i = 0; i < n; i++) dx[i] = pd_tanh_grad_##T(y[i], dy[i]);                    \
      break;                                                                                    \
    }                                                                                           \
  }
PD_ACT_DEFINE(float)
PD_ACT_DEFINE(double)

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
 * Out has X's shape; the backward works from Out (see pd_act_backward_T). */
#ifdef PD_ACT_OP

#include "gpu_ops.h"
#include "core/op.h"
#include "cpu/parallel.h"

static inline pd_act pd_act_of(pd_ctx *c) { return *(const pd_act *)c->op->def->data; }

static pd_status pd_act_infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, 0);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  return pd_ctx_set_shape(c, pd_out(c, 0), x->dtype, x->ndim, x->dims);
}

/* Grad op slots (see op.h): inputs X Out dOut, output dX. Long arrays are
 * split among threads (PD_ELEMENTWISE_GRAIN elements at least per part). */
typedef struct pd_act_job {
  pd_act a;
  const void *x, *dy;
  void *y;
} pd_act_job;

#define PD_ACT_OP_KERNELS(T)                                                                              \
  static void pd_act_range_forward_##T(void *arg, int64_t lo, int64_t hi) {                               \
    const pd_act_job *j = arg;                                                                            \
    pd_act_forward_##T(j->a, (const T *)j->x + lo, (T *)j->y + lo, hi - lo);                              \
  }                                                                                                       \
  static void pd_act_range_backward_##T(void *arg, int64_t lo, int64_t hi) {                              \
    const pd_act_job *j = arg; /* x: Out, y: dX */                                                        \
    pd_act_backward_##T(j->a, (const T *)j->x + lo, (const T *)j->dy + lo, (T *)j->y + lo, hi - lo);      \
  }                                                                                                       \
  static pd_status pd_act_op_forward_##T(pd_ctx *c) {                                                     \
    pd_tensor *x = pd_in(c, 0);                                                                           \
    pd_act_job j = {pd_act_of(c), PD_DATA(x, T), NULL, PD_DATA(pd_out(c, 0), T)};                         \
    pd_parallel_for(pd_tensor_numel(x), PD_ELEMENTWISE_GRAIN, pd_act_range_forward_##T, &j);              \
    return PD_OK;                                                                                         \
  }                                                                                                       \
  static pd_status pd_act_op_backward_##T(pd_ctx *c) {                                                    \
    pd_tensor *y = pd_in(c, PD_GRAD_Y(1, 1, 0)), *dy = pd_in(c, PD_GRAD_DY(1, 1, 0)), *dx = pd_out(c, 0); \
    if (!dx) return PD_OK;                                                                                \
    pd_act_job j = {pd_act_of(c), PD_DATA(y, T), PD_DATA(dy, T), PD_DATA(dx, T)};                         \
    pd_parallel_for(pd_tensor_numel(y), PD_ELEMENTWISE_GRAIN, pd_act_range_backward_##T, &j);             \
    return PD_OK;                                                                                         \
  }
PD_ACT_OP_KERNELS(float)
PD_ACT_OP_KERNELS(double)

static const pd_slot_def pd_act_inputs[] = {{"X", "input tensor", 0}};
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
#define PD_ACT_OP_DEF(TYPE, COMMENT, OUTPUTS, KIND)                                                                 \
  {                                                                                                                 \
    .type = TYPE, .comment = COMMENT, .inputs = pd_act_inputs, .n_inputs = 1, .outputs = OUTPUTS, .n_outputs = 1,   \
    .infer_shape = pd_act_infer, .kernels = pd_act_kernels, .n_kernels = PD_LEN(pd_act_kernels),                    \
    .grad_kernels = pd_act_grad_kernels, .n_grad_kernels = PD_LEN(pd_act_grad_kernels), .data = KIND, .inplace = 1, \
    .grad_inplace = true, /* element i from element i: Out over X, dX over dOut */                                  \
  }

#endif

#endif
