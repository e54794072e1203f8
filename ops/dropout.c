/* dropout.c — inverted dropout. Training: each element is kept with
 * probability 1 - p and scaled by 1 / (1 - p), so Out's expected value is X;
 * Mask records which were kept (1) and dropped (0). Inference: Out = X, Mask
 * all 1. The mask comes from the run's per-op, per-step random stream, so a
 * seed gives the same masks on every run; the backward pass reuses Mask.
 * The kernels are written once, for any element type, in dropout_t.h. */
#include "dropout.h"

#include <string.h>

#include "base/rng.h"
#include "base/tmpl.h"
#include "core/op.h"

static const pd_slot_def inputs[] = {[X] = {"X", "input of any shape, float32 or float64", 0}};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "training: X * Mask / (1 - dropout_prob); inference: X. X's shape", 0},
    [MASK] = {"Mask", "1 where X was kept, 0 where it was dropped (all 1 in inference), X's shape and dtype", 0},
};
static const pd_attr_def attrs[] = {
    [A_PROB] = {"dropout_prob", "probability p of dropping each element while training", PD_ATTR_FLOAT, .def = "f: 0.5",
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

#define T float
#include "dropout_t.h"
#undef T
#define T double
#include "dropout_t.h"
#undef T

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

/* left out: "<out>@MASK" (docs/netdesc.md, "Left out") */
static const char *const fill_out[] = {[MASK] = "@MASK"};
const pd_op_def pd_op_dropout = {
    .type = "dropout",
    .fill_out = fill_out,
    .comment = "Inverted dropout: Out = X * Mask / (1 - dropout_prob) while training, each Mask element 1 with "
               "probability 1 - dropout_prob (so the expected value is X); Out = X in inference. The mask comes from "
               "the run's seed (per op and step): the same seed gives the same masks. A dropped NaN stays NaN (X * 0, "
               "as PyTorch).",
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
    .random = true,
};
