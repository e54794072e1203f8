/* recurrent.c — the seeds' RecurrentNet: runs a step block once per time
 * step over sequences laid out [batch, time, ...]. Each step sees x_t (the
 * step's slice of every input sequence, [batch, ...]) and the previous
 * value of every state (the initial state at the first step), runs the
 * block's ops in a step scope of its own, and its outputs are stacked into
 * [batch, time, ...]. Per-row lengths (int64 [batch]) stop a row's states
 * at its last step and zero its outputs after it; `reverse` runs from the
 * last step to the first (a row of length L starts at its step L-1).
 *
 * The step scopes live in the Steps output: one slot per step with every
 * value the block computes (kept for the gradient when training; two slots
 * used in turn otherwise), laid out once per shape, variable by variable
 * (a variable's value at every step one after another). The gradient runs
 * the block's gradient ops (AddBackwardOps inside the block) from the last
 * step to the first over the kept slots, carrying the states' gradients
 * back a step at a time and summing the gradients of the enclosing
 * variables the block reads (its parameters) over the steps.
 *
 * A gradient op whose forward op says PD_OP_STACKS_ROWS (fc) and that
 * gives a parameter's gradient is deferred: at each step it gives only its
 * other gradients (dX); after the loop it runs once more over every step's
 * rows stacked, [time * batch, ...] (its step inputs and dOut are kept per
 * step one after another, so the stack is the variable's slots as they
 * lie), giving the parameter's gradient summed over the steps as one
 * product with time * batch rows, where 28 steps of 64 rows were 28 small
 * products and 28 additions. The deferred ops run together (on several
 * threads side by side, pd_block_run_only: each packs its own stacked dOut
 * once, where one product split over the threads had every part pack all of
 * it). */
#include "recurrent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/op.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "the input sequences, [batch, time, ...], one per name in `inputs`", PD_SLOT_DUPLICABLE},
    [H0] = {"H0",
            "the initial states, [batch, ...], one per name in `states` (left out: zeros of the shape the block "
            "declares for the previous value)",
            PD_SLOT_DUPLICABLE | PD_SLOT_DISPENSABLE},
    [LENGTHS] = {"Lengths", "int64 [batch]: each row's number of steps, 0 to time (left out: every row has all)",
                 PD_SLOT_DISPENSABLE | PD_SLOT_NO_GRAD},
    [OUTER] = {"Outer", "the variables outside the step block that it reads (filled in when left out)",
               PD_SLOT_DUPLICABLE | PD_SLOT_DISPENSABLE | PD_SLOT_OUTER},
};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "the stacked step outputs, [batch, time, ...], one per name in `outputs`", PD_SLOT_DUPLICABLE},
    [HT] = {"HT", "the final states, [batch, ...], one per name in `states`", PD_SLOT_DUPLICABLE | PD_SLOT_DISPENSABLE},
    [STEPS] = {"Steps", "the step scopes (named <block>@STEPS when left out)", PD_SLOT_DISPENSABLE | PD_SLOT_STEPS},
};
static const char *const input_counts[N_IN] = {[X] = "inputs", [H0] = "states"};
static const char *const output_counts[N_OUT] = {[OUT] = "outputs", [HT] = "states"};
static const pd_attr_def attrs[] = {
    [A_BLOCK] = {"step_block", "the block run at every step", PD_ATTR_BLOCK, .required = true},
    [A_INPUTS] = {"inputs", "the block's names for each step's slice of the X sequences", PD_ATTR_STRINGS,
                  .required = true},
    [A_PREV] = {"prev_states", "the block's names for the previous value of each state (read)", PD_ATTR_STRINGS,
                .def = "strings: []"},
    [A_STATES] = {"states", "the block's names for the new value of each state (written)", PD_ATTR_STRINGS,
                  .def = "strings: []"},
    [A_OUTPUTS] = {"outputs", "the block's variables stacked into Out", PD_ATTR_STRINGS, .required = true},
    [A_REVERSE] = {"reverse", "run from the last step to the first", PD_ATTR_BOOL, .def = "b: false"},
};

/* The step inputs and previous states are the block's feeds. */
static int feeds(const pd_attr *a, const char *const *ins, const int *in_n, const char **names, int max) {
  (void)ins, (void)in_n;
  int n = 0;
  for (int i = 0; i < a[A_INPUTS].n && n < max; i++) names[n++] = a[A_INPUTS].strs[i];
  for (int i = 0; i < a[A_PREV].n && n < max; i++) names[n++] = a[A_PREV].strs[i];
  return n;
}

/* ---- moving rows on the op's place ---- */

#ifdef PD_WITH_CUDA
static bool on_gpu(pd_ctx *c) { return c->op->kernel && c->op->kernel->key.place == PD_GPU; }
#endif

/* pd_rec_rows (recurrent.h): on the GPU its kernel; here a loop. */
static pd_status move(pd_ctx *c, pd_rec_rows m) {
#ifdef PD_WITH_CUDA
  if (on_gpu(c)) return pd_gpu_recurrent_rows(c, &m);
#else
  (void)c;
#endif
  size_t es = pd_dtype_size(m.dtype);
  for (int64_t r = 0; r < m.rows; r++) {
    char *d = (char *)m.dst + (size_t)r * m.dpitch;
    bool keep = !m.len || m.p < m.len[r];
    const char *src = keep ? (const char *)m.src : (const char *)m.alt;
    const char *s = src ? src + (size_t)r * (keep ? m.spitch : m.apitch) : NULL;
    if (m.add) {
      if (s) pd_block_add_into(d, s, (int64_t)(m.width / es), m.dtype);
    } else if (!s) {
      memset(d, 0, m.width);
    } else if (d != s) {
      memcpy(d, s, m.width);
    }
  }
  return PD_OK;
}

