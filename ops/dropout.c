/* dropout.c — inverted dropout. Training: each element is kept with
 * probability 1 - p and scaled by 1 / (1 - p), so Out's expected value is X;
 * Mask records which were kept (1) and dropped (0). Inference: Out = X, Mask
 * all 1. The mask comes from the run's per-op, per-step random stream, so a
 * seed gives the same masks on every run; the backward pass reuses Mask. */
#include <string.h>

#include "gpu_ops.h"
#include "core/op.h"
#include "base/rng.h"

enum { X, N_IN };
enum { OUT, MASK, N_OUT };
enum { A_PROB, N_ATTRS };

static const pd_slot_def inputs[] = {{"X", "input of any shape, float32 or float64", 0}};
static const pd_slot_def outputs[] = {
    {"Out", "training: X * Mask / (1 - dropout_prob); inference: X. X's shape", 0},
    {"Mask", "1 where X was kept, 0 where it was dropped (all 1 in inference), X's shape and dtype", 0},
};
static const pd_attr_def attrs[] = {
    {"dropout_prob", "probability p of dropping each element while training", PD_ATTR_FLOAT, .def = "f: 0.5",
     .min_kind = PD_GE, .min = 0, .max_kind = PD_GT, .max = 1},
};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  pd_status st = pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim, x->dims);
  if (!st) st = pd_ctx_set_shape(c, pd_out(c, MASK), x->dtype, x->ndim, x->dims);
  return st;
}

/* mask ~ Bernoulli(1 - p): element i is kept when the i-th uniform draw of
 * the stream is >= p. */
#define DROPOUT_FORWARD(T)                                                    \
  static pd_status forward_##T(pd_ctx *c) {                                   \
    pd_tensor *xt = pd_in(c, X);                                              \
    const T *x = PD_DATA(xt, T);                                              \
    T *out = PD_DATA(pd_out(c, OUT), T), *mask = PD_DATA(pd_out(c, MASK), T); \
    int64_t n = pd_tensor_numel(xt);                                          \
    if (!pd_ctx_training(c)) {                                                \
      if (n > 0 && out != x) memcpy(out, x, (size_t)n * sizeof(T));           \
      for (int64_t i = 0; i < n; i++) mask[i] = 1;                            \
      return PD_OK;                                                           \
    }                                                                         \
    double p = pd_attr_f(c, A_PROB);                                          \
    T keep_scale = (T)(1 / (1 - p));                                          \
    uint64_t s = pd_ctx_rng_seed(c);                                          \
    for (int64_t i = 0; i < n; i++) {                                         \
      bool keep = pd_rng_uniform_at(s, (uint64_t)i) >= p;                     \
      mask[i] = keep;                                                         \
      out[i] = x[i] * (keep ? keep_scale : 0); /* NaN * 0 stays NaN */        \
    }                                                                         \
    return PD_OK;                                                             \
  }
DROPOUT_FORWARD(float)
DROPOUT_FORWARD(double)

/* Grad op slots (see op.h): inputs X Out Mask dOut dMask, output dX. */
enum { G_MASK = PD_GRAD_Y(N_IN, N_OUT, MASK), G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT) };

/* dX = dOut · Mask / (1 - p) when training; dOut in inference. Mask is not
 * differentiable: a gradient into it is ignored (it is 0 almost everywhere). */
#define DROPOUT_BACKWARD(T)                                                        \
  static pd_status backward_##T(pd_ctx *c) {                                       \
    pd_tensor *dxt = pd_out(c, X), *dyt = pd_in(c, G_DOUT);                        \
    if (!dxt) return PD_OK;                                                        \
    T *dx = PD_DATA(dxt, T);                                                       \
    const T *mask = PD_DATA(pd_in(c, G_MASK), T), *dy = dyt ? PD_DATA(dyt, T) : 0; \
    int64_t n = pd_tensor_numel(dxt);                                              \
    T scale = (T)(pd_ctx_training(c) ? 1 / (1 - pd_attr_f(c, A_PROB)) : 1);        \
    for (int64_t i = 0; i < n; i++) dx[i] = dy ? dy[i] * mask[i] * scale : 0;      \
    return PD_OK;                                                                  \
  }
DROPOUT_BACKWARD(float)
DROPOUT_BACKWARD(double)

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_dropout_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_dropout_bwd),
#endif
};

const pd_op_def pd_op_dropout = {
    .type = "dropout",
    .comment = "Inverted dropout: Out = X * Mask / (1 - dropout_prob) while training, each Mask element 1 with "
               "probability 1 - dropout_prob (so the expected value is X); Out = X in inference. The mask comes from "
               "the run's seed (per op and step): the same seed gives the same masks. A dropped NaN stays NaN (X * 0, "
               "as PyTorch).",
    .inputs = inputs,
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .attrs = attrs,
    .n_attrs = N_ATTRS,
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
    .random = true,
};
