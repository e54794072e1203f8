/* broadcast.h — the binary element-wise ops with NumPy (ONNX) broadcasting,
 * broadcast_add/sub/mul/div: one implementation, the def's `data` says which.
 * X and Y line up from their last dims; a missing or size-1 dim repeats, so
 * Out takes the larger of each pair. Backward sums each operand's gradient
 * over the dims it was repeated along. The slots and the GPU kernels are
 * shared with broadcast.cu; the four ops' files define PD_BC_OP for the
 * implementation, whose kernels are written once, for any element type, in
 * broadcast_fwd_t.h and broadcast_bwd_t.h. */
#ifndef PD_OPS_BROADCAST_H
#define PD_OPS_BROADCAST_H

#include "core/op.h"

enum { PD_BC_X, PD_BC_Y, PD_BC_NIN };
enum { PD_BC_OUT, PD_BC_NOUT };

/* Grad op slots (see op.h): inputs X Y Out dOut, outputs dX dY. */
enum {
  PD_BC_G_X = PD_GRAD_X(PD_BC_NIN, PD_BC_NOUT, PD_BC_X),
  PD_BC_G_Y = PD_GRAD_X(PD_BC_NIN, PD_BC_NOUT, PD_BC_Y),
  PD_BC_G_OUT = PD_GRAD_Y(PD_BC_NIN, PD_BC_NOUT, PD_BC_OUT),
  PD_BC_G_DOUT = PD_GRAD_DY(PD_BC_NIN, PD_BC_NOUT, PD_BC_OUT),
};

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_broadcast_fwd(pd_ctx *c);
pd_status pd_gpu_broadcast_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

/* ---- the ops (broadcast_add.c, _sub.c, _mul.c, _div.c) ---- */
#ifdef PD_BC_OP
#include <string.h>

#include "base/tmpl.h"
#include "cpu/parallel.h"
#include "kmath.h"

static inline pd_bc_kind pd_bc_of(pd_ctx *c) { return *(const pd_bc_kind *)c->op->def->data; }

/* Out's dims from X's and Y's; -1 (the batch at load) meets 1 or -1 as -1. */
static pd_status pd_bc_infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, PD_BC_X), *y = pd_in(c, PD_BC_Y);
  char a[128], b[128];
  if (x->dtype != y->dtype)
    return pd_ctx_fail(c, PD_ERR_INPUT, "X and Y must have one dtype, got %s and %s", pd_dtype_name(x->dtype),
                       pd_dtype_name(y->dtype));
  int nd = x->ndim > y->ndim ? x->ndim : y->ndim;
  int64_t dims[PD_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    int xi = i - (nd - x->ndim), yi = i - (nd - y->ndim);
    int64_t xd = xi >= 0 ? x->dims[xi] : 1, yd = yi >= 0 ? y->dims[yi] : 1;
    if (xd == yd || yd == 1)
      dims[i] = xd;
    else if (xd == 1)
      dims[i] = yd;
    else if (xd < 0 || yd < 0)
      dims[i] = xd < 0 ? yd : xd; /* the batch must be 1 or this size; checked per batch */
    else
      return pd_ctx_fail(c, PD_ERR_INPUT,
                         "X of shape %s and Y of shape %s do not broadcast: dim %d is %lld against %lld (NumPy "
                         "rules: dims line up from the last, each pair equal or one of them 1)",
                         pd_dims_str(x->ndim, x->dims, a, sizeof a), pd_dims_str(y->ndim, y->dims, b, sizeof b), i,
                         (long long)xd, (long long)yd);
  }
  return pd_ctx_set_shape(c, pd_out(c, PD_BC_OUT), x->dtype, nd, dims);
}

/* A walk over Out's elements in order, with the matching offsets into X and
 * Y (kmath.h's pd_bc_map: per Out dim, X's and Y's strides, 0 where they
 * repeat, which the GPU kernels index directly). The last dim is the inner
 * loop. */
typedef struct pd_bc_walk {
  pd_bc_map m;
  int64_t idx[PD_MAX_DIMS];
  int64_t inner, rows, sx, sy; /* the last dim's length, the row count, X's and Y's steps along it */
  int64_t xo, yo;
} pd_bc_walk;

static void pd_bc_walk_init(pd_bc_walk *w, const pd_tensor *x, const pd_tensor *y, const pd_tensor *out) {
  memset(w, 0, sizeof *w);
  pd_bc_map_init(&w->m, x->ndim, x->dims, y->ndim, y->dims, out->ndim, out->dims);
  int nd = w->m.nd;
  w->inner = nd ? w->m.size[nd - 1] : 1;
  w->rows = w->inner ? w->m.numel / w->inner : 0;
  w->sx = nd ? w->m.xs[nd - 1] : 0;
  w->sy = nd ? w->m.ys[nd - 1] : 0;
}

