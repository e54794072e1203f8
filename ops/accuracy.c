/* accuracy.c — top-k accuracy of scores Out [N, C] against class labels: a row counts as
 * correct when fewer than k of its scores are strictly greater than the label's score (so a
 * tie with the label's score is in its favour). Accuracy [1] = Correct / Total; Correct and
 * Total (int64 [1]) are there to be summed over an epoch. No gradient. */
#include <math.h>

#include "label.h"
#include "gpu_ops.h"
#include "kmath.h"
#include "core/op.h"

enum { SCORES, LABEL, N_IN };
enum { ACCURACY, CORRECT, TOTAL, N_OUT };
enum { A_K, N_ATTR };

static const pd_slot_def inputs[] = {
    {"Out", "scores [N, C]: probabilities or logits, higher means more likely", PD_SLOT_NO_GRAD},
    {"Label", "int64 [N, 1] or [N], the true class of each row", PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    {"Accuracy", "fraction of rows whose label is among the k highest scores, [1], the dtype of the scores", 0},
    {"Correct", "number of such rows, int64 [1]; may be left out", PD_SLOT_DISPENSABLE},
    {"Total", "number of rows, int64 [1]; may be left out", PD_SLOT_DISPENSABLE},
};
static const pd_attr_def attrs[] = {
    {"k", "how many of the highest scores may hold the label", PD_ATTR_INT, .def = "i: 1", .min_kind = PD_GE, .min = 1},
};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, SCORES);
  char xs[128];
  if (x->ndim != 2)
    return pd_ctx_fail(c, PD_ERR_INPUT, "input Out (the scores) must be [N, C] (2 dims), got %s",
                       pd_dims_str(x->ndim, x->dims, xs, sizeof xs));
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input Out (the scores) must be float32 or float64, got %s",
                       pd_dtype_name(x->dtype));
  pd_status st = pd_label_check(c, LABEL, x, false);
  const int64_t one = 1;
  if (!st) st = pd_ctx_set_shape(c, pd_out(c, ACCURACY), x->dtype, 1, &one);
  if (!st) st = pd_ctx_set_shape(c, pd_out(c, CORRECT), PD_I64, 1, &one);
  if (!st) st = pd_ctx_set_shape(c, pd_out(c, TOTAL), PD_I64, 1, &one);
  return st;
}

#define ACCURACY_FORWARD(T)                                                                  \
  static pd_status forward_##T(pd_ctx *c) {                                                  \
    pd_tensor *xt = pd_in(c, SCORES), *ct = pd_out(c, CORRECT), *tt = pd_out(c, TOTAL);      \
    int64_t n = xt->dims[0], k = xt->dims[1], topk = pd_attr_i(c, A_K), correct = 0;         \
    const int64_t *label = PD_DATA(pd_in(c, LABEL), int64_t);                                \
    pd_status st = pd_label_check_range(c, label, n, k);                                     \
    if (st) return st;                                                                       \
    const T *x = PD_DATA(xt, T);                                                             \
    for (int64_t i = 0; i < n; i++, x += k) correct += pd_acc_row_##T(x, k, label[i], topk); \
    PD_DATA(pd_out(c, ACCURACY), T)[0] = (T)(n > 0 ? (double)correct / (double)n : 0);       \
    if (ct) PD_DATA(ct, int64_t)[0] = correct;                                               \
    if (tt) PD_DATA(tt, int64_t)[0] = n;                                                     \
    return PD_OK;                                                                            \
  }
ACCURACY_FORWARD(float)
ACCURACY_FORWARD(double)

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_accuracy_fwd),
#endif
};

const pd_op_def pd_op_accuracy = {
    .type = "accuracy",
    .comment = "Top-k accuracy of scores [N, C] against int64 class labels: the fraction of rows whose "
               "label has fewer than k strictly higher scores (ties count in the label's favour). Correct "
               "and Total give the counts, for summing over an epoch. A NaN score ranks above every number (as "
               "torch.topk). A label outside [0, C) is an error.",
    .inputs = inputs,
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .attrs = attrs,
    .n_attrs = N_ATTR,
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
};