/* The whole of t from src (NULL: zeros), or added to it. */
static pd_status move_all(pd_ctx *c, pd_tensor *t, const void *src, bool add) {
  return move(
      c,
      (pd_rec_rows){
          .dst = pd_tensor_data(t), .src = src, .width = pd_tensor_bytes(t), .rows = 1, .add = add, .dtype = t->dtype});
}

/* ---- the step scopes ---- */

typedef struct steps {
  int nv, nin, nst, nout;
  int *in_var, *prev_var, *state_var, *out_var; /* the block's variables the attributes name */
  bool *fwd;                                    /* per variable: a forward value kept per step */
  bool *grad;                                   /* per variable: a gradient value, one per run... */
  bool *keepg;                                  /* ...or per step, read by a deferred op after the loop */
  bool *defer_out;                              /* per variable: a parameter's gradient a deferred op gives */
  bool *defer;                                  /* per op: a deferred gradient op (see the top) */
  int ndefer;                                   /* ops defer covers */
  size_t *off;                   /* per variable: where its slots start, or its offset in the gradient part */
  size_t *size;                  /* per variable: its bytes at one step (its slots' pitch) */
  size_t slot_bytes, grad_bytes; /* every kept variable's slots; the gradient part */
  int64_t batch, time;
  int nslots; /* slots laid out: time when kept for the gradient, else up to 2 used in turn */
  int nt;     /* tensors in t (nslots * nv when they were pointed; the layout may have changed since) */
  bool keep;  /* every step's values kept (training with a gradient) */
  pd_tensor *t, *g, *zero, *carry;
  pd_tensor *stk; /* per variable: its slots stacked, [time * batch, ...] (a deferred op's step inputs) */
  void *base;     /* the Steps storage the tensors point into */
  bool dirty;     /* laid out again since they were pointed */
} steps;

static void steps_free(void *p) {
  steps *s = p;
  if (!s) return;
  for (int i = 0; s->t && i < s->nt; i++) pd_tensor_release(&s->t[i]);
  for (int v = 0; s->g && v < s->nv; v++) pd_tensor_release(&s->g[v]);
  for (int v = 0; s->stk && v < s->nv; v++) pd_tensor_release(&s->stk[v]);
  for (int j = 0; j < s->nst; j++) {
    if (s->zero) pd_tensor_release(&s->zero[j]);
    if (s->carry) pd_tensor_release(&s->carry[j]);
  }
  free(s->in_var), free(s->prev_var), free(s->state_var), free(s->out_var), free(s->fwd), free(s->grad);
  free(s->keepg), free(s->defer_out), free(s->defer), free(s->size);
  free(s->off), free(s->t), free(s->g), free(s->stk), free(s->zero), free(s->carry);
  free(s);
}

static pd_status name_vars(pd_ctx *c, pd_block *b, int attr, int *vars, bool written) {
  const pd_attr *a = pd_attr_at(c, attr);
  for (int i = 0; i < a->n; i++) {
    vars[i] = pd_block_var(b, a->strs[i]);
    if (vars[i] < 0 || !b->local[vars[i]])
      return pd_ctx_fail(c, PD_ERR_INPUT, "attribute \"%s\" names \"%s\", which block \"%s\" %s", attrs[attr].name,
                         a->strs[i], b->name, vars[i] < 0 ? "does not have" : "reads from outside");
    if (written && b->net->vars[vars[i]].producer < 0)
      return pd_ctx_fail(c, PD_ERR_INPUT, "attribute \"%s\" names \"%s\", which no op of block \"%s\" writes",
                         attrs[attr].name, a->strs[i], b->name);
  }
  return PD_OK;
}

/* The block's step variables, found once per block. */
static pd_status steps_of(pd_ctx *c, pd_block *b, steps **out) {
  if ((*out = b->rt)) return PD_OK;
  int np = pd_attr_at(c, A_PREV)->n, ns = pd_attr_at(c, A_STATES)->n;
  if (np != ns)
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "attributes \"prev_states\" (%d names) and \"states\" (%d) must pair up: each state is read as "
                       "its previous value and written as its new one",
                       np, ns);
  steps *s = calloc(1, sizeof *s);
  if (!s) return pd_ctx_fail(c, PD_ERR_RUNTIME, "out of memory");
  s->nin = pd_attr_at(c, A_INPUTS)->n, s->nst = ns, s->nout = pd_attr_at(c, A_OUTPUTS)->n;
  s->in_var = calloc((size_t)s->nin + 1, sizeof(int));
  s->prev_var = calloc((size_t)ns + 1, sizeof(int)), s->state_var = calloc((size_t)ns + 1, sizeof(int));
  s->out_var = calloc((size_t)s->nout + 1, sizeof(int));
  b->rt = s, b->rt_free = steps_free;
  if (!s->in_var || !s->prev_var || !s->state_var || !s->out_var)
    return pd_ctx_fail(c, PD_ERR_RUNTIME, "out of memory");
  pd_status st = name_vars(c, b, A_INPUTS, s->in_var, false);
  if (!st) st = name_vars(c, b, A_PREV, s->prev_var, false);
  if (!st) st = name_vars(c, b, A_STATES, s->state_var, true);
  if (!st) st = name_vars(c, b, A_OUTPUTS, s->out_var, true);
  if (!s->nin && !st) st = pd_ctx_fail(c, PD_ERR_INPUT, "attribute \"inputs\" must name at least one step input");
  if (st) return st;
  *out = s;
  return PD_OK;
}

static bool is_prev(const steps *s, int v) {
  for (int j = 0; j < s->nst; j++)
    if (s->prev_var[j] == v) return true;
  return false;
}

