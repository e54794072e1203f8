/* cos_sim.c — cosine similarity of rows: Out[i] = scale <x_i, y_i> / (|x_i| |y_i|) for
 * X [N, D] and Y [N, D], or Y [1, D] compared with every row of X; also the norms
 * XNorm [N, 1] and YNorm [N or 1, 1]. A row of norm 0 gives Out 0 and no gradient.
 * Backward recomputes the norms; sums in double. The kernels are written once,
 * for any element type, in cos_sim_t.h. */
#include "cos_sim.h"

#include <math.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "kmath.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "rows to compare, [N, D]", 0},
    [Y] = {"Y", "[N, D], row i compared with row i of X; or [1, D], compared with every row", 0},
};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "scale times the cosine of each row pair, [N, 1]", 0},
    [XNORM] = {"XNorm", "|x_i|, [N, 1]; may be left out", PD_SLOT_DISPENSABLE},
    [YNORM] = {"YNorm", "|y_i|, [N, 1] (or [1, 1] for a broadcast Y); may be left out", PD_SLOT_DISPENSABLE},
};
static const pd_attr_def attrs[] = {
    [A_SCALE] = {"scale", "factor on the cosine", PD_ATTR_FLOAT, .def = "f: 1.0", .min_kind = PD_GT, .min = 0},
};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y);
  char xs[128], ys[128];
  pd_dims_str(x->ndim, x->dims, xs, sizeof xs);
  pd_dims_str(y->ndim, y->dims, ys, sizeof ys);
  if (!pd_dtype_is_float(x->dtype) || y->dtype != x->dtype)
    return pd_ctx_fail(c, PD_ERR_INPUT, "X and Y must both be float32 or both float64, got %s and %s",
                       pd_dtype_name(x->dtype), pd_dtype_name(y->dtype));
  if (x->ndim != 2 || y->ndim != 2 || !pd_dim_fits(x->dims[1], y->dims[1]) ||
      !(pd_dim_fits(y->dims[0], x->dims[0]) || y->dims[0] == 1))
    return pd_ctx_fail(c, PD_ERR_INPUT, "X must be [N, D] and Y [N, D] or [1, D], got X %s and Y %s", xs, ys);
  int64_t n = x->dims[0] >= 0 || y->dims[0] == 1 ? x->dims[0] : y->dims[0];
  int64_t ny = y->dims[0] == 1 ? 1 : n;
  pd_status st = pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, 2, (int64_t[]){n, 1});
  if (!st) st = pd_ctx_set_shape(c, pd_out(c, XNORM), x->dtype, 2, (int64_t[]){n, 1});
  if (!st) st = pd_ctx_set_shape(c, pd_out(c, YNORM), x->dtype, 2, (int64_t[]){ny, 1});
  return st;
}

static double flops(pd_ctx *c) { return 6.0 * (double)pd_tensor_numel(pd_in(c, X)); }

#define T float
#include "cos_sim_t.h"
#undef T
#define T double
#include "cos_sim_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_cos_sim_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_cos_sim_bwd),
#endif
};

const pd_op_def pd_op_cos_sim = {
    .type = "cos_sim",
    .comment = "Cosine similarity of the rows of X [N, D] and Y [N, D] (or one row Y [1, D] against every "
               "row of X), times `scale`: Out [N, 1]; XNorm and YNorm are the row norms. A zero row gives 0, a row "
               "holding a NaN gives NaN.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .flops = flops,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
