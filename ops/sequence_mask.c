/* sequence_mask.c — Mask [batch, time] from per-row lengths:
 * Mask[r, t] = 1 if t < Lengths[r], else 0, in the dtype the `dtype`
 * attribute names. time is the reference sequence X's (its dims[1]) or the
 * `maxlen` attribute. A length of 0 gives a row of zeros; one beyond time
 * is an error naming the row. No gradient (Mask is a constant of the
 * lengths). */
#include "core/op.h"
#include "sequence.h"
#include "sequence_mask.h"

static const char *const dtype_names[] = {"float32", "float64", "int32", "int64", "uint8", 0};

static const pd_slot_def inputs[] = {
    [LENGTHS] = {"Lengths", "int64 [batch]: each row's number of steps, 0 to time", PD_SLOT_NO_GRAD},
    [X] = {"X",
           "a reference sequence [batch, time, ...] of any dtype, read for its time only (left out: time is "
           "`maxlen`)",
           PD_SLOT_DISPENSABLE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    [MASK] = {"Mask", "[batch, time]: 1 at a row's steps before its length, 0 after", 0},
};
static const pd_attr_def attrs[] = {
    [A_MAXLEN] = {"maxlen", "the number of steps, time (0: X's time; with X, it must equal X's)", PD_ATTR_INT,
                  .def = "i: 0", .min_kind = PD_GE, .min = 0},
    [A_DTYPE] = {"dtype", "the dtype of Mask", PD_ATTR_STRING, .def = "s: \"float32\"", .one_of = dtype_names},
};

static pd_status infer(pd_ctx *c) {
  pd_tensor *len = pd_in(c, LENGTHS), *x = pd_in(c, X);
  int64_t maxlen = pd_attr_i(c, A_MAXLEN), time = maxlen;
  if (x) {
    if (x->ndim < 2) return pd_ctx_fail_shape(c, "X", pd_ctx_in_name(c, X, 0), x, "a sequence is [batch, time, ...]");
    time = x->dims[1];
    if (maxlen > 0 && time >= 0 && time != maxlen)
      return pd_ctx_fail(c, PD_ERR_INPUT, "maxlen is %lld but X \"%s\" has %lld steps; give one or the other",
                         (long long)maxlen, pd_ctx_in_name(c, X, 0), (long long)time);
  } else if (maxlen == 0) {
    return pd_ctx_fail(c, PD_ERR_INPUT, "the number of steps is unknown: give a reference sequence X or maxlen");
  }
  pd_status st = pd_seq_check_lengths_shape(c, LENGTHS, x ? x->dims[0] : -1);
  if (st) return st;
  if (!len) return PD_OK; /* not reached: Lengths is required */
  int64_t batch = len->dims[0] >= 0 || !x ? len->dims[0] : x->dims[0];
  pd_dtype dt = PD_F32;
  pd_dtype_parse(pd_attr_s(c, A_DTYPE), &dt); /* one of the names: checked with the attribute */
  return pd_ctx_set_shape(c, pd_out(c, MASK), dt, 2, (int64_t[]){batch, time});
}

/* Any dtype, through pd_tensor_set: a mask is batch x time elements, few
 * next to what reads it. */
static pd_status forward(pd_ctx *c) {
  pd_tensor *mt = pd_out(c, MASK);
  int64_t batch = mt->dims[0], time = mt->dims[1];
  const int64_t *len = PD_DATA(pd_in(c, LENGTHS), int64_t);
  pd_status st = pd_seq_check_lengths(c, LENGTHS, len, batch, time, 0);
  if (st) return st;
  for (int64_t r = 0; r < batch; r++)
    for (int64_t t = 0; t < time; t++) pd_tensor_set(mt, r * time + t, t < len[r] ? 1 : 0);
  return PD_OK;
}

static double no_flops(pd_ctx *c) {
  (void)c;
  return 0;
}

static const pd_kernel kernels[] = {
    {{PD_CPU, PD_I64}, forward},
#ifdef PD_WITH_CUDA
    {{PD_GPU, PD_I64}, pd_gpu_sequence_mask_fwd},
#endif
};

const pd_op_def pd_op_sequence_mask = {
    .type = "sequence_mask",
    .comment = "Mask [batch, time] from per-row lengths: 1 at steps before a row's length, 0 from it on, in the "
               "dtype `dtype` names (float32 by default). time is a reference sequence X's or `maxlen`. A length "
               "of 0 gives a row of zeros; a length beyond time is an error naming the row.",
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
};
