/* softmax_with_cross_entropy.c — softmax and cross-entropy fused, from logits Z [N, C]:
 * Softmax = exp(Z - lse), Loss[i] = lse_i - Z[i, label_i], lse_i = m_i + log sum_j exp(Z[i, j] - m_i)
 * with m_i the row max; the loss comes from the logits, never from log(softmax), so it stays
 * exact and finite for logits like 1e4 and -1e4. Backward: dZ = (Softmax - onehot) dLoss.
 * Logits of more dims, [batch, time, ..., C] (a language model's), are rows the same way, with
 * labels [batch, time, ...] and Loss [batch, time, ..., 1]. */
#include "softmax_with_cross_entropy.h"

#include <string.h>
#include <tgmath.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "cpu/vmath.h"
#include "kmath.h"
#include "label.h"
#include "lastdim.h"

static const pd_slot_def inputs[] = {
    [LOGITS] = {"Logits", "unnormalised scores [N, C], or [batch, time, ..., C] (a row per step)", 0},
    [LABEL] = {"Label",
               "int64 [N, 1] or [N], the class of each row (for Logits [batch, time, ..., C]: [batch, time, ...] "
               "or that with a last dim of 1); with soft_label, a distribution shaped like Logits",
               PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    [SOFTMAX] = {"Softmax", "softmax of Logits over each row, Logits' shape", 0},
    [LOSS] = {"Loss", "cross-entropy of each row, [N, 1] ([batch, time, ..., 1])", 0},
};
static const pd_attr_def attrs[] = {
    [A_SOFT] = {"soft_label", "Label holds a probability distribution per row instead of a class index", PD_ATTR_BOOL,
                .def = "b: false"},
};

/* The labels of Logits [batch, time, ..., C]: as Logits without its last dim (or with a last
 * dim of 1) of int64 classes, or with soft_label a distribution shaped like Logits. */
static pd_status check_seq_labels(pd_ctx *c, const pd_tensor *z, bool soft) {
  const pd_tensor *l = pd_in(c, LABEL);
  int lead = z->ndim - 1;
  bool ok = soft ? l->dtype == z->dtype && l->ndim == z->ndim
                 : l->dtype == PD_I64 && (l->ndim == lead || (l->ndim == z->ndim && l->dims[lead] == 1));
  for (int d = 0; ok && d < (soft ? z->ndim : lead); d++) ok = pd_dim_fits(l->dims[d], z->dims[d]);
  if (ok) return PD_OK;
  char zs[128];
  pd_dims_str(z->ndim, z->dims, zs, sizeof zs);
  return pd_ctx_fail_shape(c, "Label", pd_ctx_in_name(c, LABEL, 0), l,
                           soft ? "with soft_label, a distribution per row shaped like Logits"
                                : "int64 classes shaped like Logits without its last dim (or with a last dim of 1)");
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *z = pd_in(c, LOGITS);
  char zs[128];
  if (z->ndim < 2)
    return pd_ctx_fail(c, PD_ERR_INPUT, "input Logits must be [N, C] or [batch, time, ..., C], got %s",
                       pd_dims_str(z->ndim, z->dims, zs, sizeof zs));
  if (!pd_dtype_is_float(z->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input Logits must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(z->dtype));
  bool soft = pd_attr_b(c, A_SOFT);
  pd_status st = z->ndim == 2 ? pd_label_check(c, LABEL, z, soft) : check_seq_labels(c, z, soft);
  if (st) return st;
  int64_t dims[PD_MAX_DIMS];
  memcpy(dims, z->dims, sizeof(int64_t) * (size_t)z->ndim);
  if (dims[0] < 0) dims[0] = pd_in(c, LABEL)->dims[0];
  st = pd_ctx_set_shape(c, pd_out(c, SOFTMAX), z->dtype, z->ndim, dims);
  dims[z->ndim - 1] = 1;
  if (!st) st = pd_ctx_set_shape(c, pd_out(c, LOSS), z->dtype, z->ndim, dims);
  return st;
}

/* Every label names a class in [0, C); for Logits of more than 2 dims the message names the
 * row of the batch and the position in it. */
static pd_status check_range(pd_ctx *c, const pd_tensor *z, const int64_t *label, int64_t rows, int64_t classes) {
  if (z->ndim == 2) return pd_label_check_range(c, label, rows, classes);
  int64_t per_row = z->dims[0] > 0 ? rows / z->dims[0] : 1;
  for (int64_t i = 0; i < rows; i++)
    if (label[i] < 0 || label[i] >= classes) {
      pd_status st =
          pd_ctx_fail(c, PD_ERR_INPUT, "label %lld at row %lld, position %lld is out of range [0, %lld)",
                      (long long)label[i], (long long)(i / per_row), (long long)(i % per_row), (long long)classes);
      c->err->row = i / per_row;
      return st;
    }
  return PD_OK;
}

/* s[j] = exp(s[j]) over a row: float's 8 at a time (cpu/vmath.h, within
 * 3 ulp), double's libm */
static inline void swce_exp_float(float *s, int64_t k) { pd_vexp_f32(s, s, k); }
static inline void swce_exp_double(double *s, int64_t k) {
  for (int64_t j = 0; j < k; j++) s[j] = exp(s[j]);
}

#define T float
#include "softmax_with_cross_entropy_t.h"
#undef T
#define T double
#include "softmax_with_cross_entropy_t.h"
#undef T

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
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
