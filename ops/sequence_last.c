/* sequence_last.c — each row's last valid step: Out[r] = X[r, L_r - 1]
 * for X [batch, time, ...] and lengths L (every row all time steps when
 * Lengths is left out). direction "reverse": Out[r] = X[r, 0], where a
 * reverse recurrence ends; "bidirectional": X's last dim is a forward and a
 * reverse half (a bidirectional recurrent op's [batch, time, 2 hidden]),
 * and each half comes from where its direction ends: the first from step
 * L_r - 1, the second from step 0. Backward: dX is dOut at the steps
 * picked, 0 elsewhere. A copy, the same for any dtype. */
#include <string.h>

#include "core/op.h"
#include "sequence.h"
#include "sequence_last.h"

static const char *const directions[] = {"forward", "reverse", "bidirectional", 0};

static const pd_slot_def inputs[] = {
    [X] = {"X", "the sequences, [batch, time, ...]", 0},
    [LENGTHS] = {"Lengths", "int64 [batch]: each row's number of steps, 1 to time (left out: every row has all)",
                 PD_SLOT_DISPENSABLE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "[batch, ...]: each row's step where its direction ends", 0},
};
static const pd_attr_def attrs[] = {
    [A_DIRECTION] = {"direction",
                     "\"forward\": step L-1; \"reverse\": step 0; \"bidirectional\": the first half of X's last dim "
                     "from step L-1, the second from step 0",
                     PD_ATTR_STRING, .def = "s: \"forward\"", .one_of = directions},
};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  pd_status st = pd_seq_check_x(c, X, 1);
  if (!st) st = pd_seq_check_lengths_shape(c, LENGTHS, x->dims[0]);
  if (st) return st;
  if (is(c, "bidirectional") && (x->ndim < 3 || x->dims[x->ndim - 1] % 2))
    return pd_ctx_fail_shape(c, "X", pd_ctx_in_name(c, X, 0), x,
                             "direction \"bidirectional\" reads X as [batch, time, ..., 2 hidden], a forward and a "
                             "reverse half");
  int64_t dims[PD_MAX_DIMS];
  dims[0] = x->dims[0] >= 0 || !pd_in(c, LENGTHS) ? x->dims[0] : pd_in(c, LENGTHS)->dims[0];
  for (int d = 2; d < x->ndim; d++) dims[d - 1] = x->dims[d];
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim - 1, dims);
}

/* Moves each row's picked steps between the sequence seq [batch, time,
 * inner] and the rows row [batch, inner] (to_rows: forward; else the
 * gradient's scatter). A row is cut in chunks: the whole row, or for
 * "bidirectional" halves of the last dim, taken in turn from step L-1 and
 * step 0. */
static pd_status move(pd_ctx *c, const pd_tensor *x, char *seq, char *row, bool to_rows) {
  pd_tensor *len_t = pd_in(c, LENGTHS);
  const int64_t *len = len_t ? PD_DATA(len_t, int64_t) : NULL;
  int64_t batch, time, inner;
  pd_seq_dims(x, &batch, &time, &inner);
  pd_status st = pd_seq_check_lengths(c, LENGTHS, len, batch, time, 1);
  if (st) return st;
  bool bidir = is(c, "bidirectional"), rev = is(c, "reverse");
  int64_t chunk = bidir ? x->dims[x->ndim - 1] / 2 : inner;
  size_t size = pd_dtype_size(x->dtype), bytes = (size_t)chunk * size;
  for (int64_t r = 0; r < batch; r++) {
    int64_t last = pd_seq_len(len, r, time) - 1;
    for (int64_t j = 0; chunk > 0 && j < inner / chunk; j++) {
      int64_t step = rev || (bidir && j % 2) ? 0 : last;
      char *s = seq + (size_t)((r * time + step) * inner + j * chunk) * size;
      char *o = row + (size_t)(r * inner + j * chunk) * size;
      memcpy(to_rows ? o : s, to_rows ? s : o, bytes);
    }
  }
  return PD_OK;
}

static pd_status forward(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  return move(c, x, pd_tensor_data(x), pd_tensor_data(pd_out(c, OUT)), true);
}

static pd_status backward(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *dx = pd_out(c, G_DX), *dy = pd_in(c, G_DOUT);
  if (!dx) return PD_OK;
  memset(pd_tensor_data(dx), 0, pd_tensor_bytes(dx));
  return dy ? move(c, x, pd_tensor_data(dx), pd_tensor_data(dy), false) : PD_OK;
}

static double no_flops(pd_ctx *c) {
  (void)c;
  return 0;
}

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward),
    PD_CPU_F64(forward),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_sequence_last_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward),
    PD_CPU_F64(backward),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_sequence_last_bwd),
#endif
};

const pd_op_def pd_op_sequence_last = {
    .type = "sequence_last",
    .comment = "Each row's last valid step of X [batch, time, ...]: Out [batch, ...] = X[r, L_r - 1] with L the "
               "Lengths (all steps when left out); direction \"reverse\" takes step 0, where a reverse recurrence "
               "ends, and \"bidirectional\" the first half of X's last dim from step L_r - 1 and the second from "
               "step 0 (a bidirectional recurrent output's final values). A length of 0 or beyond time is an "
               "error naming the row. Gradient: dOut back to the steps taken.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .flops = no_flops,
    .grad_flops = no_flops,
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
