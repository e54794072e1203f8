/* sequence_pool.c — each row of X [batch, time, ...] pooled over its valid
 * steps t < L_r (every step when Lengths is left out): Out [batch, ...] =
 * sum_t X[r, t], that sum / L_r (mean) or max_t X[r, t] (max; a NaN among
 * the steps gives NaN). Backward: sum: dX[r, t] = dOut[r]; mean: dOut[r] /
 * L_r; max: dOut[r] to the step of the maximum, the first of equal ones
 * (the first NaN when there is one); 0 past a row's length. */
#include <math.h>
#include <string.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "sequence.h"
#include "sequence_pool.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "the sequences, [batch, time, ...]", 0},
    [LENGTHS] = {"Lengths", "int64 [batch]: each row's number of steps, 1 to time (left out: every row has all)",
                 PD_SLOT_DISPENSABLE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "[batch, ...]: each row's valid steps pooled", 0},
};
static const pd_attr_def attrs[] = {
    [A_TYPE] = {"pooling_type",
                "\"mean\", \"max\" or \"sum\" over each row's valid steps (max: the gradient goes to the first "
                "maximum)",
                PD_ATTR_STRING, .def = "s: \"mean\"", .one_of = pool_types},
};

static const int64_t *lengths(pd_ctx *c) {
  pd_tensor *len = pd_in(c, LENGTHS);
  return len ? PD_DATA(len, int64_t) : NULL;
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  pd_status st = pd_seq_check_x(c, X, 1);
  if (!st) st = pd_seq_check_lengths_shape(c, LENGTHS, x->dims[0]);
  if (st) return st;
  int64_t dims[PD_MAX_DIMS];
  dims[0] = x->dims[0] >= 0 || !pd_in(c, LENGTHS) ? x->dims[0] : pd_in(c, LENGTHS)->dims[0];
  for (int d = 2; d < x->ndim; d++) dims[d - 1] = x->dims[d];
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim - 1, dims);
}

#define T float
#include "sequence_pool_t.h"
#undef T
#define T double
#include "sequence_pool_t.h"
#undef T

/* One operation per element of X read (a compare or an add). */
static double flops(pd_ctx *c) { return (double)pd_tensor_numel(pd_in(c, X)); }

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_sequence_pool_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_sequence_pool_bwd),
#endif
};

const pd_op_def pd_op_sequence_pool = {
    .type = "sequence_pool",
    .comment = "Each row of X [batch, time, ...] pooled over its valid steps (Lengths; all steps when left out): "
               "Out [batch, ...] is their mean, max or sum (pooling_type). max: a NaN among the steps gives NaN; "
               "the gradient goes to the first maximum (the first NaN). A length of 0 or beyond time is an error "
               "naming the row.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .flops = flops,
    .grad_flops = flops,
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
