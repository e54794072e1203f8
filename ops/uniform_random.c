/* uniform_random.c — Out = a tensor of dims `shape` whose elements are drawn
 * independently and uniformly from [min, max). The stream comes from the
 * run's seed (per op and step), or from `seed` when it is not 0; either way the
 * same seed gives the same numbers on every run and machine. */
#include "uniform_random.h"

#include <math.h>

#include "base/rng.h"
#include "base/tmpl.h"
#include "core/op.h"

static const char *const dtype_names[] = {"float32", "float64", 0};

static const pd_slot_def outputs[] = {[OUT] = {"Out", "values drawn uniformly from [min, max)", 0}};
static const pd_attr_def attrs[] = {
    [A_SHAPE] = {"shape", "dims of Out, each >= 0", PD_ATTR_INTS, .required = true, .min_kind = PD_GE, .min = 0},
    [A_DTYPE] = {"dtype", "dtype of Out", PD_ATTR_STRING, .def = "s: \"float32\"", .one_of = dtype_names},
    [A_P1] = {"min", "lower end of the range (included)", PD_ATTR_FLOAT, .def = "f: -1.0"},
    [A_P2] = {"max", "upper end of the range (excluded); >= min", PD_ATTR_FLOAT, .def = "f: 1.0"},
    [A_SEED] = {"seed", "0: use the run's seed; otherwise this seed, the same numbers every time", PD_ATTR_INT,
                .def = "i: 0", .min_kind = PD_GE, .min = 0},
};

static pd_dtype key_dtype(pd_ctx *c) {
  pd_dtype d = PD_F32;
  pd_dtype_parse(pd_attr_s(c, A_DTYPE), &d); /* one of the names: checked with the attribute */
  return d;
}

static pd_status infer(pd_ctx *c) {
  const pd_attr *shape = pd_attr_at(c, A_SHAPE);
  double lo = pd_attr_f(c, A_P1), hi = pd_attr_f(c, A_P2);
  if (!isfinite(lo) || !isfinite(hi) || lo > hi)
    return pd_ctx_fail(c, PD_ERR_INPUT, "min and max must be finite with min <= max, got min %g and max %g", lo, hi);
  return pd_ctx_set_shape(c, pd_out(c, OUT), key_dtype(c), shape->n, shape->ints);
}

#define T float
#include "uniform_random_t.h"
#undef T
#define T double
#include "uniform_random_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(draw_float),
    PD_CPU_F64(draw_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_uniform_random_fwd),
#endif
};

const pd_op_def pd_op_uniform_random = {
    .type = "uniform_random",
    .comment = "Out = a tensor of dims `shape` with values drawn uniformly from [min, max). "
               "`seed` 0 uses the run's seed (different per op and step); another value gives the same "
               "numbers every time.",
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .kernel_dtype = key_dtype,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .random = true,
};
