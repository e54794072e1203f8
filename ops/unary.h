/* unary.h — the element-wise ops computed from X (leaky_relu, gelu,
 * softplus, clip): their slots, the per-element math for forward and
 * backward as PD_HD functions (unary_math_t.h), the CPU kernels when
 * PD_UNARY_OP is defined (unary_t.h) and the GPU kernels' declarations
 * (unary.cu). Unlike relu/sigmoid/tanh (act.h) their gradients need X
 * itself, which the grad op is given. Each op's def says which function
 * through its `data`; its attributes come first in its own table, in the
 * order the enums below give. */
#ifndef PD_OPS_UNARY_H
#define PD_OPS_UNARY_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "kmath.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_ALPHA = 0 };          /* leaky_relu */
enum { A_APPROXIMATE = 0 };    /* gelu */
enum { A_MIN = 0, A_MAX = 1 }; /* clip */
/* Grad op slots (see op.h): inputs X Out dOut, output dX. */
enum { G_X = PD_GRAD_X(N_IN, N_OUT, X), G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X) };

typedef enum pd_unary {
  PD_UNARY_LEAKY_RELU,
  PD_UNARY_GELU,      /* x Phi(x), Phi by erf */
  PD_UNARY_GELU_TANH, /* PyTorch's approximate="tanh" */
  PD_UNARY_SOFTPLUS,
  PD_UNARY_CLIP,
} pd_unary;

/* The function of one run: the kind, and its constants (leaky_relu: a =
 * alpha; clip: a = min, b = max). */
typedef struct pd_unary_p {
  pd_unary kind;
  double a, b;
} pd_unary_p;

/* Per-type libm calls the template needs beyond kmath.h's. */
PD_HD float pd_erfc_float(float x) { return erfcf(x); }
PD_HD double pd_erfc_double(double x) { return erfc(x); }
PD_HD float pd_log1p_float(float x) { return log1pf(x); }
PD_HD double pd_log1p_double(double x) { return log1p(x); }

/* gelu's tanh approximation: sqrt(2 / pi) and the cubic's coefficient */
#define PD_GELU_BETA 0.79788456080286535588
#define PD_GELU_KAPPA 0.044715

#define T float
#include "unary_math_t.h"
#undef T
#define T double
#include "unary_math_t.h"
#undef T

/* The function an op computes, from its def's data and its attributes
 * (the grad op has the same of both). */
static inline pd_unary_p pd_unary_params(pd_ctx *c) {
  pd_unary_p p = {*(const pd_unary *)c->op->def->data, 0, 0};
  if (p.kind == PD_UNARY_LEAKY_RELU) p.a = pd_attr_f(c, A_ALPHA);
  if (p.kind == PD_UNARY_GELU && strcmp(pd_attr_s(c, A_APPROXIMATE), "tanh") == 0) p.kind = PD_UNARY_GELU_TANH;
  if (p.kind == PD_UNARY_CLIP) p.a = pd_attr_f(c, A_MIN), p.b = pd_attr_f(c, A_MAX);
  return p;
}

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_unary_fwd(pd_ctx *c);
pd_status pd_gpu_unary_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#ifdef PD_UNARY_OP

#include "cpu/parallel.h"

static pd_status pd_unary_infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  pd_unary_p p = pd_unary_params(c);
  if (p.kind == PD_UNARY_CLIP && !(p.a <= p.b))
    return pd_ctx_fail(c, PD_ERR_INPUT, "attribute \"min\" (%g) must be <= attribute \"max\" (%g)", p.a, p.b);
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim, x->dims);
}

/* Long arrays are split among threads (PD_ELEMENTWISE_GRAIN elements at
 * least per part). */
typedef struct pd_unary_job {
  pd_unary_p p;
  const void *x, *dy;
  void *y;
} pd_unary_job;

#define T float
#include "unary_t.h"
#undef T
#define T double
#include "unary_t.h"
#undef T

/* Each op's def (leaky_relu.c, ...) takes these tables, with .data its kind,
 * .inplace = 1 and .grad_inplace: element i is computed from element i
 * alone, so Out may take X's buffer and dX dOut's (the grad op reads X, so
 * the memory plan keeps X while the backward needs it). */
static const pd_slot_def pd_unary_inputs[] = {[X] = {"X", "input tensor, float32 or float64", 0}};
static const pd_kernel pd_unary_kernels[] = {
    PD_CPU_F32(pd_unary_forward_float),
    PD_CPU_F64(pd_unary_forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_unary_fwd),
#endif
};
static const pd_kernel pd_unary_grad_kernels[] = {
    PD_CPU_F32(pd_unary_backward_float),
    PD_CPU_F64(pd_unary_backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_unary_bwd),
#endif
};

#endif

#endif
