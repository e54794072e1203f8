/* scale.c — Out = scale * X + bias, or scale * (X + bias) when
 * bias_after_scale is false (Paddle's scale op). Backward: dX = scale * dOut.
 * One body for float and double. */
#include "gpu_ops.h"
#include "core/op.h"
#include "cpu/parallel.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_SCALE, A_BIAS, A_AFTER, N_ATTRS };

static const pd_slot_def inputs[] = {{"X", "input tensor", 0}};
static const pd_slot_def outputs[] = {{"Out", "scale * X + bias (or scale * (X + bias)), X's shape", 0}};
static const pd_attr_def attrs[] = {
    {"scale", "the factor X is multiplied by", PD_ATTR_FLOAT, .def = "f: 1.0"},
    {"bias", "the constant added", PD_ATTR_FLOAT, .def = "f: 0.0"},
    {"bias_after_scale", "true: scale * X + bias; false: scale * (X + bias)", PD_ATTR_BOOL, .def = "b: true"},
};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim, x->dims);
}

/* scale * (X + bias) = scale * X + scale * bias: one loop either way. Long
 * tensors (a batch of pixels) are split in ranges on the worker pool. */

#define SCALE_KERNELS(T)                                                                                         \
  typedef struct scale_job_##T {                                                                                 \
    const T *x;                                                                                                  \
    T *out, a, d;                                                                                                \
  } scale_job_##T;                                                                                               \
  static void range_##T(void *arg, int64_t lo, int64_t hi) {                                                     \
    const scale_job_##T *j = arg; /* in locals: out could alias *j, for all the compiler knows */                \
    const T *x = j->x, a = j->a, d = j->d;                                                                       \
    T *out = j->out;                                                                                             \
    for (int64_t i = lo; i < hi; i++) out[i] = pd_scale_##T(x[i], a, d);                                         \
  }                                                                                                              \
  static void grad_range_##T(void *arg, int64_t lo, int64_t hi) {                                                \
    const scale_job_##T *j = arg;                                                                                \
    const T *x = j->x, a = j->a;                                                                                 \
    T *out = j->out;                                                                                             \
    for (int64_t i = lo; i < hi; i++) out[i] = a * x[i];                                                         \
  }                                                                                                              \
  static pd_status forward_##T(pd_ctx *c) {                                                                      \
    pd_tensor *x = pd_in(c, X);                                                                                  \
    double s = pd_attr_f(c, A_SCALE), b = pd_attr_f(c, A_BIAS);                                                  \
    scale_job_##T j = {PD_DATA(x, T), PD_DATA(pd_out(c, OUT), T), (T)s, (T)(pd_attr_b(c, A_AFTER) ? b : s * b)}; \
    pd_parallel_for(pd_tensor_numel(x), PD_ELEMENTWISE_GRAIN, range_##T, &j);                                    \
    return PD_OK;                                                                                                \
  }                                                                                                              \
  /* Grad op slots (see op.h): inputs X Out dOut, output dX = a dOut */                                          \
  static pd_status backward_##T(pd_ctx *c) {                                                                     \
    pd_tensor *dy = pd_in(c, PD_GRAD_DY(N_IN, N_OUT, OUT)), *dx = pd_out(c, X);                                  \
    if (!dx) return PD_OK;                                                                                       \
    scale_job_##T j = {PD_DATA(dy, T), PD_DATA(dx, T), (T)pd_attr_f(c, A_SCALE), 0};                             \
    pd_parallel_for(pd_tensor_numel(dy), PD_ELEMENTWISE_GRAIN, grad_range_##T, &j);                              \
    return PD_OK;                                                                                                \
  }
SCALE_KERNELS(float)
SCALE_KERNELS(double)

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_scale_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_scale_bwd),
#endif
};

const pd_op_def pd_op_scale = {
    .type = "scale",
    .comment = "Out = scale * X + bias (bias_after_scale, the default) or scale * (X + bias).",
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
};
