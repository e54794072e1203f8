/* if_else.c — the seeds' IfElse: a per-row condition (0 or 1) splits the
 * batch's rows between two blocks. Each block sees the rows of every X that
 * took it, under X's own names, runs its ops on those rows only, and the
 * variables named in `outputs` are merged back into Out in row order:
 *   Out[i][r] = (Cond[r] ? true_block : false_block)(X[r])[outputs[i]]
 * The gradient runs each block's gradient ops (AddBackwardOps inside the
 * block) on its rows: dX rows come from the block that row took, and the
 * gradients of the enclosing variables the blocks read are summed over both.
 *
 * Each block's values live in the Steps output, laid out once per batch
 * shape for the whole batch (a block never has more rows than that), so a
 * run only sets the shapes for its row counts and allocates nothing. */
#include "if_else.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/op.h"
#include "gpu/gpu.h" /* pd_gpu_work */

static const pd_slot_def inputs[] = {
    [COND] = {"Cond",
              "the condition per row, [batch] or [batch, 1] of uint8, int32 or int64: 1 runs true_block, 0 "
              "false_block",
              PD_SLOT_NO_GRAD},
    [X] = {"X",
           "the batch-shaped variables the blocks read, [batch, ...]: each block sees its rows under the same "
           "names",
           PD_SLOT_DUPLICABLE},
    [OUTER] = {"Outer", "the variables outside the blocks that they read (filled in: every input after Cond is an X)",
               PD_SLOT_DUPLICABLE | PD_SLOT_DISPENSABLE | PD_SLOT_OUTER},
};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "the merged rows, [batch, ...], one per name in `outputs`", PD_SLOT_DUPLICABLE},
    [STEPS] = {"Steps", "the blocks' values (named <true_block>@STEPS when left out)",
               PD_SLOT_DISPENSABLE | PD_SLOT_STEPS},
};
static const char *const output_counts[N_OUT] = {[OUT] = "outputs"};
static const pd_attr_def attrs[] = {
    [A_TRUE] = {"true_block", "the block run on the rows whose condition is 1", PD_ATTR_BLOCK, .required = true},
    [A_FALSE] = {"false_block", "the block run on the rows whose condition is 0", PD_ATTR_BLOCK, .required = true},
    [A_OUTPUTS] = {"outputs", "the variables both blocks write, merged into Out", PD_ATTR_STRINGS, .required = true},
};

/* Both blocks get the X names. */
static int feeds(const pd_attr *a, const char *const *ins, const int *in_n, const char **names, int max) {
  (void)a;
  int n = 0;
  for (int i = 0; i < in_n[X] && n < max; i++) names[n++] = ins[in_n[COND] + i];
  return n;
}

/* ---- a block's part of the Steps buffer ---- */

typedef struct branch {
  int nv, nx, nout;
  int *x_var, *out_var;           /* the block's feeds (per X) and its variables named in `outputs` */
  bool *fwd, *grad;               /* per variable: a forward value, a gradient value, with room in Steps */
  size_t *off, *cap;              /* per variable: its offset in the block's part and the bytes it has there */
  size_t at, bytes;               /* the block's part of Steps */
  pd_tensor *t;                   /* per variable: its tensor, pointing into Steps */
  void *base;                     /* the Steps storage the tensors point into */
  bool dirty;                     /* laid out again since they were pointed */
  int64_t *rows, nrows, rows_cap; /* the batch rows that took the block, in order */
  const int64_t *drows;           /* rows where the tensors are (on a GPU, a copy in device memory) */
  void *cond;                     /* on a GPU: the condition read back to the host */
  size_t cond_cap;
} branch;

static void branch_free(void *p) {
  branch *s = p;
  if (!s) return;
  for (int v = 0; s->t && v < s->nv; v++) pd_tensor_release(&s->t[v]);
  free(s->x_var), free(s->out_var), free(s->fwd), free(s->grad), free(s->off), free(s->cap), free(s->t), free(s->rows);
  free(s->cond);
  free(s);
}

static pd_block *block_at(pd_ctx *c, int k) { return pd_attr_at(c, k ? A_FALSE : A_TRUE)->blk; }

