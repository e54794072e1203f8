/* gelu.c — Out = X Phi(X), Phi the standard normal CDF by erf, or
 * PyTorch's tanh approximation (approximate="tanh"); ONNX Gelu and the
 * Erf pattern PyTorch exports. Backward from X. The math and kernels live
 * in unary.h, shared with leaky_relu, softplus and clip. */
#define PD_UNARY_OP
#include "unary.h"

static const pd_unary kind = PD_UNARY_GELU;
static const char *const approximations[] = {"none", "tanh", 0};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "gelu(X), X's shape", 0}};
static const pd_attr_def attrs[] = {
    [A_APPROXIMATE] = {"approximate",
                       "\"none\": X * 0.5 * (1 + erf(X / sqrt(2))); \"tanh\": 0.5 * X * (1 + tanh(sqrt(2 / pi) * (X "
                       "+ 0.044715 * X^3)))",
                       PD_ATTR_STRING, .def = "s: \"none\"", .one_of = approximations},
};

const pd_op_def pd_op_gelu = {
    .type = "gelu",
    .comment = "Activation Out = X * Phi(X) (Phi: the standard normal CDF, by erf), or PyTorch's tanh approximation "
               "with approximate: \"tanh\"; a NaN stays NaN.",
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
