/* scale.c — Out = scale * X + bias, or scale * (X + bias) when
 * bias_after_scale is false (Paddle's scale op). Backward: dX = scale * dOut.
 * The kernels are written once, for any element type, in scale_t.h. */
#include "scale.h"

#include "base/tmpl.h"
#include "core/op.h"
#include "cpu/parallel.h"
#include "kmath.h"

static const pd_slot_def inputs[] = {[X] = {"X", "input tensor", 0}};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "scale * X + bias (or scale * (X + bias)), X's shape", 0}};
static const pd_attr_def attrs[] = {
    [A_SCALE] = {"scale", "the factor X is multiplied by", PD_ATTR_FLOAT, .def = "f: 1.0"},
    [A_BIAS] = {"bias", "the constant added", PD_ATTR_FLOAT, .def = "f: 0.0"},
    [A_AFTER] = {"bias_after_scale", "true: scale * X + bias; false: scale * (X + bias)", PD_ATTR_BOOL,
                 .def = "b: true"},
};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim, x->dims);
}

/* scale * (X + bias) = scale * X + scale * bias: one loop either way. Long
 * tensors (a batch of pixels) are split in ranges on the worker pool. */
#define T float
#include "scale_t.h"
#undef T
#define T double
#include "scale_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_scale_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_scale_bwd),
#endif
};

const pd_op_def pd_op_scale = {
    .type = "scale",
    .comment = "Out = scale * X + bias (bias_after_scale, the default) or scale * (X + bias).",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
