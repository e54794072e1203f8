/* elementwise_add.c — Out = X + Y, where Y's dims line up with X's dims
 * axis, axis+1, ... (axis -1: Y's dims are X's trailing dims) and a Y dim of
 * 1 repeats along X's; Out has X's shape. A bias [C] added to [N, C] is the
 * common case. Backward: dX = dOut, dY = dOut summed over the repeated dims.
 * The kernels are written once, for any element type, in elementwise_add_t.h. */
#include "elementwise_add.h"

#include <string.h>

#include "base/tmpl.h"
#include "core/op.h"
#include "kmath.h"
#include "op_helpers.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "first operand; Out has its shape", 0},
    [Y] = {"Y", "second operand; its dims match a run of X's dims starting at `axis`, or are 1", 0},
};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "X + Y broadcast to X's shape", 0}};
static const pd_attr_def attrs[] = {
    [A_AXIS] = {"axis", "the dim of X that Y's first dim lines up with; -1: align Y with X's trailing dims",
                PD_ATTR_INT, .def = "i: -1", .min_kind = PD_GE, .min = -1},
};

static int start_axis(pd_ctx *c, const pd_tensor *x, const pd_tensor *y) {
  int axis = (int)pd_attr_i(c, A_AXIS);
  return axis == -1 ? x->ndim - y->ndim : axis;
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y);
  char a[128], b[128];
  if (!pd_dtype_is_float(x->dtype) || x->dtype != y->dtype)
    return pd_ctx_fail(c, PD_ERR_INPUT, "X and Y must both be float32 or both float64, got %s and %s",
                       pd_dtype_name(x->dtype), pd_dtype_name(y->dtype));
  int axis = start_axis(c, x, y);
  if (y->ndim > x->ndim || axis < 0 || axis + y->ndim > x->ndim)
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "Y of shape %s does not fit inside X of shape %s at axis %lld: Y's %d dims "
                       "must line up with dims of X starting at axis",
                       pd_dims_str(y->ndim, y->dims, b, sizeof b), pd_dims_str(x->ndim, x->dims, a, sizeof a),
                       (long long)pd_attr_i(c, A_AXIS), y->ndim);
  /* Only known dims are checked; a -1 (the batch) is checked per mini-batch. */
  for (int j = 0; j < y->ndim; j++) {
    int64_t xd = x->dims[axis + j], yd = y->dims[j];
    if (xd >= 0 && yd >= 0 && yd != xd && yd != 1)
      return pd_ctx_fail(c, PD_ERR_INPUT,
                         "Y of shape %s cannot be added to X of shape %s at axis %d: Y's dim %d is %lld, X's dim %d "
                         "is %lld (each dim of Y must equal X's or be 1)",
                         pd_dims_str(y->ndim, y->dims, b, sizeof b), pd_dims_str(x->ndim, x->dims, a, sizeof a), axis,
                         j, (long long)yd, axis + j, (long long)xd);
  }
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim, x->dims);
}

/* How the kernels walk X: its dims with size-1 dims dropped and neighbours
 * that Y repeats along (or does not) merged, so a bias add becomes [N, C] or
 * [N, C, HW] (kmath.h's pd_bcast, which the GPU kernels index directly).
 * Rows of the last dim are the inner loop (`inner` long, Y the same all
 * along it when `inner_rep`); walk_step moves to the next row and keeps Y's
 * offset for it in `yoff`. */
typedef struct walk {
  pd_bcast b;
  int64_t inner, rows;
  bool inner_rep;
  int64_t idx[PD_MAX_DIMS], yoff;
} walk;

void pd_elementwise_add_bcast(pd_ctx *c, const pd_tensor *x, const pd_tensor *y, pd_bcast *b) {
  int axis = start_axis(c, x, y);
  memset(b, 0, sizeof *b);
  b->numel = 1;
  for (int d = 0; d < x->ndim; d++) {
    int64_t n = x->dims[d];
    b->numel *= n;
    if (n == 1) continue;
    bool rep = d < axis || d >= axis + y->ndim || y->dims[d - axis] == 1;
    if (b->nd > 0 && b->repeat[b->nd - 1] == rep) {
      b->size[b->nd - 1] *= n;
    } else {
      b->size[b->nd] = n;
      b->repeat[b->nd++] = rep;
    }
  }
  int64_t stride = 1;
  for (int d = b->nd - 1; d >= 0; d--) {
    b->ystride[d] = b->repeat[d] ? 0 : stride;
    if (!b->repeat[d]) stride *= b->size[d];
  }
  b->ny = pd_tensor_numel(y);
}

static void walk_init(pd_ctx *c, const pd_tensor *x, const pd_tensor *y, walk *w) {
  memset(w, 0, sizeof *w);
  pd_elementwise_add_bcast(c, x, y, &w->b);
  int nd = w->b.nd;
  w->inner = nd ? w->b.size[nd - 1] : 1;
  w->inner_rep = nd ? w->b.repeat[nd - 1] : true;
  w->rows = w->inner ? w->b.numel / w->inner : 0;
}

static void walk_step(walk *w) {
  for (int d = w->b.nd - 2; d >= 0; d--) {
    w->yoff += w->b.ystride[d];
    if (++w->idx[d] < w->b.size[d]) return;
    w->yoff -= w->b.ystride[d] * w->b.size[d];
    w->idx[d] = 0;
  }
}

#define T float
#include "elementwise_add_t.h"
#undef T
#define T double
#include "elementwise_add_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_elementwise_add_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_elementwise_add_bwd),
#endif
};

const pd_op_def pd_op_elementwise_add = {
    .type = "elementwise_add",
    .comment = "Out = X + Y, Y broadcast to X's shape: Y's dims line up with X's from `axis` on (-1: with "
               "X's trailing dims), and a Y dim of 1 repeats. E.g. a bias [C] added to every row of [N, C].",
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
    /* dX is dOut: it may keep dOut's buffer rather than copy it (a char
     * LM's logits gradient, 2 MB a step) */
    .grad_inplace = true,
};
