/* softmax.c — softmax over the last dim: Out[r, j] = exp(X[r, j] - m_r) /
 * sum_k exp(X[r, k] - m_r), with m_r the row's max so no exp overflows.
 * Backward in terms of the output: dX = Out * (dOut - sum_k dOut[r, k] Out[r, k]). */
#include "softmax.h"

#include <tgmath.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "kmath.h"
#include "lastdim.h"

static const pd_slot_def inputs[] = {[X] = {"X", "input [..., D]; each row along the last dim is normalised", 0}};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "softmax of X, same shape; every row sums to 1", 0}};

#define T float
#include "softmax_t.h"
#include "lastdim_t.h"
#undef T
#define T double
#include "softmax_t.h"
#include "lastdim_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_softmax_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_softmax_bwd),
#endif
};

const pd_op_def pd_op_softmax = {
    .type = "softmax",
    .comment = "Softmax over the last dim, computed stably (the row max is subtracted first). For a "
               "classification loss prefer softmax_with_cross_entropy, which is fused and exact for "
               "huge logits.",
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