/* The block's feeds and outputs, found once per block. */
static pd_status branch_of(pd_ctx *c, pd_block *b, branch **out) {
  if ((*out = b->rt)) return PD_OK;
  branch *s = calloc(1, sizeof *s);
  if (!s) return pd_ctx_fail(c, PD_ERR_RUNTIME, "out of memory");
  b->rt = s, b->rt_free = branch_free;
  const pd_attr *o = pd_attr_at(c, A_OUTPUTS);
  s->nx = pd_in_count(c, X), s->nout = o->n;
  s->x_var = calloc((size_t)s->nx + 1, sizeof(int)), s->out_var = calloc((size_t)s->nout + 1, sizeof(int));
  if (!s->x_var || !s->out_var) return pd_ctx_fail(c, PD_ERR_RUNTIME, "out of memory");
  for (int i = 0; i < s->nx; i++) s->x_var[i] = pd_block_var(b, pd_ctx_in_name(c, X, i));
  for (int i = 0; i < s->nout; i++) {
    int v = s->out_var[i] = pd_block_var(b, o->strs[i]);
    int p = v >= 0 ? b->net->vars[v].producer : -1;
    if (v < 0 || !b->local[v] || p < 0 || p >= b->net->n_forward)
      return pd_ctx_fail(c, PD_ERR_INPUT,
                         "attribute \"outputs\" names \"%s\", which no op of block \"%s\" writes (each name in "
                         "\"outputs\" must be written by both blocks)",
                         o->strs[i], b->name);
  }
  if (!s->nout) return pd_ctx_fail(c, PD_ERR_INPUT, "attribute \"outputs\" must name at least one variable");
  *out = s;
  return PD_OK;
}

/* Where each of the block's values lives in its part of Steps, starting at
 * `at`, for the whole batch's shapes just inferred. */
static pd_status lay_out(pd_ctx *c, pd_block *b, branch *s, size_t at) {
  int nv = b->net->nvars, nf = b->net->n_forward;
  if (s->nv != nv) {
    bool *fwd = realloc(s->fwd, (size_t)nv), *grad = realloc(s->grad, (size_t)nv);
    size_t *off = realloc(s->off, sizeof *off * (size_t)nv), *cap = realloc(s->cap, sizeof *cap * (size_t)nv);
    if (fwd) s->fwd = fwd;
    if (grad) s->grad = grad;
    if (off) s->off = off;
    if (cap) s->cap = cap;
    if (!fwd || !grad || !off || !cap) return pd_ctx_fail(c, PD_ERR_RUNTIME, "out of memory");
  }
  size_t n = 0;
  for (int v = 0; v < nv; v++) {
    const pd_var_info *vi = &b->net->vars[v];
    bool feed = false;
    for (int i = 0; i < s->nx; i++) feed |= s->x_var[i] == v;
    s->fwd[v] = b->local[v] && (feed || (vi->producer >= 0 && vi->producer < nf));
    s->grad[v] = b->local[v] && !s->fwd[v] && b->backward;
    s->cap[v] = s->fwd[v] || s->grad[v] ? pd_block_align(pd_block_bytes1(&b->shapes[v])) : 0;
    s->off[v] = n, n += s->cap[v];
  }
  s->at = at, s->bytes = n;
  s->dirty = true;
  return PD_OK;
}

/* Points the block's tensors into Steps (after a new layout or when the
 * buffer moved), each with the room its layout gives it: their shapes
 * change with the rows of each run, their storage does not. */
static pd_status point(pd_ctx *c, pd_block *b, branch *s, pd_tensor *buf) {
  char *base = pd_tensor_data(buf);
  if (!s->dirty && base == s->base) return PD_OK;
  int nv = b->net->nvars;
  for (int v = 0; s->t && v < s->nv; v++) pd_tensor_release(&s->t[v]);
  free(s->t);
  s->t = calloc((size_t)nv + 1, sizeof *s->t);
  s->nv = nv;
  if (!s->t) return pd_ctx_fail(c, PD_ERR_RUNTIME, "out of memory");
  pd_status st = PD_OK;
  for (int v = 0; v < nv && !st; v++) {
    s->t[v] = b->shapes[v], s->t[v].storage = NULL, s->t[v].place = buf->place;
    if (s->cap[v] && !(st = pd_tensor_borrow(&s->t[v], base + s->at + s->off[v], s->cap[v], c->err)))
      s->t[v].storage->place = buf->place; /* device memory on a GPU (borrowed: never freed) */
  }
  if (st) return st;
  s->base = base;
  s->dirty = false;
  return PD_OK;
}

