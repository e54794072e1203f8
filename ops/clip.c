/* clip.c — Out = min(max(X, min), max) element by element (ONNX Clip and
 * Relu6, PyTorch's clamp); either bound may be left out (infinite). A NaN
 * stays NaN. Backward: dX = dOut where min <= X <= max (the bounds
 * included, as PyTorch's clamp), 0 elsewhere. min > max is refused at load.
 * The math and kernels live in unary.h. */
#define PD_UNARY_OP
#include "unary.h"

static const pd_unary kind = PD_UNARY_CLIP;
static const pd_slot_def outputs[] = {[OUT] = {"Out", "X clipped to [min, max], X's shape", 0}};
static const pd_attr_def attrs[] = {
    [A_MIN] = {"min", "the lower bound (-inf: none)", PD_ATTR_FLOAT, .def = "f: -inf"},
    [A_MAX] = {"max", "the upper bound (inf: none); must be >= min", PD_ATTR_FLOAT, .def = "f: inf"},
};

const pd_op_def pd_op_clip = {
    .type = "clip",
    .comment = "Out = min(max(X, min), max); a NaN stays NaN. The gradient passes where min <= X <= max (bounds "
               "included, as PyTorch's clamp) and is 0 elsewhere.",
    .inputs = pd_unary_inputs,
    .n_inputs = PD_LEN(pd_unary_inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = pd_unary_infer,
    .kernels = pd_unary_kernels,
    .n_kernels = PD_LEN(pd_unary_kernels),
    .grad_kernels = pd_unary_grad_kernels,
    .n_grad_kernels = PD_LEN(pd_unary_grad_kernels),
    .data = &kind,
    .inplace = 1,
    .grad_inplace = true,
};