/* Moves to the next row (all dims but the last). */
static void pd_bc_walk_step(pd_bc_walk *w) {
  const pd_bc_map *m = &w->m;
  for (int d = m->nd - 2; d >= 0; d--) {
    w->xo += m->xs[d];
    w->yo += m->ys[d];
    if (++w->idx[d] < m->size[d]) return;
    w->xo -= m->xs[d] * m->size[d];
    w->yo -= m->ys[d] * m->size[d];
    w->idx[d] = 0;
  }
}

/* Floats compute with kmath.h's pd_bc_op (the GPU kernel's math; IEEE
 * division, x / 0 = inf). Integers compute in the unsigned type U (wrapping
 * as NumPy does; no undefined overflow); division truncates toward zero and
 * guards the divisor (0 gives 0, and INT_MIN / -1 wraps to INT_MIN). */
static inline int32_t pd_bc_op_int32_t(pd_bc_kind k, int32_t a, int32_t b) {
  return k == PD_BC_ADD   ? (int32_t)((uint32_t)a + (uint32_t)b)
         : k == PD_BC_SUB ? (int32_t)((uint32_t)a - (uint32_t)b)
         : k == PD_BC_MUL ? (int32_t)((uint32_t)a * (uint32_t)b)
         : b == 0         ? 0
         : b == -1        ? (int32_t)(0u - (uint32_t)a)
                          : a / b;
}
static inline int64_t pd_bc_op_int64_t(pd_bc_kind k, int64_t a, int64_t b) {
  return k == PD_BC_ADD   ? (int64_t)((uint64_t)a + (uint64_t)b)
         : k == PD_BC_SUB ? (int64_t)((uint64_t)a - (uint64_t)b)
         : k == PD_BC_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
         : b == 0         ? 0
         : b == -1        ? (int64_t)(0u - (uint64_t)a)
                          : a / b;
}
static inline uint8_t pd_bc_op_uint8_t(pd_bc_kind k, uint8_t a, uint8_t b) {
  return k == PD_BC_ADD   ? (uint8_t)((uint32_t)a + (uint32_t)b)
         : k == PD_BC_SUB ? (uint8_t)((uint32_t)a - (uint32_t)b)
         : k == PD_BC_MUL ? (uint8_t)((uint32_t)a * (uint32_t)b)
         : b == 0         ? 0
                          : (uint8_t)(a / b);
}

#define T float
#include "broadcast_fwd_t.h"
#undef T
#define T double
#include "broadcast_fwd_t.h"
#undef T
#define T int32_t
#include "broadcast_fwd_t.h"
#undef T
#define T int64_t
#include "broadcast_fwd_t.h"
#undef T
#define T uint8_t
#include "broadcast_fwd_t.h"
#undef T
#define T float
#include "broadcast_bwd_t.h"
#undef T
#define T double
#include "broadcast_bwd_t.h"
#undef T

static const pd_slot_def pd_bc_inputs[] = {
    [PD_BC_X] = {"X", "first operand, any shape", 0},
    [PD_BC_Y] = {"Y", "second operand, of X's dtype and a shape that broadcasts with X's", 0},
};
static const pd_kernel pd_bc_kernels[] = {
    PD_CPU_F32(pd_bc_forward_float),           PD_CPU_F64(pd_bc_forward_double),
    {{PD_CPU, PD_I32}, pd_bc_forward_int32_t}, {{PD_CPU, PD_I64}, pd_bc_forward_int64_t},
    {{PD_CPU, PD_U8}, pd_bc_forward_uint8_t},
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_broadcast_fwd),
#endif
};
static const pd_kernel pd_bc_grad_kernels[] = {
    PD_CPU_F32(pd_bc_backward_float),
    PD_CPU_F64(pd_bc_backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_broadcast_bwd),
#endif
};

/* The def of a broadcast op: its type, comment, output slot and kind. */
#define PD_BC_OP_DEF(TYPE, COMMENT, OUTPUTS, KIND)                                                                  \
  {                                                                                                                 \
    .type = TYPE, .comment = COMMENT, .inputs = pd_bc_inputs, .n_inputs = PD_LEN(pd_bc_inputs), .outputs = OUTPUTS, \
    .n_outputs = PD_LEN(OUTPUTS), .infer_shape = pd_bc_infer, .kernels = pd_bc_kernels,                             \
    .n_kernels = PD_LEN(pd_bc_kernels), .grad_kernels = pd_bc_grad_kernels,                                         \
    .n_grad_kernels = PD_LEN(pd_bc_grad_kernels), .data = KIND,                                                     \
  }

#endif /* PD_BC_OP */

#endif