/* ---- shapes ---- */

/* Infers the block's shapes for `rows` rows of X (-1: the batch at load),
 * the gradient ops' too when `grad`, into b->shapes. */
static pd_status infer_rows(pd_ctx *c, pd_block *b, branch *s, int64_t rows, bool grad) {
  pd_tensor **bind = b->bind;
  for (int v = 0; v < b->net->nvars; v++) bind[v] = NULL;
  pd_block_bind_outer(b, c, OUTER, bind);
  for (int i = 0; i < s->nx; i++) {
    const pd_tensor *x = pd_in_at(c, X, i);
    pd_tensor *xt = &b->shapes[s->x_var[i]];
    if (!x) return pd_ctx_fail(c, PD_ERR_INPUT, "X #%d is missing", i);
    int64_t dims[PD_MAX_DIMS];
    memcpy(dims, x->dims, sizeof dims);
    dims[0] = rows;
    pd_status st = pd_ctx_set_shape(c, xt, x->dtype, x->ndim, dims);
    if (st) return st;
    bind[s->x_var[i]] = xt;
  }
  pd_status st = pd_block_infer(b, c, bind, 0, b->net->n_forward);
  if (st || !grad || !b->backward) return st;
  pd_block_seed_shapes(b, bind);
  return pd_block_infer(b, c, bind, b->net->n_forward, b->net->nops);
}

static pd_status check_inputs(pd_ctx *c, int64_t *batch) {
  pd_tensor *cond = pd_in(c, COND), *x0 = pd_in_at(c, X, 0);
  for (int i = 0; i < pd_in_count(c, X); i++) {
    pd_tensor *x = pd_in_at(c, X, i);
    if (x->ndim < 1 || !pd_dim_fits(x->dims[0], x0->dims[0])) {
      char want[160];
      snprintf(want, sizeof want, "every X is [batch, ...] with the batch of \"%s\"", pd_ctx_in_name(c, X, 0));
      return pd_ctx_fail_shape(c, "X", pd_ctx_in_name(c, X, i), x, want);
    }
  }
  *batch = x0->dims[0];
  bool int_type = cond->dtype == PD_U8 || cond->dtype == PD_I32 || cond->dtype == PD_I64;
  if (!int_type || cond->ndim < 1 || cond->ndim > 2 || (cond->ndim == 2 && cond->dims[1] != 1) ||
      !pd_dim_fits(cond->dims[0], *batch))
    return pd_ctx_fail_shape(c, "Cond", pd_ctx_in_name(c, COND, 0), cond,
                             "a condition is [batch] or [batch, 1] of uint8, int32 or int64, with X's batch");
  if (*batch < 0) *batch = cond->dims[0];
  return PD_OK;
}

/* A value per row that a block reads from outside would be seen whole, not
 * its rows: at load, where the batch is -1, that is an error. */
static pd_status check_outer(pd_ctx *c, pd_block *b) {
  for (int i = 0; i < b->nouter && !c->exec; i++) {
    const pd_tensor *t = b->bind[b->outer[i]];
    if (t && t->ndim >= 1 && t->dims[0] < 0) {
      char d[128];
      return pd_ctx_fail(c, PD_ERR_INPUT,
                         "block \"%s\" reads \"%s\" (%s) from outside, a value per row of the batch: list it in the "
                         "inputs after Cond (X), so that each block sees its own rows",
                         b->name, b->net->vars[b->outer[i]].name, pd_dims_str(t->ndim, t->dims, d, sizeof d));
    }
  }
  return PD_OK;
}

