/* clip_by_global_norm.c — rescales a set of tensors (the gradients) together:
 * norm = sqrt(sum of the squares of every element of every X), summed in double in
 * slot order; if norm > max_norm, Out_i = X_i max_norm / norm, else Out_i = X_i.
 * Out may be the X variables themselves. No gradient. */
#include <math.h>

#include "gpu_ops.h"
#include "kmath.h"
#include "optim.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_MAX_NORM, N_ATTR };

static const pd_slot_def inputs[] = {
    {"X", "the tensors to clip together (all gradients), of one float dtype", PD_SLOT_DUPLICABLE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    {"Out", "the clipped tensors, one per X in the same order; usually the X variables themselves", PD_SLOT_DUPLICABLE},
};
static const pd_attr_def attrs[] = {
    {"max_norm", "largest global L2 norm let through", PD_ATTR_FLOAT, .required = true, .min_kind = PD_GT, .min = 0},
};

#define CLIP_FORWARD(T)                                                                        \
  static pd_status forward_##T(pd_ctx *c) {                                                    \
    int n = pd_in_count(c, X);                                                                 \
    double sum = 0;                                                                            \
    for (int i = 0; i < n; i++) {                                                              \
      const pd_tensor *xt = pd_in_at(c, X, i);                                                 \
      const T *x = PD_DATA(xt, T);                                                             \
      for (int64_t j = 0, len = pd_tensor_numel(xt); j < len; j++) sum += (double)x[j] * x[j]; \
    }                                                                                          \
    T scale = (T)pd_clip_scale(sum, pd_attr_f(c, A_MAX_NORM));                                 \
    for (int i = 0; i < n; i++) {                                                              \
      const pd_tensor *xt = pd_in_at(c, X, i);                                                 \
      const T *x = PD_DATA(xt, T);                                                             \
      T *out = PD_DATA(pd_out_at(c, OUT, i), T);                                               \
      if (scale == 1 && out == x) continue; /* in place, nothing to do */                      \
      for (int64_t j = 0, len = pd_tensor_numel(xt); j < len; j++) out[j] = x[j] * scale;      \
    }                                                                                          \
    return PD_OK;                                                                              \
  }
CLIP_FORWARD(float)
CLIP_FORWARD(double)

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_clip_by_global_norm_fwd),
#endif
};

const pd_op_def pd_op_clip_by_global_norm = {
    .type = "clip_by_global_norm",
    .flags = PD_OP_GRAD_CLIP,
    .comment =
        "Gradient clipping by the global norm of all X together: if sqrt(sum of squares) > max_norm, "
        "every X is scaled by max_norm / norm (a NaN norm makes every Out NaN). Out may be the same variables as X.",
    .inputs = inputs,
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .attrs = attrs,
    .n_attrs = N_ATTR,
    .infer_shape = pd_optim_infer_list,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
};
