/* fill_constant.c — Out = a tensor of dims `shape` and dtype `dtype` with
 * every element equal to `value`. No inputs; the kernel is chosen by the
 * `dtype` attribute. An integer dtype needs a whole `value` in its range. */
#include "fill_constant.h"

#include <math.h>

#include "base/tmpl.h"
#include "core/op.h"

static const char *const dtype_names[] = {"float32", "float64", "int32", "int64", "uint8", 0};

static const pd_slot_def outputs[] = {[OUT] = {"Out", "the filled tensor", 0}};
static const pd_attr_def attrs[] = {
    [A_SHAPE] = {"shape", "dims of Out, each >= 0", PD_ATTR_INTS, .required = true, .min_kind = PD_GE, .min = 0},
    [A_DTYPE] = {"dtype", "dtype of Out", PD_ATTR_STRING, .def = "s: \"float32\"", .one_of = dtype_names},
    [A_VALUE] = {"value", "the value of every element", PD_ATTR_FLOAT, .def = "f: 0.0"},
};

static pd_dtype key_dtype(pd_ctx *c) {
  pd_dtype d = PD_F32;
  pd_dtype_parse(pd_attr_s(c, A_DTYPE), &d); /* one of the names: checked with the attribute */
  return d;
}

static pd_status infer(pd_ctx *c) {
  const pd_attr *shape = pd_attr_at(c, A_SHAPE);
  pd_dtype dt = key_dtype(c);
  double v = pd_attr_f(c, A_VALUE);
  double lo = dt == PD_I32 ? -2147483648.0 : dt == PD_I64 ? -9223372036854775808.0 : 0;
  double hi = dt == PD_I32 ? 2147483647.0 : dt == PD_I64 ? 9223372036854775807.0 : 255;
  if (!pd_dtype_is_float(dt) && !(v == floor(v) && v >= lo && v <= hi))
    return pd_ctx_fail(c, PD_ERR_INPUT, "value %g cannot be stored as %s: it must be a whole number in [%.0f, %.0f]", v,
                       pd_dtype_name(dt), lo, hi);
  return pd_ctx_set_shape(c, pd_out(c, OUT), dt, shape->n, shape->ints);
}

#define T float
#include "fill_constant_t.h"
#undef T
#define T double
#include "fill_constant_t.h"
#undef T
#define T int32_t
#include "fill_constant_t.h"
#undef T
#define T int64_t
#include "fill_constant_t.h"
#undef T
#define T uint8_t
#include "fill_constant_t.h"
#undef T

static const pd_kernel kernels[] = {
    {{PD_CPU, PD_F32}, fill_float},
    {{PD_CPU, PD_F64}, fill_double},
    {{PD_CPU, PD_I32}, fill_int32_t},
    {{PD_CPU, PD_I64}, fill_int64_t},
    {{PD_CPU, PD_U8}, fill_uint8_t},
#ifdef PD_WITH_CUDA
    {{PD_GPU, PD_F32}, pd_gpu_fill_constant_fwd},
    {{PD_GPU, PD_F64}, pd_gpu_fill_constant_fwd},
    {{PD_GPU, PD_I32}, pd_gpu_fill_constant_fwd},
    {{PD_GPU, PD_I64}, pd_gpu_fill_constant_fwd},
    {{PD_GPU, PD_U8}, pd_gpu_fill_constant_fwd},
#endif
};

const pd_op_def pd_op_fill_constant = {
    .type = "fill_constant",
    .comment = "Out = a tensor of dims `shape` and dtype `dtype`, every element `value`.",
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .kernel_dtype = key_dtype,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
};