/* Out[i] from the true block's output; the false block's must agree. */
static pd_status out_shapes(pd_ctx *c, branch *const s[2], int64_t batch) {
  pd_block *bt = block_at(c, 0), *bf = block_at(c, 1);
  const pd_attr *o = pd_attr_at(c, A_OUTPUTS);
  for (int i = 0; i < s[0]->nout; i++) {
    const pd_tensor *y = &bt->shapes[s[0]->out_var[i]], *z = &bf->shapes[s[1]->out_var[i]];
    for (int k = 0; k < 2; k++) {
      const pd_tensor *t = k ? z : y;
      if (t->ndim < 1 || !pd_dim_fits(t->dims[0], batch)) {
        char what[160];
        snprintf(what, sizeof what, "block \"%s\" writes output", block_at(c, k)->name);
        return pd_ctx_fail_shape(c, what, o->strs[i], t, "an output is [rows, ...], a value per row of the block");
      }
    }
    if (y->dtype != z->dtype || !pd_dims_equal(y->ndim - 1, y->dims + 1, z->ndim - 1, z->dims + 1)) {
      char d1[128], d2[128];
      return pd_ctx_fail(c, PD_ERR_INPUT,
                         "output \"%s\": block \"%s\" writes it as %s %s but block \"%s\" as %s %s; both blocks "
                         "must give it the same dtype and the same dims after the rows",
                         o->strs[i], bt->name, pd_dtype_name(y->dtype), pd_dims_str(y->ndim, y->dims, d1, sizeof d1),
                         bf->name, pd_dtype_name(z->dtype), pd_dims_str(z->ndim, z->dims, d2, sizeof d2));
    }
    int64_t dims[PD_MAX_DIMS];
    memcpy(dims, y->dims, sizeof dims);
    dims[0] = batch;
    pd_status st = pd_ctx_set_shape(c, pd_out_at(c, OUT, i), y->dtype, y->ndim, dims);
    if (st) return st;
  }
  return PD_OK;
}

/* Shape inference through both blocks with the whole batch: once at load
 * (batch -1) and once per batch shape, which lays out Steps. */
static pd_status infer(pd_ctx *c) {
  int64_t batch = -1;
  pd_status st = check_inputs(c, &batch);
  if (st) return st;
  branch *s[2];
  for (int k = 0; k < 2; k++)
    if ((st = branch_of(c, block_at(c, k), &s[k]))) return st;
  for (int k = 0; k < 2; k++)
    if ((st = infer_rows(c, block_at(c, k), s[k], batch, false)) || (st = check_outer(c, block_at(c, k)))) return st;
  if ((st = out_shapes(c, s, batch))) return st;
  size_t at = 0;
  for (int k = 0; k < 2; k++) {
    pd_block *b = block_at(c, k);
    if (b->backward) {
      pd_block_seed_shapes(b, b->bind);
      if ((st = pd_block_infer(b, c, b->bind, b->net->n_forward, b->net->nops))) return st;
    }
    if ((st = lay_out(c, b, s[k], at))) return st;
    at += s[k]->bytes;
  }
  int64_t dims[2] = {batch < 0 ? -1 : 1, (int64_t)at + 64};
  return pd_ctx_set_shape(c, pd_out(c, STEPS), PD_U8, 2, dims);
}

/* ---- running a block on its rows ---- */

#ifdef PD_WITH_CUDA
static bool on_gpu(pd_ctx *c) { return c->op->kernel && c->op->kernel->key.place == PD_GPU; }
#endif

/* Splits the batch's rows by the condition; anything but 0 or 1 is an
 * error naming the row. On a GPU the condition is read back to the host
 * (its row counts set the blocks' shapes: a net with blocks runs without
 * CUDA graphs) and the rows go to the device (op scratch). */
