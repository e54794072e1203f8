/* slice.c — Out = X[first : first + n*step : step] along the axes given,
 * ONNX Slice's semantics: with constant bounds (starts, ends, steps;
 * negative ones count from the end, then clamped into the dim), or with a
 * start computed at run time (input Starts, one entry per axis) and a
 * window of fixed length (sizes), which must lie inside the dim. Backward:
 * dX is dOut where X was read, 0 elsewhere (slice.h). The kernels are
 * written once, for any element type, in slice_t.h. */
#include "slice.h"

#include <stdint.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "cpu/parallel.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "input tensor, float32 or float64", 0},
    [STARTS] = {"Starts",
                "int64, one start per entry of axes, read at run time; each window of sizes elements must lie "
                "inside its dim (a start from 0). Left out: the constant starts and ends",
                PD_SLOT_DISPENSABLE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "the elements of X the slice takes", 0}};
static const pd_attr_def attrs[] = {
    [A_AXES] = {"axes", "the dims sliced (negative: from the last); empty: 0, 1, ... one per start", PD_ATTR_INTS,
                .def = "ints: []"},
    [A_STARTS] = {"starts",
                  "constant first index per axis (negative: from the end; clamped into the dim as ONNX Slice does)",
                  PD_ATTR_INTS, .def = "ints: []"},
    [A_ENDS] = {"ends", "constant end (exclusive) per axis, clamped as ONNX Slice's; 9223372036854775807: to the end",
                PD_ATTR_INTS, .def = "ints: []"},
    [A_STEPS] = {"steps", "step per axis, not 0 (negative: backwards from the start); empty: all 1", PD_ATTR_INTS,
                 .def = "ints: []"},
    [A_SIZES] = {"sizes", "with input Starts: the number of elements taken along each axis", PD_ATTR_INTS,
                 .def = "ints: []", .min_kind = PD_GE, .min = 0},
};

/* Checks the attributes against X (dims may hold -1: the batch at load)
 * and fills g; Out's dims are g->out, -1 for a batch kept whole. */
