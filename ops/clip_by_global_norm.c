/* clip_by_global_norm.c — rescales a set of tensors (the gradients) together:
 * norm = sqrt(sum of the squares of every element of every X), summed in double in
 * slot order; if norm > max_norm, Out_i = X_i max_norm / norm, else Out_i = X_i.
 * Out may be the X variables themselves. No gradient. The kernel is written
 * once, for any element type, in clip_by_global_norm_t.h. */
#include "clip_by_global_norm.h"

#include <math.h>

#include "base/tmpl.h"
#include "kmath.h"
#include "optim.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "the tensors to clip together (all gradients), of one float dtype",
           PD_SLOT_DUPLICABLE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "the clipped tensors, one per X in the same order; usually the X variables themselves",
             PD_SLOT_DUPLICABLE},
};
static const pd_attr_def attrs[] = {
    [A_MAX_NORM] = {"max_norm", "largest global L2 norm let through", PD_ATTR_FLOAT, .required = true,
                    .min_kind = PD_GT, .min = 0},
};

/* running sums of clip_by_global_norm_t.h's sum of squares */
enum { CLIP_LANES = 16 };

#define T float
#include "clip_by_global_norm_t.h"
#undef T
#define T double
#include "clip_by_global_norm_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_clip_by_global_norm_fwd),
#endif
};

const pd_op_def pd_op_clip_by_global_norm = {
    .type = "clip_by_global_norm",
    .flags = PD_OP_GRAD_CLIP,
    .comment =
        "Gradient clipping by the global norm of all X together: if sqrt(sum of squares) > max_norm, "
        "every X is scaled by max_norm / norm (a NaN norm makes every Out NaN). Out may be the same variables as X.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = pd_optim_infer_list,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
};