static pd_status split_rows(pd_ctx *c, const pd_tensor *cond, branch *const s[2]) {
  int64_t n = cond->dims[0];
  const void *data = pd_tensor_data(cond);
  for (int k = 0; k < 2; k++) {
    if (s[k]->rows_cap < n) {
      int64_t *rows = realloc(s[k]->rows, sizeof *rows * (size_t)n);
      if (!rows) return pd_ctx_fail(c, PD_ERR_RUNTIME, "out of memory");
      s[k]->rows = rows, s[k]->rows_cap = n;
    }
    s[k]->nrows = 0;
    s[k]->drows = s[k]->rows;
  }
#ifdef PD_WITH_CUDA
  size_t bytes = (size_t)n * pd_dtype_size(cond->dtype);
  if (on_gpu(c)) {
    if (s[0]->cond_cap < bytes) {
      void *h = realloc(s[0]->cond, bytes);
      if (!h) return pd_ctx_fail(c, PD_ERR_RUNTIME, "out of memory");
      s[0]->cond = h, s[0]->cond_cap = bytes;
    }
    pd_status st = pd_gpu_if_else_read(c, s[0]->cond, data, bytes);
    if (st) return st;
    data = s[0]->cond;
  }
#endif
  for (int64_t r = 0; r < n; r++) {
    int64_t v = cond->dtype == PD_U8    ? ((const uint8_t *)data)[r]
                : cond->dtype == PD_I32 ? ((const int32_t *)data)[r]
                                        : ((const int64_t *)data)[r];
    if (v != 0 && v != 1)
      return pd_ctx_fail(c, PD_ERR_INPUT, "Cond \"%s\" row %lld is %lld; a condition is 0 or 1",
                         pd_ctx_in_name(c, COND, 0), (long long)r, (long long)v);
    branch *b = s[v ? 0 : 1];
    b->rows[b->nrows++] = r;
  }
#ifdef PD_WITH_CUDA
  if (on_gpu(c)) {
    int64_t *d = pd_gpu_work(c, 0, sizeof(int64_t) * (size_t)(n + 1));
    if (!d) return PD_ERR_RUNTIME;
    s[0]->drows = d, s[1]->drows = d + s[0]->nrows;
    pd_status st = pd_gpu_if_else_write(c, d, s[0]->rows, sizeof(int64_t) * (size_t)s[0]->nrows);
    if (!st) st = pd_gpu_if_else_write(c, d + s[0]->nrows, s[1]->rows, sizeof(int64_t) * (size_t)s[1]->nrows);
    if (st) return st;
  }
#endif
  return PD_OK;
}

/* Sets the block's shapes for its rows and binds its tensors in Steps. */
static pd_status bind_rows(pd_ctx *c, pd_block *b, branch *s, bool grad) {
  pd_status st = infer_rows(c, b, s, s->nrows, grad);
  if (st) return st;
  pd_tensor **bind = b->bind;
  pd_block_bind_outer(b, c, OUTER, bind);
  for (int v = 0; v < s->nv; v++) {
    if (!b->local[v]) continue;
    const pd_tensor *sh = &b->shapes[v];
    pd_tensor *t = &s->t[v];
    if (s->cap[v] && sh->ndim >= 0 && pd_tensor_bytes(sh) > s->cap[v])
      return pd_ctx_fail(c, PD_ERR_RUNTIME,
                         "block \"%s\": \"%s\" needs more room for %lld rows than for the whole batch", b->name,
                         b->net->vars[v].name, (long long)s->nrows);
    t->dtype = sh->dtype, t->ndim = sh->ndim;
    memcpy(t->dims, sh->dims, sizeof t->dims);
    bind[v] = t;
  }
  return PD_OK;
}

/* For q < n: dst row (scatter ? idx[q] : q) gets src row (scatter ? q :
 * idx[q]), zeros where src is NULL, or adds it (add); idx NULL: row q on
 * both sides. On a GPU, pd_gpu_if_else_rows. */
static pd_status move_rows(pd_ctx *c, void *dst, const void *src, const int64_t *idx, int64_t n, size_t row,
                           bool scatter, bool add, pd_dtype dt) {
#ifdef PD_WITH_CUDA
  if (on_gpu(c)) return pd_gpu_if_else_rows(c, dst, src, idx, n, row, scatter, add);
#else
  (void)c;
#endif
  size_t es = pd_dtype_size(dt);
  for (int64_t q = 0; q < n; q++) {
    int64_t at = idx ? idx[q] : q;
    char *d = (char *)dst + (size_t)(scatter ? at : q) * row;
    const char *s = src ? (const char *)src + (size_t)(scatter ? q : at) * row : NULL;
    if (add) {
      if (s) pd_block_add_into(d, s, (int64_t)(row / es), dt);
    } else if (!s) {
      memset(d, 0, row);
    } else {
      memcpy(d, s, row);
    }
  }
  return PD_OK;
}

