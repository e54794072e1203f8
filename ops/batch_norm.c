/* batch_norm.c — batch normalisation per channel of X [N, C, ...] (NCHW, or
 * [N, C]): Y = (X - mean) / sqrt(var + epsilon) · Scale + Bias, with mean and
 * var over the N·H·W values of each channel. Training uses the batch's own
 * statistics and moves the running Mean and Variance (state, updated in place)
 * toward them; inference uses the running statistics and leaves them alone.
 * The backward pass recomputes the batch statistics from X (the grad op of
 * an op with five inputs and five outputs would exceed PD_MAX_SLOTS), so no
 * SavedMean/SavedInvStd outputs. The kernels are written once, for any
 * element type, in batch_norm_t.h; sums in double. */
#include "batch_norm.h"

#include <math.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "kmath.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "input [N, C] or [N, C, H, W] (any dims after C are spatial), float32 or float64", 0},
    [SCALE] = {"Scale", "per-channel scale (gamma) [C]; starts at 1", PD_SLOT_PARAM},
    [BIAS] = {"Bias", "per-channel shift (beta) [C]; starts at 0", PD_SLOT_PARAM},
    [MEAN] = {"Mean", "running mean [C], used for inference; state, starts at 0", PD_SLOT_STATE | PD_SLOT_NO_GRAD},
    [VAR] = {"Variance", "running variance [C], used for inference; state, starts at 1",
             PD_SLOT_STATE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    [Y] = {"Y", "(X - mean) / sqrt(var + epsilon) * Scale + Bias, X's shape", 0},
    [MEAN_OUT] = {"MeanOut", "the updated running mean: must be the Mean variable (updated in place)", 0},
    [VAR_OUT] = {"VarianceOut", "the updated running variance: must be the Variance variable (updated in place)", 0},
};
static const pd_attr_def attrs[] = {
    [A_MOMENTUM] = {"momentum", "running = momentum * running + (1 - momentum) * batch statistic", PD_ATTR_FLOAT,
                    .def = "f: 0.9", .min_kind = PD_GE, .min = 0, .max_kind = PD_GE, .max = 1},
    [A_EPSILON] = {"epsilon", "added to the variance before the square root", PD_ATTR_FLOAT, .def = "f: 1e-5",
                   .min_kind = PD_GT, .min = 0},
};
/* Initial values per input slot: Scale 1, Bias 0 (parameters); Mean 0, Variance 1 (state). */
static const double param_init[] = {NAN, 1, 0, NAN, NAN};
static const double state_init[] = {0, 0, 0, 0, 1};

/* X [N, C, d2, d3...] is read as [N, C, S] with S = d2 · d3 · ... */
static void split(const pd_tensor *x, int64_t *n, int64_t *ch, int64_t *sp) {
  *n = x->dims[0];
  *ch = x->dims[1];
  *sp = 1;
  for (int i = 2; i < x->ndim; i++) *sp = (*sp < 0 || x->dims[i] < 0) ? -1 : *sp * x->dims[i];
}

/* The running statistics are updated in place: MeanOut must be Mean's
 * variable (otherwise Mean would never move and inference would use 0 and 1). */
static pd_status check_in_place(pd_ctx *c, int in, int out) {
  if (pd_out(c, out) == pd_in(c, in)) return PD_OK;
  return pd_ctx_fail(
      c, PD_ERR_INPUT, "output %s must be the variable of input %s (\"%s\"), updated in place; got \"%s\"",
      c->op->def->outputs[out].name, c->op->def->inputs[in].name, pd_ctx_in_name(c, in, 0), pd_ctx_out_name(c, out, 0));
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  char xs[128];
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  if (x->ndim < 2)
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must have at least 2 dims [N, C, ...], got %s",
                       pd_dims_str(x->ndim, x->dims, xs, sizeof xs));
  int64_t ch = x->dims[1];
  if (ch < 0)
    return pd_ctx_fail(c, PD_ERR_INPUT, "the channel dim of X (dim 1) must be known, got shape %s",
                       pd_dims_str(x->ndim, x->dims, xs, sizeof xs));
  pd_status st = PD_OK;
  for (int s = SCALE; s <= VAR && !st; s++) st = pd_ctx_param_shape(c, s, x->dtype, 1, &ch);
  if (!st) st = check_in_place(c, MEAN, MEAN_OUT);
  if (!st) st = check_in_place(c, VAR, VAR_OUT);
  if (!st) st = pd_ctx_set_shape(c, pd_out(c, Y), x->dtype, x->ndim, x->dims);
  for (int s = MEAN_OUT; s <= VAR_OUT && !st; s++) st = pd_ctx_set_shape(c, pd_out(c, s), x->dtype, 1, &ch);
  return st;
}

/* Only Y carries a gradient back: the running statistics are not
 * differentiated, so a loss that reads them is refused rather than given a
 * wrong gradient. */
static pd_status grad_infer(pd_ctx *c) {
  if (!pd_in(c, G_DY)) return pd_ctx_fail(c, PD_ERR_INPUT, "needs the gradient of Y");
  for (int s = MEAN_OUT; s < N_OUT; s++)
    if (pd_in(c, PD_GRAD_DY(N_IN, N_OUT, s)))
      return pd_ctx_fail(c, PD_ERR_INPUT, "no gradient flows back through output %s (\"%s\"); only Y has one",
                         c->op->def->outputs[s].name, pd_ctx_in_name(c, PD_GRAD_Y(N_IN, N_OUT, s), 0));
  pd_status st = PD_OK;
  for (int s = X; s <= BIAS && !st; s++) {
    pd_tensor *in = pd_in(c, s);
    if (in) st = pd_ctx_set_shape(c, pd_out(c, s), in->dtype, in->ndim, in->dims);
  }
  return st;
}

/* About 8 operations per element forward (two statistics passes, the affine
 * map) and 12 backward (the statistics again, two sums, dX). */
static double flops(pd_ctx *c) { return 8.0 * (double)pd_tensor_numel(pd_in(c, X)); }
static double grad_flops(pd_ctx *c) { return 12.0 * (double)pd_tensor_numel(pd_in(c, G_X)); }

#define T float
#include "batch_norm_t.h"
#undef T
#define T double
#include "batch_norm_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_batch_norm_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_batch_norm_bwd),
#endif
};

/* left out: "<y>.scale" and so on; the running statistics' outputs are
 * their inputs (docs/netdesc.md, "Left out") */
static const char *const fill_in[] = {[SCALE] = "scale", [BIAS] = "bias", [MEAN] = "mean", [VAR] = "var"};
static const char *const fill_out[] = {[MEAN_OUT] = "Mean", [VAR_OUT] = "Variance"};
const pd_op_def pd_op_batch_norm = {
    .type = "batch_norm",
    .fill_in = fill_in,
    .fill_out = fill_out,
    .comment = "Batch normalisation per channel of X [N, C, ...]: Y = (X - mean) / sqrt(var + epsilon) * Scale + "
               "Bias. Training uses the batch's mean and biased variance and updates the running Mean and Variance "
               "in place (the variance with the unbiased batch variance, as PyTorch does); inference uses the "
               "running statistics and leaves them unchanged. Scale and Bias are parameters (starting at 1 and 0), "
               "Mean and Variance state (starting at 0 and 1); all four have shape [C] and need not be declared.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .flops = flops,
    .grad_flops = grad_flops,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
    .grad_infer_shape = grad_infer,
    .param_init = param_init,
    .state_init = state_init,
};