/* Whether gradient op o can be deferred (see the top): its forward op
 * stacks rows, it gives a parameter's gradient, and each of its step inputs
 * is a value kept at every step in its own slots: not a previous state
 * (whose slots are the state's, after the initial one), not a view of
 * another variable's storage (reshape's output), batch first. Marks the
 * gradients it reads as kept per step. */
static bool deferrable(pd_block *b, steps *s, int o, bool mark) {
  const pd_op *op = &b->net->ops[o];
  const pd_op_def *f = pd_op_forward_def(op->def);
  if (!f || !(f->flags & PD_OP_STACKS_ROWS)) return false;
  bool gives = false;
  for (int sl = 0; sl < op->def->n_outputs; sl++)
    for (int i = 0; i < op->out[sl].n; i++) gives |= op->out[sl].vars[i] >= 0 && s->defer_out[op->out[sl].vars[i]];
  if (!gives) return false;
  for (int sl = 0; sl < op->def->n_inputs; sl++)
    for (int i = 0; i < op->in[sl].n; i++) {
      int v = op->in[sl].vars[i], p = v >= 0 ? b->net->vars[v].producer : -1;
      if (v < 0 || !b->local[v]) continue;
      if (is_prev(s, v) || (!s->fwd[v] && !s->grad[v]) || (p >= 0 && b->net->ops[p].def->views) ||
          b->shapes[v].ndim < 1 || b->shapes[v].dims[0] != s->batch)
        return false;
      if (mark && s->grad[v]) s->keepg[v] = true;
    }
  return true;
}

/* Where each of the block's values lives in the Steps buffer, for the shapes
 * just inferred: returns the buffer's bytes (per row of the batch at load). */
static pd_status lay_out(pd_ctx *c, pd_block *b, steps *s, bool keep, size_t *total) {
  int nv = b->net->nvars, nf = b->net->n_forward, no = b->net->nops;
  if (s->nv != nv) {
    bool *fwd = realloc(s->fwd, (size_t)nv), *grad = realloc(s->grad, (size_t)nv);
    bool *keepg = realloc(s->keepg, (size_t)nv), *dout = realloc(s->defer_out, (size_t)nv);
    size_t *off = realloc(s->off, sizeof *off * (size_t)nv), *size = realloc(s->size, sizeof *size * (size_t)nv);
    if (fwd) s->fwd = fwd;
    if (grad) s->grad = grad;
    if (keepg) s->keepg = keepg;
    if (dout) s->defer_out = dout;
    if (off) s->off = off;
    if (size) s->size = size;
    if (!fwd || !grad || !keepg || !dout || !off || !size) return pd_ctx_fail(c, PD_ERR_RUNTIME, "out of memory");
  }
  if (s->ndefer != no) {
    bool *defer = realloc(s->defer, (size_t)no + 1);
    if (!defer) return pd_ctx_fail(c, PD_ERR_RUNTIME, "out of memory");
    s->defer = defer, s->ndefer = no;
  }
  int64_t T = s->time;
  s->keep = keep;
  s->nslots = keep ? (int)T : (int)(T < 2 ? T : 2);
  for (int v = 0; v < nv; v++) {
    const pd_var_info *vi = &b->net->vars[v];
    bool in = false;
    for (int i = 0; i < s->nin; i++) in |= s->in_var[i] == v;
    s->fwd[v] = b->local[v] && !is_prev(s, v) && (in || (vi->producer >= 0 && vi->producer < nf));
    s->grad[v] = b->local[v] && !is_prev(s, v) && !s->fwd[v] && b->backward;
    s->keepg[v] = s->defer_out[v] = false;
  }
  for (int i = 0; i < b->nouter && keep && b->backward; i++) {
    int g = pd_block_want_grad(b, b->outer[i]);
    if (g >= 0) s->defer_out[g] = true;
  }
  for (int o = 0; o < no; o++)
    s->defer[o] = o >= nf && keep && b->backward && deferrable(b, s, o, false) && deferrable(b, s, o, true);
  for (int v = 0; v < nv; v++) { /* a parameter's gradient no deferred op gives is summed step by step */
    int p = b->net->vars[v].producer;
    s->defer_out[v] &= p >= 0 && s->defer[p];
  }
  size_t slots = 0, gsum = 0;
  for (int v = 0; v < nv; v++) {
    size_t n = pd_block_bytes1(&b->shapes[v]);
    s->size[v] = n;
    if (s->fwd[v] || s->keepg[v])
      s->off[v] = slots, slots += pd_block_align(n * (size_t)s->nslots);
    else if (s->grad[v])
      s->off[v] = gsum, gsum += pd_block_align(n);
  }
  s->slot_bytes = slots, s->grad_bytes = gsum;
  *total = slots + (keep && b->backward ? gsum : 0) + 64;
  return PD_OK;
}

/* Points the step tensors into the Steps buffer (after a new layout or when
 * the buffer moved); the initial zero states and the carried gradients get
 * storage of their own. Nothing is allocated while the shapes stay. */
static pd_status borrow(pd_tensor *t, void *data, pd_place place, pd_error *err) {
  t->place = place;
  pd_status st = pd_tensor_borrow(t, data, pd_tensor_bytes(t), err);
  if (!st) t->storage->place = place; /* device memory on a GPU (borrowed: never freed) */
  return st;
}

