/* cross_entropy.c — loss of probabilities X [N, C] against labels:
 * Out[i] = -log(X[i, label_i]), or with soft_label Out[i] = -sum_j L[i, j] log(X[i, j]).
 * X is clamped below at TINY (float32: its least normal, FLT_MIN; float64: 1e-20), so a
 * probability of 0 gives a large finite loss (87.3 / 46.1) instead of inf; the gradient is
 * -dOut L / max(X, TINY), finite too. */
#include <tgmath.h>

#include "label.h"
#include "gpu_ops.h"
#include "kmath.h"
#include "core/op.h"

enum { X, LABEL, N_IN };
enum { OUT, N_OUT };
enum { A_SOFT, N_ATTR };

static const pd_slot_def inputs[] = {
    {"X", "probabilities [N, C] (a softmax output, say); rows should sum to 1", 0},
    {"Label", "int64 [N, 1] or [N], the class of each row; with soft_label, a distribution [N, C] like X",
     PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {{"Out", "the loss of each row, [N, 1]", 0}};
static const pd_attr_def attrs[] = {
    {"soft_label", "Label holds a probability distribution per row instead of a class index", PD_ATTR_BOOL,
     .def = "b: false"},
};

/* The clamp at TINY and the per-element math: kmath.h's pd_ce_*, shared with the GPU kernels. */

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  char xs[128];
  if (x->ndim != 2)
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be [N, C] (2 dims), got %s",
                       pd_dims_str(x->ndim, x->dims, xs, sizeof xs));
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  pd_status st = pd_label_check(c, LABEL, x, pd_attr_b(c, A_SOFT));
  if (st) return st;
  int64_t n = x->dims[0] >= 0 ? x->dims[0] : pd_in(c, LABEL)->dims[0];
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, 2, (int64_t[]){n, 1});
}

#define CE_FORWARD(T)                                                                       \
  static pd_status forward_##T(pd_ctx *c) {                                                 \
    pd_tensor *xt = pd_in(c, X), *lt = pd_in(c, LABEL);                                     \
    int64_t n = xt->dims[0], k = xt->dims[1];                                               \
    const T *x = PD_DATA(xt, T);                                                            \
    T *out = PD_DATA(pd_out(c, OUT), T);                                                    \
    if (pd_attr_b(c, A_SOFT)) {                                                             \
      const T *l = PD_DATA(lt, T);                                                          \
      for (int64_t i = 0; i < n; i++) out[i] = pd_ce_soft_row_##T(x + i * k, l + i * k, k); \
      return PD_OK;                                                                         \
    }                                                                                       \
    const int64_t *label = PD_DATA(lt, int64_t);                                            \
    pd_status st = pd_label_check_range(c, label, n, k);                                    \
    if (st) return st;                                                                      \
    for (int64_t i = 0; i < n; i++) out[i] = pd_ce_hard_##T(x[i * k + label[i]]);           \
    return PD_OK;                                                                           \
  }
CE_FORWARD(float)
CE_FORWARD(double)

/* Grad op slots (see op.h): inputs X Label Out dOut, outputs dX (dLabel never). */
enum {
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_LABEL = PD_GRAD_X(N_IN, N_OUT, LABEL),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT),
  G_DX = PD_GRAD_DX(N_IN, N_OUT, X)
};

#define CE_BACKWARD(T)                                                                                 \
  static pd_status backward_##T(pd_ctx *c) {                                                           \
    pd_tensor *xt = pd_in(c, G_X), *lt = pd_in(c, G_LABEL), *dyt = pd_in(c, G_DOUT);                   \
    pd_tensor *dxt = pd_out(c, G_DX);                                                                  \
    if (!dxt) return PD_OK;                                                                            \
    int64_t n = xt->dims[0], k = xt->dims[1];                                                          \
    const T *x = PD_DATA(xt, T), *dy = dyt ? PD_DATA(dyt, T) : NULL;                                   \
    T *dx = PD_DATA(dxt, T);                                                                           \
    bool soft = pd_attr_b(c, A_SOFT);                                                                  \
    if (soft) {                                                                                        \
      const T *l = PD_DATA(lt, T);                                                                     \
      for (int64_t i = 0; i < n * k; i++) dx[i] = dy ? pd_ce_soft_grad_##T(dy[i / k], l[i], x[i]) : 0; \
      return PD_OK;                                                                                    \
    }                                                                                                  \
    const int64_t *label = PD_DATA(lt, int64_t);                                                       \
    pd_status st = pd_label_check_range(c, label, n, k);                                               \
    if (st) return st;                                                                                 \
    for (int64_t i = 0; i < n * k; i++) dx[i] = 0;                                                     \
    for (int64_t i = 0; dy && i < n; i++) {                                                            \
      int64_t j = i * k + label[i];                                                                    \
      dx[j] = pd_ce_hard_grad_##T(dy[i], x[j], true);                                                  \
    }                                                                                                  \
    return PD_OK;                                                                                      \
  }
CE_BACKWARD(float)
CE_BACKWARD(double)

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_cross_entropy_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_cross_entropy_bwd),
#endif
};

const pd_op_def pd_op_cross_entropy = {
    .type = "cross_entropy",
    .comment = "Cross-entropy of probabilities X [N, C] with class labels: Out [N, 1] = -log(X[label]); with "
               "soft_label, -sum_j Label[j] log(X[j]). X is clamped below at a tiny value (float32: 1.2e-38, "
               "float64: 1e-20), so a zero probability gives a large finite loss. A label outside [0, C) is "
               "an error.",
    .inputs = inputs,
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .attrs = attrs,
    .n_attrs = N_ATTR,
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
