/* fault.c — the device's fault record as the op's failure (fault.h). The
 * texts are the CPU kernels' (adam.c; ops/label.h's pd_label_check_range
 * and softmax_with_cross_entropy.c's check_range for Logits of more than 2
 * dims; embedding.c's check_ids, ops/sequence.h's pd_seq_check_lengths,
 * sequence_mean.c's valid_count, optim.h's pd_optim_check_rows, rnn_core.c's
 * and recurrent.c's lengths, slice.c's pd_slice_fail_window): gpu/ may
 * not include ops/, so they are repeated here and
 * test_gpu_fault.c holds both to the same message. */
#include "gpu/fault.h"

pd_status pd_gpu_fault_fail(pd_ctx *c, const pd_gpu_fault *f) {
  const pd_op_def *def = c->op->def;
  bool known = f->slot >= 0 && f->slot < def->n_inputs;
  const char *slot = known ? def->inputs[f->slot].name : "?";
  switch (f->code) {
  case PD_GPU_FAULT_STEP:
    if (!known) break;
    return pd_ctx_fail(c, PD_ERR_INPUT, "%s \"%s\" must hold the update count t >= 1, got %g", slot,
                       pd_ctx_in_name(c, f->slot, 0), f->value);
  case PD_GPU_FAULT_LABEL: {
    pd_status st;
    int64_t row = f->row;
    if (f->per_row > 0) {
      row = f->row / f->per_row;
      st = pd_ctx_fail(c, PD_ERR_INPUT, "label %lld at row %lld, position %lld is out of range [0, %lld)", f->label,
                       (long long)row, f->row % f->per_row, f->limit);
    } else {
      st = pd_ctx_fail(c, PD_ERR_INPUT, "label %lld at row %lld is out of range [0, %lld)", f->label, f->row, f->limit);
    }
    c->err->row = row; /* the trainer names the data file's row */
    return st;
  }
  case PD_GPU_FAULT_ID:
    if (!known || f->per_row <= 0) break;
    return pd_ctx_fail(c, PD_ERR_INPUT, "%s \"%s\" row %lld, position %lld: id %lld is outside [0, %lld) (V = %lld)",
                       slot, pd_ctx_in_name(c, f->slot, 0), f->row / f->per_row, f->row % f->per_row, f->label,
                       f->limit, f->limit);
  case PD_GPU_FAULT_LENGTH: {
    if (!known) break;
    pd_status st =
        pd_ctx_fail(c, PD_ERR_INPUT, "%s \"%s\" row %lld is %lld; a length is from %lld to the %lld steps of X", slot,
                    pd_ctx_in_name(c, f->slot, 0), f->row, f->label, f->per_row, f->limit);
    c->err->row = f->row;
    return st;
  }
  case PD_GPU_FAULT_NO_STEP:
    return pd_ctx_fail(c, PD_ERR_INPUT, "no valid step to average: every length is 0");
  case PD_GPU_FAULT_ROWS:
    if (!known || def->n_inputs < 1) break;
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "%s \"%s\" entry %lld is %lld: a row list holds distinct rows of %s \"%s\" (0 to %lld) in "
                       "ascending order, then -1",
                       slot, pd_ctx_in_name(c, f->slot, 0), f->row, f->label, def->inputs[0].name,
                       pd_ctx_in_name(c, 0, 0), f->limit - 1);
  case PD_GPU_FAULT_WINDOW:
    if (!known) break;
    return pd_ctx_fail(
        c, PD_ERR_INPUT,
        "Starts \"%s\" entry %lld is %lld: a window of %lld along dim %d of X (of %lld) does not fit there",
        pd_ctx_in_name(c, f->slot, 0), f->row, f->label, f->per_row, (int)f->value, f->limit);
  default:
    break;
  }
  return pd_ctx_fail(c, PD_ERR_INPUT, "input %s holds a value the op rejects (GPU fault %d)", slot, f->code);
}