static pd_status point(pd_ctx *c, pd_block *b, steps *s, pd_tensor *buf) {
  bool keep = s->keep;
  char *base = pd_tensor_data(buf);
  if (!s->dirty && base == s->base) return PD_OK;
  int nv = b->net->nvars;
  for (int i = 0; s->t && i < s->nt; i++) pd_tensor_release(&s->t[i]);
  for (int v = 0; s->g && v < s->nv; v++) pd_tensor_release(&s->g[v]);
  for (int v = 0; s->stk && v < s->nv; v++) pd_tensor_release(&s->stk[v]);
  free(s->t), free(s->g), free(s->stk);
  s->t = calloc((size_t)(s->nslots * nv) + 1, sizeof *s->t);
  s->nt = s->t ? s->nslots * nv : 0;
  s->g = calloc((size_t)nv + 1, sizeof *s->g);
  s->stk = calloc((size_t)nv + 1, sizeof *s->stk);
  s->nv = nv;
  if (!s->zero) s->zero = calloc((size_t)s->nst + 1, sizeof *s->zero);
  if (!s->carry) s->carry = calloc((size_t)s->nst + 1, sizeof *s->carry);
  if (!s->t || !s->g || !s->stk || !s->zero || !s->carry) return pd_ctx_fail(c, PD_ERR_RUNTIME, "out of memory");
  pd_status st = PD_OK;
  for (int k = 0; k < s->nslots && !st; k++)
    for (int v = 0; v < nv && !st; v++) {
      pd_tensor *t = &s->t[k * nv + v];
      *t = b->shapes[v], t->storage = NULL, t->place = buf->place;
      if (s->fwd[v] || s->keepg[v]) st = borrow(t, base + s->off[v] + (size_t)k * s->size[v], buf->place, c->err);
    }
  for (int v = 0; v < nv && !st && keep; v++) {
    pd_tensor *t = &s->stk[v];
    *t = b->shapes[v], t->storage = NULL, t->place = buf->place;
    if ((s->fwd[v] || s->keepg[v]) && t->ndim >= 1) {
      t->dims[0] *= s->nslots;
      st = borrow(t, base + s->off[v], buf->place, c->err);
    }
  }
  char *gbase = base + s->slot_bytes;
  for (int v = 0; v < nv && !st; v++) {
    s->g[v] = b->shapes[v], s->g[v].storage = NULL, s->g[v].place = buf->place;
    if (s->grad[v] && keep && b->backward) st = borrow(&s->g[v], gbase + s->off[v], buf->place, c->err);
  }
  for (int j = 0; j < s->nst && !st; j++) {
    const pd_tensor *h = &b->shapes[s->prev_var[j]];
    pd_tensor *z[2] = {&s->zero[j], &s->carry[j]};
    for (int q = 0; q < 2 && !st; q++) {
      z[q]->dtype = h->dtype, z[q]->place = buf->place;
      if (!(st = pd_tensor_set_dims(z[q], h->ndim, h->dims, c->err))) st = pd_ctx_alloc(c, z[q]);
      if (!st) st = move_all(c, z[q], NULL, false);
    }
  }
  if (st) return st;
  s->base = base;
  s->dirty = false;
  return PD_OK;
}

/* ---- shapes ---- */

/* The feeds' shapes for a batch: x_t from X, previous states from H0 or the
 * block's declarations. */
static pd_status feed_shapes(pd_ctx *c, pd_block *b, steps *s, pd_tensor **bind) {
  pd_tensor *x0 = pd_in_at(c, X, 0);
  if (pd_in_count(c, X) != s->nin)
    return pd_ctx_fail(c, PD_ERR_INPUT, "X has %d sequences but attribute \"inputs\" names %d", pd_in_count(c, X),
                       s->nin);
  if (x0->ndim < 2) return pd_ctx_fail_shape(c, "X", pd_ctx_in_name(c, X, 0), x0, "a sequence is [batch, time, ...]");
  s->batch = x0->dims[0], s->time = x0->dims[1];
  for (int i = 0; i < s->nin; i++) {
    pd_tensor *x = pd_in_at(c, X, i), *xt = &b->shapes[s->in_var[i]];
    if (x->ndim < 2 || !pd_dim_fits(x->dims[0], s->batch) || x->dims[1] != s->time) {
      char want[160];
      snprintf(want, sizeof want,
               "every sequence must be [batch, time, ...] with the batch and the %lld steps of \"%s\"",
               (long long)s->time, pd_ctx_in_name(c, X, 0));
      return pd_ctx_fail_shape(c, "X", pd_ctx_in_name(c, X, i), x, want);
    }
    int64_t dims[PD_MAX_DIMS];
    dims[0] = x->dims[0];
    for (int d = 2; d < x->ndim; d++) dims[d - 1] = x->dims[d];
    pd_status st = pd_ctx_set_shape(c, xt, x->dtype, x->ndim - 1, dims);
    if (st) return st;
    bind[s->in_var[i]] = xt;
  }
  int nh = pd_in_count(c, H0);
  if (nh && nh != s->nst)
    return pd_ctx_fail(c, PD_ERR_INPUT,
                       "H0 gives %d initial states but attribute \"states\" names %d: give all or none", nh, s->nst);
  for (int j = 0; j < s->nst; j++) {
    int pv = s->prev_var[j];
    pd_tensor *h = &b->shapes[pv];
    const pd_var_info *vi = &b->net->vars[pv];
    if (nh) {
      pd_tensor *h0 = pd_in_at(c, H0, j);
      if (h0->ndim < 1 || !pd_dim_fits(h0->dims[0], s->batch))
        return pd_ctx_fail_shape(c, "H0", pd_ctx_in_name(c, H0, j), h0, "an initial state is [batch, ...]");
      pd_status st = pd_ctx_set_shape(c, h, h0->dtype, h0->ndim, h0->dims);
      if (st) return st;
    } else {
      if (vi->decl_ndim < 1)
        return pd_ctx_fail(c, PD_ERR_INPUT,
                           "state \"%s\" has no initial value: give H0, or declare its shape in block \"%s\" "
                           "(var { name: \"%s\" shape: [-1, ...] }) to start it at zero",
                           vi->name, b->name, vi->name);
      int64_t dims[PD_MAX_DIMS];
      memcpy(dims, vi->decl_dims, sizeof dims);
      dims[0] = s->batch;
      pd_dtype dt = vi->meta.dtype;
      pd_status st = pd_ctx_set_shape(c, h, dt, vi->decl_ndim, dims);
      if (st) return st;
    }
    bind[pv] = h;
  }
  pd_tensor *len = pd_in(c, LENGTHS);
  if (len && (len->dtype != PD_I64 || len->ndim != 1 || !pd_dim_fits(len->dims[0], s->batch)))
    return pd_ctx_fail_shape(c, "Lengths", pd_ctx_in_name(c, LENGTHS, 0), len, "lengths are int64 [batch]");
  return PD_OK;
}

