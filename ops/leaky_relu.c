/* leaky_relu.c — Out = X where X > 0, alpha X elsewhere (PyTorch's
 * LeakyReLU, ONNX LeakyRelu). Backward: dX = dOut where X > 0, alpha dOut
 * elsewhere. The math and kernels live in unary.h, shared with gelu,
 * softplus and clip. */
#define PD_UNARY_OP
#include "unary.h"

static const pd_unary kind = PD_UNARY_LEAKY_RELU;
static const pd_slot_def outputs[] = {[OUT] = {"Out", "leaky_relu(X), X's shape", 0}};
static const pd_attr_def attrs[] = {
    [A_ALPHA] = {"alpha", "the slope for X <= 0", PD_ATTR_FLOAT, .def = "f: 0.01"},
};

const pd_op_def pd_op_leaky_relu = {
    .type = "leaky_relu",
    .comment = "Activation Out = X if X > 0 else alpha * X; a NaN stays NaN (as PyTorch's leaky_relu).",
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