static pd_status forward(pd_ctx *c) {
  branch *s[2] = {block_at(c, 0)->rt, block_at(c, 1)->rt};
  pd_status st = split_rows(c, pd_in(c, COND), s);
  for (int k = 0; k < 2 && !st; k++) {
    pd_block *b = block_at(c, k);
    if ((st = point(c, b, s[k], pd_out(c, STEPS))) || !s[k]->nrows) continue;
    if ((st = bind_rows(c, b, s[k], false))) break;
    pd_tensor **bind = b->bind;
    for (int i = 0; i < s[k]->nx && !st; i++) {
      const pd_tensor *x = pd_in_at(c, X, i);
      st = move_rows(c, pd_tensor_data(bind[s[k]->x_var[i]]), pd_tensor_data(x), s[k]->drows, s[k]->nrows,
                     pd_row_bytes(x), false, false, x->dtype);
    }
    if (st || (st = pd_block_run(b, c, bind, 0, b->net->n_forward, 0))) break;
    for (int i = 0; i < s[k]->nout && !st; i++) {
      const pd_tensor *y = bind[s[k]->out_var[i]];
      pd_tensor *out = pd_out_at(c, OUT, i);
      st = move_rows(c, pd_tensor_data(out), pd_tensor_data(y), s[k]->drows, s[k]->nrows, pd_row_bytes(out), true,
                     false, out->dtype);
    }
  }
  return st;
}

/* ---- backward ---- */

/* The block's gradient ops, made once: from its outputs (seeds) to the X
 * feeds and the outer variables whose gradients are wanted. */
static pd_status build_backward(pd_ctx *c, pd_block *b, branch *s) {
  if (b->backward) return PD_OK;
  int nseed = 0, nwant = 0;
  int *seeds = calloc((size_t)s->nout + 1, sizeof(int)), *wants = calloc((size_t)(s->nx + b->nouter) + 1, sizeof(int));
  if (!seeds || !wants) {
    free(seeds), free(wants);
    return pd_ctx_fail(c, PD_ERR_RUNTIME, "out of memory");
  }
  for (int i = 0; i < s->nout; i++) {
    bool dup = false;
    for (int k = 0; k < nseed; k++) dup |= seeds[k] == s->out_var[i];
    if (!dup) seeds[nseed++] = s->out_var[i];
  }
  for (int i = 0; i < s->nx; i++)
    if (pd_ctx_grad_of_in(c, G_X, G_DX, i)) wants[nwant++] = s->x_var[i];
  for (int i = 0; i < b->nouter; i++)
    if (pd_block_outer_grad(b, c, G_OUTER, G_DOUTER, i)) wants[nwant++] = b->outer[i];
  pd_status st = pd_block_add_backward(b, seeds, nseed, wants, nwant, c->err);
  free(seeds), free(wants);
  if (st || !c->op->kernel) return st; /* chosen with the net's when it is */
  return pd_net_select_kernels(b->net, c->op->kernel->key.place, c->err);
}

static pd_status grad_infer(pd_ctx *c) {
  pd_status st = PD_OK;
  for (int k = 0; k < 2 && !st; k++) {
    pd_block *b = block_at(c, k);
    branch *s;
    if (!(st = branch_of(c, b, &s))) st = build_backward(c, b, s);
  }
  static const int in_slots[] = {G_X, G_OUTER}, out_slots[] = {G_DX, G_DOUTER};
  for (int k = 0; k < 2 && !st; k++)
    for (int i = 0; i < pd_in_count(c, in_slots[k]) && !st; i++) {
      pd_tensor *x = pd_in_at(c, in_slots[k], i), *dx = pd_ctx_grad_of_in(c, in_slots[k], out_slots[k], i);
      if (dx) st = pd_ctx_set_shape(c, dx, x->dtype, x->ndim, x->dims);
    }
  return st;
}

/* The gradient from outside of seed i: the rows of dOut the block's rows
 * came from (summed when `outputs` names its variable twice). */
static pd_status fill_seed(pd_ctx *c, const branch *s, pd_tensor *g, int v) {
  size_t row = pd_row_bytes(g);
  pd_status st = move_rows(c, pd_tensor_data(g), NULL, NULL, 1, pd_tensor_bytes(g), false, false, g->dtype);
  for (int i = 0; i < s->nout && !st; i++) {
    const pd_tensor *dy = s->out_var[i] == v ? pd_ctx_grad_of_out(c, G_OUT_Y, G_DOUT, i) : NULL;
    if (dy) st = move_rows(c, pd_tensor_data(g), pd_tensor_data(dy), s->drows, s->nrows, row, false, true, g->dtype);
  }
  return st;
}