/* Shape inference through the step block: once at load (batch -1) and once
 * per batch shape. */
static pd_status infer(pd_ctx *c) {
  pd_block *b = pd_attr_at(c, A_BLOCK)->blk;
  steps *s;
  pd_status st = steps_of(c, b, &s);
  if (st) return st;
  pd_tensor **bind = b->bind;
  for (int v = 0; v < b->net->nvars; v++) bind[v] = NULL;
  pd_block_bind_outer(b, c, OUTER, bind);
  if ((st = feed_shapes(c, b, s, bind))) return st;
  if ((st = pd_block_infer(b, c, bind, 0, b->net->n_forward))) return st;
  char d1[128], d2[128];
  for (int j = 0; j < s->nst; j++) {
    const pd_tensor *h = bind[s->state_var[j]], *p = bind[s->prev_var[j]];
    if (h->dtype != p->dtype || !pd_dims_equal(h->ndim, h->dims, p->ndim, p->dims))
      return pd_ctx_fail(c, PD_ERR_INPUT,
                         "state \"%s\": block \"%s\" writes it as %s %s, but its previous value \"%s\" is %s %s",
                         b->net->vars[s->state_var[j]].name, b->name, pd_dtype_name(h->dtype),
                         pd_dims_str(h->ndim, h->dims, d1, sizeof d1), b->net->vars[s->prev_var[j]].name,
                         pd_dtype_name(p->dtype), pd_dims_str(p->ndim, p->dims, d2, sizeof d2));
    if ((st = pd_ctx_set_shape(c, pd_out_at(c, HT, j), h->dtype, h->ndim, h->dims))) return st;
  }
  for (int i = 0; i < s->nout; i++) {
    const pd_tensor *y = bind[s->out_var[i]];
    if (y->ndim < 1 || !pd_dim_fits(y->dims[0], s->batch))
      return pd_ctx_fail_shape(c, "the step output", b->net->vars[s->out_var[i]].name, y,
                               "a step output is [batch, ...], stacked into [batch, time, ...]");
    int64_t dims[PD_MAX_DIMS];
    if (y->ndim + 1 > PD_MAX_DIMS)
      return pd_ctx_fail_shape(c, "the step output", b->net->vars[s->out_var[i]].name, y,
                               "it has too many dims to stack");
    dims[0] = s->batch, dims[1] = s->time;
    for (int d = 1; d < y->ndim; d++) dims[d + 1] = y->dims[d];
    if ((st = pd_ctx_set_shape(c, pd_out_at(c, OUT, i), y->dtype, y->ndim + 1, dims))) return st;
  }
  if (b->backward) {
    pd_block_seed_shapes(b, bind);
    if ((st = pd_block_infer(b, c, bind, b->net->n_forward, b->net->nops))) return st;
  }
  bool keep = !c->exec || (pd_ctx_training(c) && b->backward);
  size_t total = 0;
  if ((st = lay_out(c, b, s, keep, &total))) return st;
  s->dirty = true;
  int64_t dims[2] = {s->batch < 0 ? -1 : 1, (int64_t)total};
  return pd_ctx_set_shape(c, pd_out(c, STEPS), PD_U8, 2, dims);
}

/* ---- forward ---- */

/* Binds step k (slot `slot`) of the block: its kept values, the previous
 * states (the step before's, or the initial ones). */
static void bind_step(pd_ctx *c, pd_block *b, steps *s, pd_tensor **bind, int64_t k, int slot, int prev_slot) {
  int nv = s->nv;
  pd_block_bind_outer(b, c, OUTER, bind);
  for (int v = 0; v < nv; v++)
    if (b->local[v]) bind[v] = s->fwd[v] || s->keepg[v] ? &s->t[slot * nv + v] : &s->g[v];
  for (int j = 0; j < s->nst; j++) {
    pd_tensor *h0 = pd_in_at(c, H0, j);
    bind[s->prev_var[j]] = k > 0 ? &s->t[prev_slot * nv + s->state_var[j]] : h0 ? h0 : &s->zero[j];
  }
}

static pd_status check_lengths(pd_ctx *c, const int64_t *len, int64_t B, int64_t T) {
#ifdef PD_WITH_CUDA
  if (on_gpu(c)) return len ? pd_gpu_recurrent_check_lengths(c, len, B, T) : PD_OK;
#endif
  for (int64_t r = 0; len && r < B; r++)
    if (len[r] < 0 || len[r] > T) {
      pd_status st =
          pd_ctx_fail(c, PD_ERR_INPUT, "Lengths \"%s\" row %lld is %lld; a length is from 0 to the %lld steps of X",
                      pd_ctx_in_name(c, LENGTHS, 0), (long long)r, (long long)len[r], (long long)T);
      c->err->row = r; /* the trainer names the data file's row */
      return st;
    }
  return PD_OK;
}

/* An error of the step block's ops at time step p: the step said after
 * the op's message (whose row is the batch row, its position the step
 * value's), so a bad value is found in the sequence. */
static pd_status at_step(pd_ctx *c, pd_status st, int64_t p, int64_t T) {
  if (st && c->err) {
    size_t n = strnlen(c->err->msg, sizeof c->err->msg);
    snprintf(c->err->msg + n, sizeof c->err->msg - n, " (at time step %lld of 0..%lld)", (long long)p,
             (long long)(T - 1));
  }
  return st;
}

