/* softmax_with_cross_entropy.c — softmax and cross-entropy fused, from logits Z [N, C]:
 * Softmax = exp(Z - lse), Loss[i] = lse_i - Z[i, label_i], lse_i = m_i + log sum_j exp(Z[i, j] - m_i)
 * with m_i the row max; the loss comes from the logits, never from log(softmax), so it stays
 * exact and finite for logits like 1e4 and -1e4. Backward: dZ = (Softmax - onehot) dLoss. */
#include <tgmath.h>

#include "label.h"
#include "gpu_ops.h"
#include "kmath.h"
#include "core/op.h"

enum { LOGITS, LABEL, N_IN };
enum { SOFTMAX, LOSS, N_OUT };
enum { A_SOFT, N_ATTR };

static const pd_slot_def inputs[] = {
    {"Logits", "unnormalised scores [N, C]", 0},
    {"Label", "int64 [N, 1] or [N], the class of each row; with soft_label, a distribution [N, C]", PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    {"Softmax", "softmax of Logits over each row, [N, C]", 0},
    {"Loss", "cross-entropy of each row, [N, 1]", 0},
};
static const pd_attr_def attrs[] = {
    {"soft_label", "Label holds a probability distribution per row instead of a class index", PD_ATTR_BOOL,
     .def = "b: false"},
};

static pd_status infer(pd_ctx *c) {
  pd_tensor *z = pd_in(c, LOGITS);
  char zs[128];
  if (z->ndim != 2)
    return pd_ctx_fail(c, PD_ERR_INPUT, "input Logits must be [N, C] (2 dims), got %s",
                       pd_dims_str(z->ndim, z->dims, zs, sizeof zs));
  if (!pd_dtype_is_float(z->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input Logits must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(z->dtype));
  pd_status st = pd_label_check(c, LABEL, z, pd_attr_b(c, A_SOFT));
  if (st) return st;
  int64_t n = z->dims[0] >= 0 ? z->dims[0] : pd_in(c, LABEL)->dims[0];
  st = pd_ctx_set_shape(c, pd_out(c, SOFTMAX), z->dtype, 2, (int64_t[]){n, z->dims[1]});
  if (!st) st = pd_ctx_set_shape(c, pd_out(c, LOSS), z->dtype, 2, (int64_t[]){n, 1});
  return st;
}

/* Per row: Softmax, and Loss from lse - Z[j] = (m - Z[j]) + log(sum), which keeps
 * the big terms apart (m and Z[j] cancel exactly; log(sum) is in [0, log C]). */
#define SWCE_FORWARD(T)                                                                              \
  static pd_status forward_##T(pd_ctx *c) {                                                          \
    pd_tensor *zt = pd_in(c, LOGITS), *lt = pd_in(c, LABEL);                                         \
    int64_t n = zt->dims[0], k = zt->dims[1];                                                        \
    bool soft = pd_attr_b(c, A_SOFT);                                                                \
    const int64_t *label = soft ? NULL : PD_DATA(lt, int64_t);                                       \
    const T *soft_l = soft ? PD_DATA(lt, T) : NULL;                                                  \
    if (!soft) {                                                                                     \
      pd_status st = pd_label_check_range(c, label, n, k);                                           \
      if (st) return st;                                                                             \
    }                                                                                                \
    const T *z = PD_DATA(zt, T);                                                                     \
    T *s = PD_DATA(pd_out(c, SOFTMAX), T), *loss = PD_DATA(pd_out(c, LOSS), T);                      \
    for (int64_t i = 0; i < n; i++, z += k, s += k) {                                                \
      T m = z[0], sum = 0;                                                                           \
      for (int64_t j = 1; j < k; j++) m = z[j] > m ? z[j] : m;                                       \
      for (int64_t j = 0; j < k; j++) {                                                              \
        s[j] = exp(z[j] - m);                                                                        \
        sum += s[j];                                                                                 \
      }                                                                                              \
      T log_sum = log(sum), inv = 1 / sum;                                                           \
      for (int64_t j = 0; j < k; j++) s[j] *= inv;                                                   \
      if (!soft) {                                                                                   \
        loss[i] = pd_swce_term_##T(m, z[label[i]], log_sum);                                         \
        continue;                                                                                    \
      }                                                                                              \
      T acc = 0;                                                                                     \
      for (int64_t j = 0; j < k; j++) acc += soft_l[i * k + j] * pd_swce_term_##T(m, z[j], log_sum); \
      loss[i] = acc;                                                                                 \
    }                                                                                                \
    return PD_OK;                                                                                    \
  }
SWCE_FORWARD(float)
SWCE_FORWARD(double)

/* Grad op slots (see op.h): inputs Logits Label Softmax Loss dSoftmax dLoss, outputs dLogits.
 * dZ = (S sum_j L_j - L) dLoss (hard labels: S - onehot), plus, when a gradient reaches the
 * Softmax output too, the softmax backward S (dS - <dS, S>). */
enum {
  G_LABEL = PD_GRAD_X(N_IN, N_OUT, LABEL),
  G_SOFTMAX = PD_GRAD_Y(N_IN, N_OUT, SOFTMAX),
  G_DSOFTMAX = PD_GRAD_DY(N_IN, N_OUT, SOFTMAX),
  G_DLOSS = PD_GRAD_DY(N_IN, N_OUT, LOSS),
  G_DLOGITS = PD_GRAD_DX(N_IN, N_OUT, LOGITS)
};

#define SWCE_BACKWARD(T)                                                                          \
  static pd_status backward_##T(pd_ctx *c) {                                                      \
    pd_tensor *smt = pd_in(c, G_SOFTMAX), *lt = pd_in(c, G_LABEL);                                \
    pd_tensor *dst = pd_in(c, G_DSOFTMAX), *dlt = pd_in(c, G_DLOSS), *dzt = pd_out(c, G_DLOGITS); \
    if (!dzt) return PD_OK;                                                                       \
    int64_t n = smt->dims[0], k = smt->dims[1];                                                   \
    bool soft = pd_attr_b(c, A_SOFT);                                                             \
    const int64_t *label = soft ? NULL : PD_DATA(lt, int64_t);                                    \
    const T *soft_l = soft ? PD_DATA(lt, T) : NULL;                                               \
    if (!soft) {                                                                                  \
      pd_status st = pd_label_check_range(c, label, n, k);                                        \
      if (st) return st;                                                                          \
    }                                                                                             \
    const T *s = PD_DATA(smt, T), *ds = dst ? PD_DATA(dst, T) : NULL;                             \
    const T *dloss = dlt ? PD_DATA(dlt, T) : NULL;                                                \
    T *dz = PD_DATA(dzt, T);                                                                      \
    for (int64_t i = 0; i < n; i++, s += k, dz += k) {                                            \
      T g = dloss ? dloss[i] : 0;                                                                 \
      if (soft) {                                                                                 \
        const T *l = soft_l + i * k;                                                              \
        T mass = 0;                                                                               \
        for (int64_t j = 0; j < k; j++) mass += l[j];                                             \
        for (int64_t j = 0; j < k; j++) dz[j] = pd_swce_soft_grad_##T(s[j], l[j], mass, g);       \
      } else {                                                                                    \
        for (int64_t j = 0; j < k; j++) dz[j] = pd_swce_hard_grad_##T(s[j], g, j == label[i]);    \
      }                                                                                           \
      if (ds) {                                                                                   \
        const T *dsi = ds + i * k;                                                                \
        T dot = 0;                                                                                \
        for (int64_t j = 0; j < k; j++) dot += dsi[j] * s[j];                                     \
        for (int64_t j = 0; j < k; j++) dz[j] += pd_softmax_grad_##T(s[j], dsi[j], dot);          \
      }                                                                                           \
    }                                                                                             \
    return PD_OK;                                                                                 \
  }
SWCE_BACKWARD(float)
SWCE_BACKWARD(double)

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_softmax_with_cross_entropy_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_softmax_with_cross_entropy_bwd),
#endif
};

const pd_op_def pd_op_softmax_with_cross_entropy = {
    .type = "softmax_with_cross_entropy",
    .comment = "Softmax of Logits [N, C] and its cross-entropy with the labels, fused: Loss [N, 1] = "
               "logsumexp(Z) - Z[label] (soft_label: sum_j Label[j] (logsumexp(Z) - Z[j])), from the logits "
               "with the row max subtracted, so it is exact and finite for any finite logits. A label "
               "outside [0, C) is an error.",
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