static pd_status backward(pd_ctx *c) {
  branch *s[2] = {block_at(c, 0)->rt, block_at(c, 1)->rt};
  pd_status st = PD_OK;
  for (int j = 0; j < pd_out_count(c, G_DOUTER) && !st; j++) {
    pd_tensor *d = pd_out_at(c, G_DOUTER, j);
    if (d) st = move_rows(c, pd_tensor_data(d), NULL, NULL, 1, pd_tensor_bytes(d), false, false, d->dtype);
  }
  if (!st) st = split_rows(c, pd_in(c, G_COND), s);
  for (int k = 0; k < 2 && !st; k++) {
    pd_block *b = block_at(c, k);
    branch *bs = s[k];
    if ((st = point(c, b, bs, pd_in(c, G_STEPS))) || !bs->nrows) continue;
    if ((st = bind_rows(c, b, bs, true))) break;
    pd_tensor **bind = b->bind;
    for (int i = 0; i < b->nseed && !st; i++) st = fill_seed(c, bs, bind[b->seed_grad[i]], b->seed[i]);
    if (st || (st = pd_block_run(b, c, bind, b->net->n_forward, b->net->nops, 0))) break;
    for (int i = 0; i < bs->nx && !st; i++) { /* dX rows from this block's gradient, zeros without one */
      pd_tensor *dx = pd_ctx_grad_of_in(c, G_X, G_DX, i);
      if (!dx) continue;
      int g = pd_block_want_grad(b, bs->x_var[i]);
      st = move_rows(c, pd_tensor_data(dx), g >= 0 ? pd_tensor_data(bind[g]) : NULL, bs->drows, bs->nrows,
                     pd_row_bytes(dx), true, false, dx->dtype);
    }
    for (int i = 0; i < b->nouter && !st; i++) {
      int g = pd_block_want_grad(b, b->outer[i]);
      pd_tensor *d = g >= 0 ? pd_block_outer_grad(b, c, G_OUTER, G_DOUTER, i) : NULL;
      if (d)
        st = move_rows(c, pd_tensor_data(d), pd_tensor_data(bind[g]), NULL, 1, pd_tensor_bytes(d), false, true,
                       d->dtype);
    }
  }
  return st;
}

/* ---- FLOPs: the rows split only when running, so each block is counted
 * over half the batch ---- */

static double flops_of(pd_ctx *c, bool fwd) {
  double total = 0;
  for (int k = 0; k < 2; k++) {
    pd_block *b = block_at(c, k);
    if (!b->rt) return 0;
    for (int v = 0; v < b->net->nvars; v++) b->bind[v] = &b->shapes[v];
    pd_block_bind_outer(b, c, OUTER, b->bind);
    total += fwd ? pd_block_flops(b, b->bind, 0, b->net->n_forward)
                 : pd_block_flops(b, b->bind, b->net->n_forward, b->net->nops);
  }
  return total / 2;
}
static double flops(pd_ctx *c) { return flops_of(c, true); }
static double grad_flops(pd_ctx *c) { return flops_of(c, false); }

/* The GPU's kernels are these too: the blocks' ops run with their GPU
 * kernels on values in device memory, the rows move on the device
 * (if_else.cu); only the condition is read back to the host. */
static const pd_kernel kernels[] = {PD_CPU_F32(forward), PD_CPU_F64(forward),
#ifdef PD_WITH_CUDA
                                    PD_GPU_F32(forward)
#endif
};
static const pd_kernel grad_kernels[] = {PD_CPU_F32(backward), PD_CPU_F64(backward),
#ifdef PD_WITH_CUDA
                                         PD_GPU_F32(backward)
#endif
};

/* The first float X picks the kernel (an X may be integer, labels say). */
static pd_dtype key_dtype(pd_ctx *c) {
  for (int i = 0; i < pd_in_count(c, X); i++) {
    const pd_tensor *x = pd_in_at(c, X, i);
    if (x && pd_dtype_is_float(x->dtype)) return x->dtype;
  }
  const pd_tensor *y = pd_out_at(c, OUT, 0);
  return y && pd_dtype_is_float(y->dtype) ? y->dtype : PD_F32;
}

const pd_op_def pd_op_if_else = {
    .type = "if_else",
    .comment = "Splits the batch's rows by a 0/1 condition between two blocks, runs each on its rows (under X's "
               "names) and merges the variables named in `outputs` back into Out in row order. Gradients flow to "
               "each row from the block it took; an empty branch is skipped.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .kernel_dtype = key_dtype,
    .flops = flops,
    .grad_flops = grad_flops,
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
    .grad_infer_shape = grad_infer,
    .block_feeds = feeds,
    .output_counts = output_counts,
};
