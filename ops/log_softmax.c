/* log_softmax.c — log of the softmax over the last dim: Out[r, j] = X[r, j]
 * - m_r - log(sum_k exp(X[r, k] - m_r)), m_r the row's max, so nothing
 * overflows and a huge logit gives an exact 0. Backward in terms of the
 * output: dX = dOut - exp(Out) * sum_k dOut[r, k]. The per-element math is
 * kmath.h's, shared with log_softmax.cu. */
#include "log_softmax.h"

#include <tgmath.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "kmath.h"
#include "lastdim.h"

static const pd_slot_def inputs[] = {[X] = {"X", "input [..., D]; each row along the last dim is normalised", 0}};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "log softmax of X, same shape; exp of every row sums to 1", 0}};

#define T float
#include "log_softmax_t.h"
#include "lastdim_t.h"
#undef T
#define T double
#include "log_softmax_t.h"
#include "lastdim_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_log_softmax_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_log_softmax_bwd),
#endif
};

const pd_op_def pd_op_log_softmax = {
    .type = "log_softmax",
    .comment = "Log of the softmax over the last dim, Out = X - max - log(sum(exp(X - max))) per row: finite for "
               "any finite X (where log(softmax(X)) would give -inf).",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .infer_shape = pd_lastdim_infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
