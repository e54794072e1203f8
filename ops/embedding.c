/* embedding.c — Paddle's lookup_table: Out[i, :] = W[Ids[i], :] for every id
 * of Ids (int64, any shape [...]), Out [..., D]; an id equal to padding_idx
 * gives a zero row and no gradient. dW[r] = sum of dOut[i] over the i with
 * Ids[i] = r: dense [V, D], or row-sparse (rows sorted and unique, values
 * [n, D]) when training with an optimizer and W has no other reader
 * (docs/netdesc.md "embedding and row-sparse gradients"). */
#include "embedding.h"

#include <stdlib.h>
#include <string.h>

#include "base/tmpl.h"

static const pd_slot_def inputs[] = {
    [IDS] = {"Ids", "int64 ids, any shape [...], each in [0, V)", PD_SLOT_NO_GRAD},
    [W] = {"W", "the table [V, D]: vocab_size rows of dim values", PD_SLOT_PARAM | PD_SLOT_ROWS_GRAD},
};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "the rows of W, [..., D] (Ids' shape, then D)", 0}};
static const pd_attr_def attrs[] = {
    [A_VOCAB] = {"vocab_size", "V, the number of rows of W; 0: from W's declaration", PD_ATTR_INT, .def = "i: 0",
                 .min_kind = PD_GE, .min = 0},
    [A_DIM] = {"dim", "D, the length of a row of W; 0: from W's declaration", PD_ATTR_INT, .def = "i: 0",
               .min_kind = PD_GE, .min = 0},
    [A_PADDING] = {"padding_idx", "an id whose output rows are zero and which gets no gradient; -1: none", PD_ATTR_INT,
                   .def = "i: -1", .min_kind = PD_GE, .min = -1},
};

/* W's dtype selects the kernel (Ids is int64). */
static pd_dtype key_dtype(pd_ctx *c) { return pd_in(c, W)->dtype; }

/* The number of ids, -1 while the batch is unknown. */
static int64_t count_ids(const pd_tensor *ids) {
  int64_t n = 1;
  for (int i = 0; i < ids->ndim; i++) n = n < 0 || ids->dims[i] < 0 ? -1 : n * ids->dims[i];
  return n;
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *ids = pd_in(c, IDS), *w = pd_in(c, W);
  int64_t v = pd_attr_i(c, A_VOCAB), d = pd_attr_i(c, A_DIM), pad = pd_attr_i(c, A_PADDING);
  if (ids->dtype != PD_I64)
    return pd_ctx_fail(c, PD_ERR_INPUT, "Ids \"%s\" must be int64, got %s", pd_ctx_in_name(c, IDS, 0),
                       pd_dtype_name(ids->dtype));
  if (ids->ndim + 1 > PD_MAX_DIMS)
    return pd_ctx_fail_shape(c, "Ids", pd_ctx_in_name(c, IDS, 0), ids, "Out adds a dim to it");
  pd_status st = PD_OK;
  if (v > 0 && d > 0)
    st = pd_ctx_param_shape(c, W, pd_dtype_is_float(w->dtype) ? w->dtype : PD_F32, 2, (int64_t[]){v, d});
  else if (w->ndim < 0 || (v > 0) != (d > 0))
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "W \"%s\": give both attributes vocab_size and dim, or declare W with its shape [V, D]",
                       pd_ctx_in_name(c, W, 0));
  if (st) return st;
  if (w->ndim != 2 || w->dims[0] <= 0 || w->dims[1] <= 0 || !pd_dtype_is_float(w->dtype))
    return pd_ctx_fail_shape(c, "W", pd_ctx_in_name(c, W, 0), w, "an embedding table is float32 or float64 [V, D]");
  if (pad >= w->dims[0])
    return pd_ctx_fail(c, PD_ERR_INPUT, "padding_idx %lld is not an id of W \"%s\" (V = %lld)", (long long)pad,
                       pd_ctx_in_name(c, W, 0), (long long)w->dims[0]);
  int64_t dims[PD_MAX_DIMS];
  memcpy(dims, ids->dims, sizeof(int64_t) * (size_t)ids->ndim);
  dims[ids->ndim] = w->dims[1];
  return pd_ctx_set_shape(c, pd_out(c, OUT), w->dtype, ids->ndim + 1, dims);
}

/* dW: [V, D] dense, or with its row list [n, D] and rows int64 [n]. */
static pd_status grad_infer(pd_ctx *c) {
  pd_tensor *w = pd_in(c, G_W), *dw = pd_out(c, G_DW), *rows = pd_out(c, G_ROWS);
  if (!dw) return PD_OK;
  if (!rows) return pd_ctx_set_shape(c, dw, w->dtype, 2, w->dims);
  int64_t n = count_ids(pd_in(c, G_IDS));
  pd_status st = pd_ctx_set_shape(c, dw, w->dtype, 2, (int64_t[]){n, w->dims[1]});
  if (!st) st = pd_ctx_set_shape(c, rows, PD_I64, 1, &n);
  return st;
}

