/* sequence_mean.c — the mean of X [batch, time, ...] over the valid steps
 * of every row, a scalar [1]: Out = sum_{r, t < L_r} X[r, t] / (sum_r L_r
 * times the elements of a step). A language model's loss per token: X the
 * per-token loss [batch, time] or [batch, time, 1], padding left out of
 * both the sum and the count. A row of length 0 adds nothing; no valid
 * step at all is an error. Backward: dX = dOut / count at the valid steps,
 * 0 at the padding. */
#include <string.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "sequence.h"
#include "sequence_mean.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "the sequences, [batch, time, ...] (a per-token loss: [batch, time] or [batch, time, 1])", 0},
    [LENGTHS] = {"Lengths", "int64 [batch]: each row's number of steps, 0 to time (left out: every row has all)",
                 PD_SLOT_DISPENSABLE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "the mean over every valid step of every row, shape [1]", 0},
};

static const int64_t *lengths(pd_ctx *c) {
  pd_tensor *len = pd_in(c, LENGTHS);
  return len ? PD_DATA(len, int64_t) : NULL;
}

/* The lengths checked, and the number of elements averaged. */
static pd_status valid_count(pd_ctx *c, const int64_t *len, int64_t batch, int64_t time, int64_t inner,
                             int64_t *count) {
  pd_status st = pd_seq_check_lengths(c, LENGTHS, len, batch, time, 0);
  if (st) return st;
  int64_t steps = 0;
  for (int64_t r = 0; r < batch; r++) steps += pd_seq_len(len, r, time);
  if (steps == 0 || inner == 0)
    return pd_ctx_fail(c, PD_ERR_INPUT, "no valid step to average: %s", len ? "every length is 0" : "X is empty");
  *count = steps * inner;
  return PD_OK;
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  pd_status st = pd_seq_check_x(c, X, 1);
  if (!st) st = pd_seq_check_lengths_shape(c, LENGTHS, x->dims[0]);
  if (st) return st;
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, 1, (int64_t[]){1});
}

#define T float
#include "sequence_mean_t.h"
#undef T
#define T double
#include "sequence_mean_t.h"
#undef T

static double flops(pd_ctx *c) { return (double)pd_tensor_numel(pd_in(c, X)); }

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_sequence_mean_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_sequence_mean_bwd),
#endif
};

const pd_op_def pd_op_sequence_mean = {
    .type = "sequence_mean",
    .comment = "The mean of X [batch, time, ...] over every row's valid steps (Lengths; all steps when left "
               "out), shape [1]: a language model's loss per token, the padding out of both sum and count. A "
               "row of length 0 adds nothing; a length beyond time, or no valid step at all, is an error. "
               "Gradient: dOut / count at the valid steps, 0 at the padding.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .flops = flops,
    .grad_flops = flops,
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