static pd_status plan(pd_ctx *c, const pd_tensor *x, pd_slice_geom *g) {
  const pd_attr *axes = pd_attr_at(c, A_AXES), *starts = pd_attr_at(c, A_STARTS), *ends = pd_attr_at(c, A_ENDS),
                *steps = pd_attr_at(c, A_STEPS), *sizes = pd_attr_at(c, A_SIZES);
  const pd_tensor *s = pd_in(c, STARTS);
  char xs[128];
  pd_dims_str(x->ndim, x->dims, xs, sizeof xs);
  int k = s ? sizes->n : starts->n;
  if (s && (starts->n || ends->n))
    return pd_ctx_fail(c, PD_ERR_INPUT, "with input Starts the window is Starts and sizes: leave starts and ends out");
  if (s && !sizes->n)
    return pd_ctx_fail(c, PD_ERR_INPUT, "with input Starts, attribute \"sizes\" (elements per axis) is required");
  if (!s && sizes->n)
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "attribute \"sizes\" goes with input Starts (starts computed at run time); without it give "
                       "starts and ends");
  if (!s && (!starts->n || ends->n != starts->n))
    return pd_ctx_fail(c, PD_ERR_INPUT, "attributes \"starts\" and \"ends\" need one entry per axis, got %d and %d",
                       starts->n, ends->n);
  if ((axes->n && axes->n != k) || (steps->n && steps->n != k))
    return pd_ctx_fail(c, PD_ERR_INPUT, "%d axes sliced, but \"axes\" has %d entries and \"steps\" %d", k, axes->n,
                       steps->n);
  if (k > x->ndim) return pd_ctx_fail(c, PD_ERR_INPUT, "%d axes sliced, but X of shape %s has %d dims", k, xs, x->ndim);
  if (s) {
    bool fixed = true;
    for (int d = 0; d < s->ndim; d++) fixed &= s->dims[d] >= 0;
    if (s->dtype != PD_I64 || !fixed || pd_tensor_numel(s) != k)
      return pd_ctx_fail_shape(c, "Starts", pd_ctx_in_name(c, STARTS, 0), s,
                               "it holds one int64 start per axis sliced, of a fixed shape");
  }
  bool seen[PD_MAX_DIMS] = {false};
  g->nd = x->ndim;
  g->numel_in = g->numel_out = 1;
  for (int d = 0; d < x->ndim; d++) g->in[d] = g->out[d] = x->dims[d], g->first[d] = 0, g->step[d] = 1, g->dyn[d] = -1;
  for (int i = 0; i < k; i++) {
    int64_t a = axes->n ? axes->ints[i] : i, step = steps->n ? steps->ints[i] : 1;
    a = a < 0 ? a + x->ndim : a;
    if (a < 0 || a >= x->ndim)
      return pd_ctx_fail(c, PD_ERR_INPUT, "axis %lld is not a dim of X (shape %s)", (long long)axes->ints[i], xs);
    if (seen[a]) return pd_ctx_fail(c, PD_ERR_INPUT, "axis %lld is sliced twice", (long long)a);
    if (step == 0 || step == INT64_MIN)
      return pd_ctx_fail(c, PD_ERR_INPUT, "step %lld along axis %lld: a step is not 0", (long long)step, (long long)a);
    int64_t n = x->dims[a];
    seen[a] = true, g->step[a] = step;
    if (n < 0) { /* the batch at load: kept whole, or not known */
      if (s || starts->ints[i] != 0 || !pd_slice_to_end(ends->ints[i]) || step != 1)
        return pd_ctx_fail(
            c, PD_ERR_INPUT,
            "dim %lld of X (shape %s) follows the batch (-1 at load): a slice keeps it whole (starts 0, ends to the "
            "end, step 1)",
            (long long)a, xs);
      continue;
    }
    if (s) {
      int64_t span = sizes->ints[i] ? 1 + (sizes->ints[i] - 1) * (step < 0 ? -step : step) : 0;
      if (sizes->ints[i] > n || span > n || span < 0)
        return pd_ctx_fail(c, PD_ERR_INPUT,
                           "a window of %lld elements (step %lld) along axis %lld does not fit in X of shape %s",
                           (long long)sizes->ints[i], (long long)step, (long long)a, xs);
      g->dyn[a] = i, g->out[a] = sizes->ints[i];
    } else {
      g->out[a] = pd_slice_range(n, starts->ints[i], ends->ints[i], step, &g->first[a]);
    }
  }
  for (int d = 0; d < x->ndim; d++) g->numel_in *= g->in[d], g->numel_out *= g->out[d];
  return PD_OK;
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  pd_slice_geom g;
  pd_status st = plan(c, x, &g);
  return st ? st : pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim, g.out);
}

pd_slice_geom pd_slice_geom_of(pd_ctx *c, const pd_tensor *x) {
  pd_slice_geom g;
  plan(c, x, &g); /* checked at load; the batch is whole at run time as then */
  return g;
}

pd_status pd_slice_fail_window(pd_ctx *c, const pd_slice_geom *g, int k, int64_t v) {
  int a = pd_slice_axis_of(g, k);
  return pd_ctx_fail(c, PD_ERR_INPUT,
                     "Starts \"%s\" entry %d is %lld: a window of %lld along dim %d of X (of %lld) does not fit there",
                     pd_ctx_in_name(c, STARTS, 0), k, (long long)v, (long long)g->out[a], a, (long long)g->in[a]);
}

/* The first indices of a CPU run, or the op's failure. */
static pd_status firsts(pd_ctx *c, const pd_slice_geom *g, int slot, int64_t *first) {
  const pd_tensor *s = pd_in(c, slot);
  const int64_t *v = s ? PD_DATA(s, int64_t) : NULL;
  int bad = pd_slice_firsts(g, v, first);
  return bad < 0 ? PD_OK : pd_slice_fail_window(c, g, bad, v[bad]);
}

typedef struct job {
  const pd_slice_geom *g;
  const int64_t *first;
  const void *x; /* X forward, dOut backward */
  void *y;       /* Out forward, dX backward */
} job;

#define T float
#include "slice_t.h"
#undef T
#define T double
#include "slice_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_slice_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_slice_bwd),
#endif
};

const pd_op_def pd_op_slice = {
    .type = "slice",
    .comment = "Takes X's elements first, first + step, ... along each axis given (ONNX Slice): constant starts and "
               "ends, clamped into the dim, or starts read at run time from input Starts with a window of sizes "
               "elements that must lie inside the dim. A batch dim is kept whole.",
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