static pd_status forward(pd_ctx *c) {
  pd_block *b = pd_attr_at(c, A_BLOCK)->blk;
  steps *s = b->rt;
  pd_status st = point(c, b, s, pd_out(c, STEPS));
  bool keep = s->keep;
  if (st) return st;
  pd_tensor *len_t = pd_in(c, LENGTHS);
  const int64_t *len = len_t ? PD_DATA(len_t, int64_t) : NULL;
  int64_t B = s->batch, T = s->time;
  if ((st = check_lengths(c, len, B, T))) return st;
  bool rev = pd_attr_b(c, A_REVERSE);
  pd_tensor **bind = b->bind;
  int nv = s->nv;
  for (int64_t k = 0; k < T; k++) {
    int64_t p = rev ? T - 1 - k : k;
    int slot = keep ? (int)k : (int)(k % 2), prev = keep ? (int)k - 1 : (int)((k + 1) % 2);
    bind_step(c, b, s, bind, k, slot, prev);
    for (int i = 0; i < s->nin && !st; i++) { /* x_t: the rows of X at step p */
      pd_tensor *xt = bind[s->in_var[i]];
      size_t row = pd_row_bytes(xt);
      st = move(c, (pd_rec_rows){.dst = pd_tensor_data(xt),
                                 .dpitch = row,
                                 .width = row,
                                 .rows = B,
                                 .src = (char *)pd_tensor_data(pd_in_at(c, X, i)) + (size_t)p * row,
                                 .spitch = (size_t)T * row,
                                 .dtype = xt->dtype});
    }
    if (st || (st = at_step(c, pd_block_run(b, c, bind, 0, b->net->n_forward, k), p, T))) return st;
    for (int j = 0; j < s->nst && len && !st; j++) { /* rows past their length keep their state */
      pd_tensor *h = bind[s->state_var[j]], *hp = bind[s->prev_var[j]];
      size_t row = pd_row_bytes(h);
      if (pd_tensor_data(h) != pd_tensor_data(hp))
        st = move(c, (pd_rec_rows){.dst = pd_tensor_data(h),
                                   .src = pd_tensor_data(h),
                                   .alt = pd_tensor_data(hp),
                                   .dpitch = row,
                                   .spitch = row,
                                   .apitch = row,
                                   .width = row,
                                   .rows = B,
                                   .len = len,
                                   .p = p,
                                   .dtype = h->dtype});
    }
    for (int i = 0; i < s->nout && !st; i++) { /* zeros past a row's length */
      pd_tensor *y = bind[s->out_var[i]];
      size_t row = pd_row_bytes(y);
      st = move(c, (pd_rec_rows){.dst = (char *)pd_tensor_data(pd_out_at(c, OUT, i)) + (size_t)p * row,
                                 .dpitch = (size_t)T * row,
                                 .src = pd_tensor_data(y),
                                 .spitch = row,
                                 .width = row,
                                 .rows = B,
                                 .len = len,
                                 .p = p,
                                 .dtype = y->dtype});
    }
    if (st) return st;
  }
  for (int j = 0; j < pd_out_count(c, HT) && !st; j++) {
    int last = keep ? (int)T - 1 : (int)((T - 1) % 2);
    const pd_tensor *h = T ? &s->t[last * nv + s->state_var[j]] : pd_in_at(c, H0, j) ? pd_in_at(c, H0, j) : &s->zero[j];
    st = move_all(c, pd_out_at(c, HT, j), pd_tensor_data(h), false);
  }
  return st;
}

/* ---- backward ---- */

/* The block's gradient ops, made once: from the outputs and new states
 * (seeds) to the step inputs with a gradient wanted, the previous states
 * and the outer variables with one. */
static pd_status build_backward(pd_ctx *c, pd_block *b, steps *s) {
  if (b->backward) return PD_OK;
  int nseed = 0, nwant = 0, n = s->nout + s->nst + s->nin + s->nst + b->nouter;
  int *seeds = calloc((size_t)n + 1, sizeof(int)), *wants = calloc((size_t)n + 1, sizeof(int));
  if (!seeds || !wants) {
    free(seeds), free(wants);
    return pd_ctx_fail(c, PD_ERR_RUNTIME, "out of memory");
  }
  for (int i = 0; i < s->nout + s->nst; i++) {
    int v = i < s->nout ? s->out_var[i] : s->state_var[i - s->nout];
    bool dup = false;
    for (int k = 0; k < nseed; k++) dup |= seeds[k] == v;
    if (!dup) seeds[nseed++] = v;
  }
  for (int i = 0; i < s->nin; i++)
    if (pd_ctx_grad_of_in(c, G_X, G_DX, i)) wants[nwant++] = s->in_var[i];
  for (int j = 0; j < s->nst; j++) wants[nwant++] = s->prev_var[j];
  for (int i = 0; i < b->nouter; i++) {
    const pd_arg *a = &c->op->in[G_OUTER];
    for (int k = 0; k < a->n; k++)
      if (a->vars[k] == b->outer_parent[i] && pd_ctx_grad_of_in(c, G_OUTER, G_DOUTER, k)) wants[nwant++] = b->outer[i];
  }
  pd_status st = pd_block_add_backward(b, seeds, nseed, wants, nwant, c->err);
  free(seeds), free(wants);
  if (st || !c->op->kernel) return st; /* chosen with the net's when it is */
  return pd_net_select_kernels(b->net, c->op->kernel->key.place, c->err);
}

