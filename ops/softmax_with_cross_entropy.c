/* softmax_with_cross_entropy.c — softmax and cross-entropy fused, from logits Z [N, C]:
 * Softmax = exp(Z - lse), Loss[i] = lse_i - Z[i, label_i], lse_i = m_i + log sum_j exp(Z[i, j] - m_i)
 * with m_i the row max; the loss comes from the logits, never from log(softmax), so it stays
 * exact and finite for logits like 1e4 and -1e4. Backward: dZ = (Softmax - onehot) dLoss. */
#include "softmax_with_cross_entropy.h"

#include <tgmath.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "kmath.h"
#include "label.h"

static const pd_slot_def inputs[] = {
    [LOGITS] = {"Logits", "unnormalised scores [N, C]", 0},
    [LABEL] = {"Label", "int64 [N, 1] or [N], the class of each row; with soft_label, a distribution [N, C]",
               PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    [SOFTMAX] = {"Softmax", "softmax of Logits over each row, [N, C]", 0},
    [LOSS] = {"Loss", "cross-entropy of each row, [N, 1]", 0},
};
static const pd_attr_def attrs[] = {
    [A_SOFT] = {"soft_label", "Label holds a probability distribution per row instead of a class index", PD_ATTR_BOOL,
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
