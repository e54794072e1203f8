/* cross_entropy.c — loss of probabilities X [N, C] against labels:
 * Out[i] = -log(X[i, label_i]), or with soft_label Out[i] = -sum_j L[i, j] log(X[i, j]).
 * X is clamped below at TINY (float32: its least normal, FLT_MIN; float64: 1e-20), so a
 * probability of 0 gives a large finite loss (87.3 / 46.1) instead of inf; the gradient is
 * -dOut L / max(X, TINY), finite too. The kernels are written once, for any
 * element type, in cross_entropy_t.h. */
#include "cross_entropy.h"

#include <tgmath.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "kmath.h"
#include "label.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "probabilities [N, C] (a softmax output, say); rows should sum to 1", 0},
    [LABEL] = {"Label", "int64 [N, 1] or [N], the class of each row; with soft_label, a distribution [N, C] like X",
               PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "the loss of each row, [N, 1]", 0}};
static const pd_attr_def attrs[] = {
    [A_SOFT] = {"soft_label", "Label holds a probability distribution per row instead of a class index", PD_ATTR_BOOL,
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

#define T float
#include "cross_entropy_t.h"
#undef T
#define T double
#include "cross_entropy_t.h"
#undef T

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