static pd_status grad_infer(pd_ctx *c) {
  pd_block *b = pd_attr_at(c, A_BLOCK)->blk;
  steps *s;
  pd_status st = steps_of(c, b, &s);
  if (!st) st = build_backward(c, b, s);
  if (st) return st;
  static const int in_slots[] = {G_X, G_H0, G_OUTER}, out_slots[] = {G_DX, G_DH0, G_DOUTER};
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < pd_in_count(c, in_slots[k]); i++) {
      pd_tensor *x = pd_in_at(c, in_slots[k], i), *dx = pd_ctx_grad_of_in(c, in_slots[k], out_slots[k], i);
      if (dx && (st = pd_ctx_set_shape(c, dx, x->dtype, x->ndim, x->dims))) return st;
    }
  return PD_OK;
}

/* The gradient from outside of seed i at step p: the stacked output's
 * gradient there and the state's carried one, zero on rows past their
 * length. */
static pd_status fill_seed(pd_ctx *c, steps *s, pd_tensor *g, int v, int64_t p, const int64_t *len) {
  int64_t B = s->batch, T = s->time;
  size_t row = pd_row_bytes(g);
  pd_status st = move_all(c, g, NULL, false);
  for (int i = 0; i < s->nout && !st; i++) {
    pd_tensor *dy = s->out_var[i] == v ? pd_ctx_grad_of_out(c, G_OUT_Y, G_DOUT, i) : NULL;
    if (dy)
      st = move(c, (pd_rec_rows){.dst = pd_tensor_data(g),
                                 .dpitch = row,
                                 .src = (const char *)pd_tensor_data(dy) + (size_t)p * row,
                                 .spitch = (size_t)T * row,
                                 .width = row,
                                 .rows = B,
                                 .add = true,
                                 .dtype = g->dtype});
  }
  for (int j = 0; j < s->nst && !st; j++)
    if (s->state_var[j] == v) st = move_all(c, g, pd_tensor_data(&s->carry[j]), true);
  if (len && !st)
    st = move(c, (pd_rec_rows){.dst = pd_tensor_data(g),
                               .src = pd_tensor_data(g),
                               .dpitch = row,
                               .spitch = row,
                               .width = row,
                               .rows = B,
                               .len = len,
                               .p = p,
                               .dtype = g->dtype});
  return st;
}

/* Binds deferred op o's step inputs to their stacks and its outputs to
 * the parameters' gradients (the others it gives are not wanted here). */
static void bind_deferred(pd_block *b, steps *s, pd_tensor **bind, int o) {
  const pd_op *op = &b->net->ops[o];
  for (int sl = 0; sl < op->def->n_inputs; sl++)
    for (int i = 0; i < op->in[sl].n; i++) {
      int v = op->in[sl].vars[i];
      if (v >= 0 && b->local[v]) bind[v] = &s->stk[v];
    }
  for (int sl = 0; sl < op->def->n_outputs; sl++)
    for (int i = 0; i < op->out[sl].n; i++) {
      int v = op->out[sl].vars[i];
      if (v >= 0) bind[v] = s->defer_out[v] ? &s->g[v] : NULL;
    }
}

/* Whether no deferred op writes a variable another reads (then all can be
 * bound at once and run together: side by side on several threads, each
 * one product over all the steps' rows). */
static bool deferred_apart(pd_block *b, steps *s) {
  for (int o = b->net->n_forward; o < b->net->nops; o++) {
    if (!s->defer[o]) continue;
    const pd_op *op = &b->net->ops[o];
    for (int sl = 0; sl < op->def->n_outputs; sl++)
      for (int i = 0; i < op->out[sl].n; i++)
        for (int q = b->net->n_forward; q < b->net->nops && op->out[sl].vars[i] >= 0; q++) {
          const pd_op *r = &b->net->ops[q];
          for (int rs = 0; s->defer[q] && rs < r->def->n_inputs; rs++)
            for (int k = 0; k < r->in[rs].n; k++)
              if (r->in[rs].vars[k] == op->out[sl].vars[i]) return false;
        }
  }
  return true;
}

/* The deferred gradient ops (see the top), once over every step's rows
 * stacked, then the parameters' gradients they give added to the outer
 * ones. */
static pd_status run_deferred(pd_ctx *c, pd_block *b, steps *s) {
  pd_tensor **bind = b->bind;
  pd_status st = PD_OK;
  pd_block_bind_outer(b, c, G_OUTER, bind);
  if (deferred_apart(b, s)) {
    for (int o = b->net->n_forward; o < b->net->nops; o++)
      if (s->defer[o]) bind_deferred(b, s, bind, o);
    st = pd_block_run_only(b, c, bind, b->net->n_forward, b->net->nops, s->defer, s->time);
  } else
    for (int o = b->net->n_forward; o < b->net->nops && !st; o++) {
      if (!s->defer[o]) continue;
      bind_deferred(b, s, bind, o);
      st = pd_block_run(b, c, bind, o, o + 1, s->time);
    }
  for (int i = 0; i < b->nouter && !st; i++) {
    int g = pd_block_want_grad(b, b->outer[i]);
    if (g < 0 || !s->defer_out[g]) continue;
    pd_tensor *dst = pd_block_outer_grad(b, c, G_OUTER, G_DOUTER, i);
    if (dst) st = move_all(c, dst, pd_tensor_data(&s->g[g]), true);
  }
  return st;
}

