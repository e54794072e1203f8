/* softplus.c — Out = log(1 + exp(X)), as max(X, 0) + log1p(exp(-|X|)):
 * no overflow for large X, no loss of the small result for X << 0 (ONNX
 * Softplus; PyTorch's softplus with beta 1, except that PyTorch returns X
 * itself above X = 20, where the two differ by less than 2.1e-9). Backward:
 * dX = dOut sigmoid(X). The math and kernels live in unary.h. */
#define PD_UNARY_OP
#include "unary.h"

static const pd_unary kind = PD_UNARY_SOFTPLUS;
static const pd_slot_def outputs[] = {[OUT] = {"Out", "log(1 + exp(X)), X's shape", 0}};

const pd_op_def pd_op_softplus = {
    .type = "softplus",
    .comment = "Activation Out = log(1 + exp(X)), computed as max(X, 0) + log1p(exp(-|X|)) (no overflow); the "
               "gradient is sigmoid(X); a NaN stays NaN.",
    .inputs = pd_unary_inputs,
    .n_inputs = PD_LEN(pd_unary_inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .infer_shape = pd_unary_infer,
    .kernels = pd_unary_kernels,
    .n_kernels = PD_LEN(pd_unary_kernels),
    .grad_kernels = pd_unary_grad_kernels,
    .n_grad_kernels = PD_LEN(pd_unary_grad_kernels),
    .data = &kind,
    .inplace = 1,
    .grad_inplace = true,
};
