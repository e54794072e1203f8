/* cast.c — Out = X converted to `dtype` (float32, float64, int32, int64,
 * uint8), any to any. Floats become integers by truncation toward zero,
 * saturated to the target's range (NaN gives 0); so do integers narrowed.
 * Backward (float X only): dX = dOut converted back to X's dtype. */
#include "cast.h"

#include <math.h>
#include <string.h>

#include "core/op.h"
#include "cpu/parallel.h"
#include "kmath.h"

static const char *const dtype_names[] = {"float32", "float64", "int32", "int64", "uint8", 0};

static const pd_slot_def inputs[] = {[X] = {"X", "input tensor of any dtype", 0}};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "X's values as `dtype`, X's shape", 0}};
static const pd_attr_def attrs[] = {
    [A_DTYPE] = {"dtype", "the dtype of Out", PD_ATTR_STRING, .required = true, .one_of = dtype_names},
};

static pd_dtype out_dtype(pd_ctx *c) {
  pd_dtype d = PD_F32;
  pd_dtype_parse(pd_attr_s(c, A_DTYPE), &d); /* one of the names: checked with the attribute */
  return d;
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  return pd_ctx_set_shape(c, pd_out(c, OUT), out_dtype(c), x->ndim, x->dims);
}

/* The kernel is chosen by X's dtype; each one converts to any dtype. */
static pd_dtype key_dtype(pd_ctx *c) { return pd_in(c, X)->dtype; }

/* Integer targets go through double (kmath.h's pd_sat_*, shared with the GPU
 * kernels): exact for every source except int64 beyond 2^53, which saturates
 * anyway when narrowed. */
#define CVT_float(v) ((float)(v))
#define CVT_double(v) ((double)(v))
#define CVT_int32_t(v) pd_sat_int32_t((double)(v))
#define CVT_int64_t(v) pd_sat_int64_t((double)(v))
#define CVT_uint8_t(v) pd_sat_uint8_t((double)(v))

typedef void (*convert_fn)(const void *src, void *dst, int64_t n);

#define CONVERT(S, D)                                             \
  static void S##_to_##D(const void *src, void *dst, int64_t n) { \
    const S *s = src;                                             \
    D *d = dst;                                                   \
    for (int64_t i = 0; i < n; i++) d[i] = CVT_##D(s[i]);         \
  }
#define ALL_TARGETS(M, S) M(S, float) M(S, double) M(S, int32_t) M(S, int64_t) M(S, uint8_t)
ALL_TARGETS(CONVERT, float)
ALL_TARGETS(CONVERT, double)
ALL_TARGETS(CONVERT, int32_t)
ALL_TARGETS(CONVERT, int64_t)
ALL_TARGETS(CONVERT, uint8_t)

/* Indexed [from][to] by pd_dtype: float32, float64, int32, int64, uint8. */
#define ROW(S) {S##_to_float, S##_to_double, S##_to_int32_t, S##_to_int64_t, S##_to_uint8_t},
static const convert_fn converters[PD_NUM_DTYPES][PD_NUM_DTYPES] = {ROW(float) ROW(double) ROW(int32_t) ROW(int64_t)
                                                                        ROW(uint8_t)};

/* Long tensors (a batch of pixels) are converted in ranges on the worker
 * pool: each thread's share streams through its own core's cache. */

typedef struct convert_job {
  convert_fn fn; /* NULL: the same dtype, copied */
  const char *src;
  char *dst;
  size_t size_from, size_to;
} convert_job;

static void convert_range(void *arg, int64_t lo, int64_t hi) {
  const convert_job *j = arg;
  const char *src = j->src + (size_t)lo * j->size_from;
  char *dst = j->dst + (size_t)lo * j->size_to;
  if (j->fn)
    j->fn(src, dst, hi - lo);
  else
    memcpy(dst, src, (size_t)(hi - lo) * j->size_to);
}

static void convert(const pd_tensor *from, pd_tensor *to) {
  const void *src = pd_tensor_data(from);
  void *dst = pd_tensor_data(to);
  if (from->dtype == to->dtype && src == dst) return;
  convert_job j = {from->dtype == to->dtype ? NULL : converters[from->dtype][to->dtype], src, dst,
                   pd_dtype_size(from->dtype), pd_dtype_size(to->dtype)};
  pd_parallel_for(pd_tensor_numel(from), PD_ELEMENTWISE_GRAIN, convert_range, &j);
}

static pd_status forward(pd_ctx *c) {
  convert(pd_in(c, X), pd_out(c, OUT));
  return PD_OK;
}

static pd_status backward(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, X);
  if (dx) convert(pd_in(c, G_DOUT), dx);
  return PD_OK;
}

static const pd_kernel kernels[] = {
    {{PD_CPU, PD_F32}, forward},         {{PD_CPU, PD_F64}, forward},         {{PD_CPU, PD_I32}, forward},
    {{PD_CPU, PD_I64}, forward},         {{PD_CPU, PD_U8}, forward},
#ifdef PD_WITH_CUDA
    {{PD_GPU, PD_F32}, pd_gpu_cast_fwd}, {{PD_GPU, PD_F64}, pd_gpu_cast_fwd}, {{PD_GPU, PD_I32}, pd_gpu_cast_fwd},
    {{PD_GPU, PD_I64}, pd_gpu_cast_fwd}, {{PD_GPU, PD_U8}, pd_gpu_cast_fwd},
#endif
};
/* Integer inputs get no gradient: there is no kernel for them. */
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward),
    PD_CPU_F64(backward),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_cast_bwd),
#endif
};

const pd_op_def pd_op_cast = {
    .type = "cast",
    .comment = "Out = X converted to `dtype`. To an integer dtype values truncate toward zero and saturate "
               "at the type's range (NaN gives 0). The gradient converts dOut back to X's dtype.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .kernel_dtype = key_dtype,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
