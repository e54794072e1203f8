/* accuracy.c — top-k accuracy of scores Out [N, C] against class labels: a row counts as
 * correct when fewer than k of its scores are strictly greater than the label's score (so a
 * tie with the label's score is in its favour). Accuracy [1] = Correct / Total; Correct and
 * Total (int64 [1]) are there to be summed over an epoch. No gradient. The kernel is
 * written once, for any element type, in accuracy_t.h. */
#include "accuracy.h"

#include <math.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "kmath.h"
#include "label.h"

static const pd_slot_def inputs[] = {
    [SCORES] = {"Out", "scores [N, C]: probabilities or logits, higher means more likely", PD_SLOT_NO_GRAD},
    [LABEL] = {"Label", "int64 [N, 1] or [N], the true class of each row", PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    [ACCURACY] = {"Accuracy",
                  "fraction of rows whose label is among the k highest scores, [1], the dtype of the scores", 0},
    [CORRECT] = {"Correct", "number of such rows, int64 [1]; may be left out", PD_SLOT_DISPENSABLE},
    [TOTAL] = {"Total", "number of rows, int64 [1]; may be left out", PD_SLOT_DISPENSABLE},
};
static const pd_attr_def attrs[] = {
    [A_K] = {"k", "how many of the highest scores may hold the label", PD_ATTR_INT, .def = "i: 1", .min_kind = PD_GE,
             .min = 1},
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

#define T float
#include "accuracy_t.h"
#undef T
#define T double
#include "accuracy_t.h"
#undef T

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
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
};