/* A lookup moves data; its backward adds each row of dOut once. */
static double grad_flops(pd_ctx *c) { return (double)pd_tensor_numel(pd_in(c, G_DOUT)); }

/* Every id in [0, V), else an input error naming the row (first dim) and
 * the position within it, the value and V: ids come from data files. */
static pd_status check_ids(pd_ctx *c, const pd_tensor *ids, int64_t v) {
  const int64_t *id = PD_DATA(ids, int64_t);
  int64_t n = pd_tensor_numel(ids), per_row = ids->ndim > 1 && ids->dims[0] > 0 ? n / ids->dims[0] : 1;
  for (int64_t i = 0; i < n; i++)
    if (id[i] < 0 || id[i] >= v)
      return pd_ctx_fail(c, PD_ERR_INPUT, "Ids \"%s\" row %lld, position %lld: id %lld is outside [0, %lld) (V = %lld)",
                         pd_ctx_in_name(c, IDS, 0), (long long)(i / per_row), (long long)(i % per_row),
                         (long long)id[i], (long long)v, (long long)v);
  return PD_OK;
}

/* Positions of the ids sorted by (id, position), for the row-sparse
 * gradient: equal ids are then adjacent and summed in position order. */
typedef struct pos_id {
  int64_t id, pos;
} pos_id;
static int cmp_pos_id(const void *a, const void *b) {
  const pos_id *x = a, *y = b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Op scratch work[0] with n elements of `bytes`; grows once, kept across steps. */
static void *scratch(pd_ctx *c, int64_t n, size_t bytes, pd_status *st) {
  pd_tensor *t = &c->op->work[0];
  int64_t len = n * (int64_t)bytes + 1;
  t->dtype = PD_U8;
  *st = pd_tensor_set_dims(t, 1, &len, c->err);
  if (!*st) *st = pd_ctx_alloc(c, t);
  return *st ? NULL : pd_tensor_data(t);
}

/* The positions of the ids but padding_idx, sorted by id and then
 * position, in op scratch; *m of them. Where the table has few rows next
 * to the ids (a char LM's 256 bytes, 2,048 a step), by counting: the same
 * order as a sort, in O(n + v) where qsort took ~0.1 ms a step. */
static pos_id *sort_ids(pd_ctx *c, const int64_t *id, int64_t n, int64_t pad, int64_t v, int64_t *m, pd_status *st) {
  const bool count = v <= 4 * n + 4096;
  pos_id *s = scratch(c, n + (count ? (v + 2) / 2 : 0), sizeof(pos_id), st);
  if (*st) return NULL;
  *m = 0;
  if (!count) {
    for (int64_t i = 0; i < n; i++)
      if (id[i] != pad) s[*m].id = id[i], s[*m].pos = i, ++*m;
    qsort(s, (size_t)*m, sizeof *s, cmp_pos_id);
    return s;
  }
  int64_t *next = (int64_t *)(void *)(s + n); /* v + 1 counters after the n entries */
  memset(next, 0, sizeof(int64_t) * (size_t)(v + 1));
  for (int64_t i = 0; i < n; i++)
    if (id[i] != pad) next[id[i] + 1]++;
  for (int64_t k = 1; k <= v; k++) next[k] += next[k - 1]; /* next[k]: where id k's first goes */
  for (int64_t i = 0; i < n; i++)
    if (id[i] != pad) s[next[id[i]]].id = id[i], s[next[id[i]]++].pos = i;
  *m = next[v - 1 >= 0 ? v - 1 : 0];
  return s;
}

#define T float
#include "embedding_t.h"
#undef T
#define T double
#include "embedding_t.h"
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_embedding_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_embedding_bwd),
#endif
};

/* left out: "<out>.w" (docs/netdesc.md, "Left out") */
static const char *const fill_in[] = {[W] = "w"};
const pd_op_def pd_op_embedding = {
    .type = "embedding",
    .fill_in = fill_in,
    .comment = "Looks up rows of a table (Paddle's lookup_table): Out[..., :] = W[Ids[...], :], zero where the "
               "id is padding_idx. W [V, D] is a parameter; give vocab_size and dim or declare it. Ids outside "
               "[0, V) stop the run naming the row and position. The gradient of W is row-sparse when W has "
               "no other reader and an optimizer applies it (the update ops then change only the rows used).",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .grad_infer_shape = grad_infer,
    .kernel_dtype = key_dtype,
    .grad_flops = grad_flops,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