static pd_status backward(pd_ctx *c) {
  pd_block *b = pd_attr_at(c, A_BLOCK)->blk;
  steps *s = b->rt;
  if (!s->keep)
    return pd_ctx_fail(c, PD_ERR_RUNTIME, "internal error: the steps of block \"%s\" were not kept for the gradient",
                       b->name);
  pd_status st = point(c, b, s, pd_in(c, G_STEPS));
  if (st) return st;
  pd_tensor *len_t = pd_in(c, G_LENGTHS);
  const int64_t *len = len_t ? PD_DATA(len_t, int64_t) : NULL;
  int64_t B = s->batch, T = s->time;
  bool rev = pd_attr_b(c, A_REVERSE);
  pd_tensor **bind = b->bind;
  for (int j = 0; j < s->nst && !st; j++) {
    pd_tensor *dht = pd_ctx_grad_of_out(c, G_HT_Y, G_DHT, j);
    st = move_all(c, &s->carry[j], dht ? pd_tensor_data(dht) : NULL, false);
  }
  for (int j = 0; j < pd_out_count(c, G_DOUTER) && !st; j++)
    if (pd_out_at(c, G_DOUTER, j)) st = move_all(c, pd_out_at(c, G_DOUTER, j), NULL, false);
  for (int64_t k = T - 1; k >= 0 && !st; k--) {
    int64_t p = rev ? T - 1 - k : k;
    bind_step(c, b, s, bind, k, (int)k, (int)k - 1);
    for (int v = 0; v < s->nv; v++)
      if (s->defer_out[v]) bind[v] = NULL; /* given after the loop */
    for (int i = 0; i < b->nseed && !st; i++) st = fill_seed(c, s, bind[b->seed_grad[i]], b->seed[i], p, len);
    if (st || (st = at_step(c, pd_block_run(b, c, bind, b->net->n_forward, b->net->nops, k), p, T))) return st;
    for (int i = 0; i < s->nin && !st; i++) { /* dX at step p: zeros past a row's length */
      pd_tensor *dx = pd_ctx_grad_of_in(c, G_X, G_DX, i);
      if (!dx) continue;
      int g = pd_block_want_grad(b, s->in_var[i]);
      size_t row = pd_row_bytes(bind[s->in_var[i]]);
      st = move(c, (pd_rec_rows){.dst = (char *)pd_tensor_data(dx) + (size_t)p * row,
                                 .dpitch = (size_t)T * row,
                                 .src = g < 0 ? NULL : pd_tensor_data(bind[g]),
                                 .spitch = row,
                                 .width = row,
                                 .rows = B,
                                 .len = len,
                                 .p = p,
                                 .dtype = dx->dtype});
    }
    for (int j = 0; j < s->nst && !st; j++) { /* rows past their length pass the carry through unchanged */
      int g = pd_block_want_grad(b, s->prev_var[j]);
      pd_tensor *cj = &s->carry[j];
      size_t row = pd_row_bytes(cj);
      st = move(c, (pd_rec_rows){.dst = pd_tensor_data(cj),
                                 .src = g < 0 ? NULL : pd_tensor_data(bind[g]),
                                 .alt = pd_tensor_data(cj),
                                 .dpitch = row,
                                 .spitch = row,
                                 .apitch = row,
                                 .width = row,
                                 .rows = B,
                                 .len = len,
                                 .p = p,
                                 .dtype = cj->dtype});
    }
    for (int i = 0; i < b->nouter && !st; i++) {
      int g = pd_block_want_grad(b, b->outer[i]);
      if (g < 0 || s->defer_out[g]) continue;
      const pd_arg *a = &c->op->in[G_OUTER];
      for (int q = 0; q < a->n && !st; q++)
        if (a->vars[q] == b->outer_parent[i]) {
          pd_tensor *dst = pd_ctx_grad_of_in(c, G_OUTER, G_DOUTER, q);
          if (dst) st = move_all(c, dst, pd_tensor_data(bind[g]), true);
        }
    }
  }
  if (!st && T > 0) st = run_deferred(c, b, s);
  for (int j = 0; j < s->nst && !st; j++) {
    pd_tensor *dh0 = pd_ctx_grad_of_in(c, G_H0, G_DH0, j);
    if (dh0) st = move_all(c, dh0, pd_tensor_data(&s->carry[j]), false);
  }
  return st;
}

/* ---- FLOPs: the step block's, once per step ---- */

static double flops_of(pd_ctx *c, int begin_fwd) {
  pd_block *b = pd_attr_at(c, A_BLOCK)->blk;
  steps *s = b->rt;
  if (!s) return 0;
  for (int v = 0; v < b->net->nvars; v++) b->bind[v] = &b->shapes[v];
  pd_block_bind_outer(b, c, OUTER, b->bind);
  double per = begin_fwd ? pd_block_flops(b, b->bind, 0, b->net->n_forward)
                         : pd_block_flops(b, b->bind, b->net->n_forward, b->net->nops);
  return per * (double)(s->time > 0 ? s->time : 0);
}
static double flops(pd_ctx *c) { return flops_of(c, 1); }
static double grad_flops(pd_ctx *c) { return flops_of(c, 0); }

/* The GPU's kernels are these too: the step block's ops run with their GPU
 * kernels on the step values in device memory, and the moves of rows run
 * on the device (recurrent.cu), reading nothing back to the host. */
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

/* The first float sequence or initial state: a step block over integer
 * steps (an imported ONNX Loop's iteration numbers) still carries floats. */
static pd_dtype key_dtype(pd_ctx *c) {
  for (int s = X; s <= H0; s++) /* X, then H0 */
    for (int i = 0; i < pd_in_count(c, s); i++)
      if (pd_in_at(c, s, i) && pd_dtype_is_float(pd_in_at(c, s, i)->dtype)) return pd_in_at(c, s, i)->dtype;
  return pd_in_at(c, X, 0) ? pd_in_at(c, X, 0)->dtype : PD_F32;
}

const pd_op_def pd_op_recurrent = {
    .type = "recurrent",
    .comment = "Runs a step block over sequences [batch, time, ...]: per-step inputs, states carried from step to "
               "step (prev_states -> states), outputs stacked; optional per-row lengths and reverse direction. "
               "Gradients through time.",
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
    .input_counts = input_counts,
    .output_counts = output_counts,
};
