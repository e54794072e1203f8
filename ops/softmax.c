/* softmax.c — softmax over the last dim: Out[r, j] = exp(X[r, j] - m_r) /
 * sum_k exp(X[r, k] - m_r), with m_r the row's max so no exp overflows.
 * Backward in terms of the output: dX = Out * (dOut - sum_k dOut[r, k] Out[r, k]). */
#include <tgmath.h>

#include "gpu_ops.h"
#include "kmath.h"
#include "lastdim.h"
#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };

static const pd_slot_def inputs[] = {{"X", "input [..., D]; each row along the last dim is normalised", 0}};
static const pd_slot_def outputs[] = {{"Out", "softmax of X, same shape; every row sums to 1", 0}};

#define SOFTMAX_FORWARD(T)                                          \
  static pd_status forward_##T(pd_ctx *c) {                         \
    int64_t rows, d;                                                \
    pd_lastdim_rows(pd_in(c, X), &rows, &d);                        \
    const T *x = PD_DATA(pd_in(c, X), T);                           \
    T *y = PD_DATA(pd_out(c, OUT), T);                              \
    for (int64_t r = 0; r < rows; r++, x += d, y += d) {            \
      T m = x[0], sum = 0;                                          \
      for (int64_t j = 1; j < d; j++) m = x[j] > m ? x[j] : m;      \
      for (int64_t j = 0; j < d; j++) {                             \
        y[j] = exp(x[j] - m);                                       \
        sum += y[j];                                                \
      }                                                             \
      T inv = 1 / sum; /* sum >= 1: the max's own term is exp(0) */ \
      for (int64_t j = 0; j < d; j++) y[j] *= inv;                  \
    }                                                               \
    return PD_OK;                                                   \
  }
SOFTMAX_FORWARD(float)
SOFTMAX_FORWARD(double)

/* Grad op slots (see op.h): inputs X Out dOut, output dX. */
enum { G_OUT = PD_GRAD_Y(N_IN, N_OUT, OUT), G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X) };

PD_LASTDIM_BACKWARD(float, pd_softmax_grad_float, dy[j] * y[j])
PD_LASTDIM_BACKWARD(double, pd_softmax_grad_double, dy[j] * y[j])

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
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .infer_shape = pd_lastdim_infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
