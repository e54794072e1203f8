/* backward.c — AddBackwardOps (seeds 001/004): appends, in reverse order,
 * the grad op of every forward op through which a gradient flows from the
 * loss to a parameter. The gradient of x is x@GRAD; a variable read by
 * several ops gets the sum of their partial gradients (x@GRAD@RENAME@k, then
 * a `sum` op), never the last one written. Data, integer tensors, no-grad
 * variables and slots, and ops that do not lead to the loss get none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backward.h"
#include "base/util.h"

typedef struct bw {
  pd_net *net;
  int nf;           /* forward ops */
  bool *leads;      /* per op: some output reaches the loss */
  bool *needs;      /* per var: wants a gradient (forward propagation) */
  bool *has_grad;   /* per var: some emitted grad op produced a (partial) gradient */
  bool *emit;       /* per op */
  int *contrib;     /* per var: partial gradients it will receive */
  int *seen;        /* per var: partial gradients emitted so far */
  const int *wants; /* when set: the variables that want a gradient (else the trainable parameters) */
  int nwants;
  bool rows; /* row-sparse gradients wanted where an op offers one (PD_SLOT_ROWS_GRAD) */
} bw;

/* The per-op and per-variable tables of a pass over net; false when out of
 * memory (bw_free frees what was made). */
static bool bw_alloc(bw *b, pd_net *net) {
  size_t nv = (size_t)net->nvars + 1, no = (size_t)net->nops + 1;
  b->net = net, b->nf = net->n_forward;
  b->leads = calloc(no, 1), b->emit = calloc(no, 1);
  b->needs = calloc(nv, 1), b->has_grad = calloc(nv, 1);
  b->contrib = calloc(nv, sizeof(int)), b->seen = calloc(nv, sizeof(int));
  return b->leads && b->emit && b->needs && b->has_grad && b->contrib && b->seen;
}

static void bw_free(bw *b) {
  free(b->leads), free(b->emit), free(b->needs), free(b->has_grad), free(b->contrib), free(b->seen);
}

static bool slot_grad(const pd_op *op, int s) { return !(op->def->inputs[s].flags & PD_SLOT_NO_GRAD); }

/* Whether op reads v through a slot that gets a gradient. */
static bool op_reads_for_grad(const pd_op *op, int v) {
  for (int s = 0; s < op->def->n_inputs; s++)
    for (int i = 0; i < op->in[s].n; i++)
      if (op->in[s].vars[i] == v && slot_grad(op, s)) return true;
  return false;
}

/* A name of any length: two long names never meet in one gradient. */
static char *grad_name(const pd_net *net, int v) { return pd_strf("%s@GRAD", net->vars[v].name); }

/* The loss, checked: a variable of the net, computed by an op, one float. */
static pd_status find_loss(const pd_net *net, const char *loss, int *out, pd_error *err) {
  if (net->loss >= 0) return pd_errorf(err, PD_ERR_INPUT, "the net already has backward ops");
  int L = pd_net_var(net, loss);
  if (L < 0) return pd_errorf(err, PD_ERR_INPUT, "%s: the loss \"%s\" is not a variable of the net", net->file, loss);
  const pd_var_info *li = &net->vars[L];
  char d[128];
  if (li->producer < 0)
    return pd_errorf(err, PD_ERR_INPUT, "%s: the loss \"%s\" is not computed by any op", net->file, loss);
  if (!pd_dtype_is_float(li->meta.dtype) || pd_tensor_numel(&li->meta) != 1)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: the loss \"%s\" must be one float number (e.g. the output of `mean`); it is %s %s", net->file,
                     loss, pd_dtype_name(li->meta.dtype), pd_dims_str(li->meta.ndim, li->meta.dims, d, sizeof d));
  *out = L;
  return PD_OK;
}

/* Variables that want a gradient: trainable params (not frozen ones: a
 * gradient still flows through their ops to earlier layers when those
 * want one), and what they feed. */
static void mark_needs(bw *b) {
  const pd_net *net = b->net;
  for (int v = 0; v < net->nvars && !b->wants; v++) {
    const pd_var_info *vi = &net->vars[v];
    b->needs[v] = vi->kind == PD_VAR_PARAM && !vi->no_grad && !vi->frozen && pd_dtype_is_float(vi->meta.dtype);
  }
  for (int i = 0; i < b->nwants; i++) {
    const pd_var_info *vi = &net->vars[b->wants[i]];
    b->needs[b->wants[i]] = !vi->no_grad && pd_dtype_is_float(vi->meta.dtype);
  }
  for (int o = 0; o < b->nf; o++) {
    const pd_op *op = &net->ops[o];
    bool any = false;
    for (int s = 0; s < op->def->n_inputs; s++)
      for (int i = 0; i < op->in[s].n; i++) any |= slot_grad(op, s) && b->needs[op->in[s].vars[i]];
    if (!any || !pd_op_grad_def(op->def)) continue;
    for (int s = 0; s < op->def->n_outputs; s++)
      for (int i = 0; i < op->out[s].n; i++) {
        const pd_var_info *vi = &net->vars[op->out[s].vars[i]];
        if (!vi->no_grad && pd_dtype_is_float(vi->meta.dtype)) b->needs[op->out[s].vars[i]] = true;
      }
  }
}

/* Op o, which a gradient must flow through: it needs a grad op, and no
 * output that is also its input. x -> x: the gradients of x before and
 * after the op would be one variable, x@GRAD (state updated in place, a
 * running mean, has none). */
static pd_status check_differentiable(const bw *b, int o, const char *loss, pd_error *err) {
  const pd_net *net = b->net;
  const pd_op *op = &net->ops[o];
  char l[160];
  if (!pd_op_grad_def(op->def))
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s has no gradient, but the loss \"%s\" depends on it and on parameters "
                     "before it; mark its inputs no_gradient or remove it from the loss path",
                     pd_net_op_label(net, o, l, sizeof l), loss);
  for (int s = 0; s < op->def->n_outputs; s++)
    for (int i = 0; i < op->out[s].n; i++)
      if (op_reads_for_grad(op, op->out[s].vars[i])) {
        const char *x = net->vars[op->out[s].vars[i]].name;
        return pd_errorf(err, PD_ERR_INPUT,
                         "%s writes its input \"%s\" in place; training through it needs \"%s\" before and after "
                         "the op apart (each has its own gradient): give the output a new name",
                         pd_net_op_label(net, o, l, sizeof l), x, x);
      }
  return PD_OK;
}

/* Which grad ops run, and how many partial gradients each variable gets:
 * from the loss back, an op whose output has a gradient and whose input
 * wants one. */
static pd_status plan_grad_ops(bw *b, const char *loss, pd_error *err) {
  const pd_net *net = b->net;
  for (int o = b->nf - 1; o >= 0; o--) {
    const pd_op *op = &net->ops[o];
    if (!b->leads[o]) continue;
    bool out_grad = false, in_need = false;
    for (int s = 0; s < op->def->n_outputs; s++)
      for (int i = 0; i < op->out[s].n; i++) out_grad |= b->has_grad[op->out[s].vars[i]];
    for (int s = 0; s < op->def->n_inputs; s++)
      for (int i = 0; i < op->in[s].n; i++) in_need |= slot_grad(op, s) && b->needs[op->in[s].vars[i]];
    if (!out_grad || !in_need) continue;
    pd_status st = check_differentiable(b, o, loss, err);
    if (st) return st;
    b->emit[o] = true;
    for (int s = 0; s < op->def->n_inputs; s++)
      for (int i = 0; i < op->in[s].n; i++) {
        int v = op->in[s].vars[i];
        if (slot_grad(op, s) && b->needs[v]) b->contrib[v]++, b->has_grad[v] = true;
      }
  }
  return PD_OK;
}

/* The seed: d loss / d loss = 1, a fill_constant of the loss's shape. */
static pd_status add_seed(pd_net *net, int L, pd_error *err) {
  const pd_var_info *li = &net->vars[L];
  char *name = grad_name(net, L);
  const pd_op_def *fill = pd_op_find("fill_constant");
  if (!name) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (!fill) {
    free(name);
    return pd_errorf(err, PD_ERR_RUNTIME, "internal error: no fill_constant op");
  }
  pd_status st = PD_OK;
  pd_attr attrs[PD_MAX_ATTRS];
  memset(attrs, 0, sizeof attrs);
  for (int a = 0; a < fill->n_attrs && !st; a++) {
    const pd_attr_def *ad = &fill->attrs[a];
    if (!strcmp(ad->name, "shape")) {
      attrs[a].type = PD_ATTR_INTS;
      attrs[a].n = li->meta.ndim;
      attrs[a].ints = pd_net_keep(net, sizeof(int64_t) * PD_MAX_DIMS);
      if (!attrs[a].ints)
        st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
      else
        memcpy(attrs[a].ints, li->meta.dims, sizeof(int64_t) * (size_t)li->meta.ndim);
    } else if (!strcmp(ad->name, "dtype")) {
      attrs[a].type = PD_ATTR_STRING;
      attrs[a].s = pd_dtype_name(li->meta.dtype);
    } else if (!strcmp(ad->name, "value")) {
      attrs[a].type = PD_ATTR_FLOAT;
      attrs[a].f = 1.0;
    } else
      st = pd_attr_parse_default(ad, &attrs[a], err);
  }
  const char *outs[] = {name};
  if (!st) st = pd_net_add_op(net, fill, NULL, NULL, outs, NULL, attrs, -1, err);
  free(name);
  return st;
}

/* One grad op's argument lists: inputs (the op's inputs, outputs, then the
 * outputs' gradients), outputs (the inputs' gradients, or partial ones to
 * be summed), the names made for them, and the variables whose partial
 * gradients are all made once it has run. */
typedef struct grad_lists {
  const char **ins, **outs;
  char **names;
  int *sums;
  int in_n[PD_MAX_SLOTS], out_n[PD_MAX_SLOTS];
  int k, q, nn, nsums;
} grad_lists;

/* The grad op's inputs: X, Out, Out@GRAD slot by slot ("" for an empty
 * slot or an output with no gradient). */
static pd_status list_grad_inputs(const bw *b, const pd_op *op, grad_lists *g, pd_error *err) {
  const pd_net *net = b->net;
  int ni = op->def->n_inputs, no = op->def->n_outputs;
  pd_status st = PD_OK;
  for (int s = 0; s < ni; s++) {
    g->in_n[s] = op->in[s].n ? op->in[s].n : 1;
    if (!op->in[s].n) g->ins[g->k++] = "";
    for (int i = 0; i < op->in[s].n; i++) g->ins[g->k++] = net->vars[op->in[s].vars[i]].name;
  }
  for (int s = 0; s < no; s++) {
    g->in_n[ni + s] = op->out[s].n ? op->out[s].n : 1;
    if (!op->out[s].n) g->ins[g->k++] = "";
    for (int i = 0; i < op->out[s].n; i++) g->ins[g->k++] = net->vars[op->out[s].vars[i]].name;
  }
  for (int s = 0; s < no && !st; s++) {
    g->in_n[ni + no + s] = op->out[s].n ? op->out[s].n : 1;
    if (!op->out[s].n) g->ins[g->k++] = "";
    for (int i = 0; i < op->out[s].n && !st; i++) {
      int v = op->out[s].vars[i];
      if (b->has_grad[v]) {
        if (!(g->names[g->nn] = grad_name(net, v))) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
        g->ins[g->k++] = g->names[g->nn++];
      } else
        g->ins[g->k++] = "";
    }
  }
  return st;
}

/* The grad op's outputs: X@GRAD where the op is x's only contributor,
 * else x@GRAD@RENAME@k, the k-th of the partial gradients summed later.
 * Then, per PD_SLOT_ROWS_GRAD input, the row list x@GRAD@ROWS that makes
 * x@GRAD row-sparse: only where the op is x's only contributor (partial
 * gradients are summed densely) and the pass wants it; else "" (dense). */
static pd_status list_grad_outputs(bw *b, const pd_op *op, grad_lists *g, pd_error *err) {
  const pd_net *net = b->net;
  pd_status st = PD_OK;
  for (int s = 0; s < op->def->n_inputs && !st; s++) {
    g->out_n[s] = op->in[s].n ? op->in[s].n : 1;
    if (!op->in[s].n) g->outs[g->q++] = "";
    for (int i = 0; i < op->in[s].n && !st; i++) {
      int v = op->in[s].vars[i];
      if (!slot_grad(op, s) || !b->needs[v]) {
        g->outs[g->q++] = "";
        continue;
      }
      if (b->contrib[v] == 1)
        g->names[g->nn] = grad_name(net, v);
      else {
        g->names[g->nn] = pd_strf("%s@GRAD@RENAME@%d", net->vars[v].name, b->seen[v]);
        if (++b->seen[v] == b->contrib[v]) g->sums[g->nsums++] = v;
      }
      if (!g->names[g->nn]) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
      g->outs[g->q++] = g->names[g->nn++];
    }
  }
  int k = op->def->n_inputs;
  for (int s = 0; s < op->def->n_inputs && !st; s++) {
    if (!(op->def->inputs[s].flags & PD_SLOT_ROWS_GRAD)) continue;
    int v = op->in[s].n == 1 ? op->in[s].vars[0] : -1;
    g->out_n[k++] = 1;
    if (!b->rows || v < 0 || !slot_grad(op, s) || !b->needs[v] || b->contrib[v] != 1) {
      g->outs[g->q++] = "";
      continue;
    }
    if (!(g->names[g->nn] = pd_strf("%s@GRAD@ROWS", net->vars[v].name)))
      st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    g->outs[g->q++] = g->names[g->nn++];
  }
  return st;
}

/* A `sum` op for each variable whose partial gradients are all made. */
static pd_status add_grad_sums(bw *b, const grad_lists *g, pd_error *err) {
  pd_net *net = b->net;
  pd_status st = PD_OK;
  for (int j = 0; j < g->nsums && !st; j++) {
    int v = g->sums[j], c = b->contrib[v];
    const char **parts = calloc((size_t)c, sizeof *parts);
    char **pn = calloc((size_t)c, sizeof *pn), *total = grad_name(net, v);
    if (!parts || !pn || !total) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    for (int i = 0; i < c && !st; i++)
      if (!(parts[i] = pn[i] = pd_strf("%s@GRAD@RENAME@%d", net->vars[v].name, i)))
        st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    const char *outs1[] = {total};
    if (!st) st = pd_net_add_op(net, pd_op_find("sum"), parts, &c, outs1, NULL, NULL, -1, err);
    for (int i = 0; pn && i < c; i++) free(pn[i]);
    free(parts), free(pn), free(total);
  }
  return st;
}

/* Forward op o's grad op, then the sums it completes; every list sized by
 * the op (a concat of any number of inputs). */
static pd_status add_grad_op(bw *b, int o, pd_error *err) {
  pd_net *net = b->net;
  const pd_op *op = &net->ops[o];
  const pd_op_def *gdef = pd_op_grad_def(op->def);
  size_t nin = 0, nout = 0;
  for (int s = 0; s < op->def->n_inputs; s++) nin += op->in[s].n ? (size_t)op->in[s].n : 1;
  for (int s = 0; s < op->def->n_outputs; s++) nout += op->out[s].n ? (size_t)op->out[s].n : 1;
  size_t nrows = 0; /* row lists of row-sparse gradients */
  for (int s = 0; s < op->def->n_inputs; s++) nrows += (op->def->inputs[s].flags & PD_SLOT_ROWS_GRAD) != 0;
  size_t cap = nin + nrows + 2 * nout; /* the names the op makes: at most one per entry */
  grad_lists g = {.ins = calloc(cap, sizeof *g.ins), .outs = calloc(nin + nrows, sizeof *g.outs)};
  g.names = calloc(cap, sizeof *g.names);
  g.sums = calloc(nin, sizeof *g.sums);
  if (!g.ins || !g.outs || !g.names || !g.sums) {
    free(g.ins), free(g.outs), free(g.names), free(g.sums);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  pd_status st = list_grad_inputs(b, op, &g, err);
  if (!st) st = list_grad_outputs(b, op, &g, err);
  /* add_op may move net->ops: take what we need from op first */
  pd_attr attrs[PD_MAX_ATTRS];
  memcpy(attrs, op->attrs, sizeof attrs);
  int line = op->line, col = op->col;
  op = NULL;
  if (!st) {
    st = pd_net_add_op(net, gdef, g.ins, g.in_n, g.outs, g.out_n, attrs, o, err);
    net->ops[net->nops - 1].line = line;
    net->ops[net->nops - 1].col = col;
  }
  if (!st) st = add_grad_sums(b, &g, err);
  for (int i = 0; i < g.nn; i++) free(g.names[i]);
  free(g.ins), free(g.outs), free(g.names), free(g.sums);
  return st;
}

static pd_status add_backward(pd_net *net, const char *loss, bool rows, pd_error *err) {
  int L;
  pd_status st = find_loss(net, loss, &L, err);
  if (st) return st;
  bw b = {.rows = rows};
  if (!bw_alloc(&b, net)) {
    st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    goto done;
  }
  /* ops leading to the loss: reverse reachability */
  pd_net_prune(net, &L, 1, b.leads);
  mark_needs(&b);
  b.has_grad[L] = true;
  st = plan_grad_ops(&b, loss, err);
  if (!st) st = add_seed(net, L, err);
  /* the grad ops, in reverse order */
  for (int o = b.nf - 1; o >= 0 && !st; o--)
    if (b.emit[o]) st = add_grad_op(&b, o, err);
  if (!st) {
    net->n_backward = net->nops - net->n_forward;
    net->loss = L;
    st = pd_net_infer_shapes(net, err);
  }
done:
  bw_free(&b);
  return st;
}

pd_status pd_net_add_backward(pd_net *net, const char *loss, pd_error *err) {
  return add_backward(net, loss, false, err);
}

pd_status pd_net_add_backward_rows(pd_net *net, const char *loss, pd_error *err) {
  return add_backward(net, loss, true, err);
}

pd_status pd_net_add_backward_from(pd_net *net, const int *seeds, int nseeds, int *seed_grad, const int *wants,
                                   int nwants, int *want_grad, pd_error *err) {
  bw b = {.wants = wants, .nwants = nwants};
  pd_status st = PD_OK;
  if (!bw_alloc(&b, net)) {
    st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    goto done;
  }
  pd_net_prune(net, seeds, nseeds, b.leads);
  mark_needs(&b);
  /* a seed's gradient from outside is its first partial gradient */
  for (int i = 0; i < nseeds; i++) {
    b.has_grad[seeds[i]] = true;
    b.contrib[seeds[i]] = b.seen[seeds[i]] = 1;
  }
  st = plan_grad_ops(&b, nseeds ? net->vars[seeds[0]].name : "", err);
  for (int i = 0; i < nseeds && !st; i++) {
    int v = seeds[i];
    char *name = b.contrib[v] == 1 ? grad_name(net, v) : pd_strf("%s@GRAD@RENAME@0", net->vars[v].name);
    int g = name ? pd_net_add_var(net, name, PD_VAR_TEMP, net->vars[v].meta.dtype) : -1;
    free(name);
    if (g < 0) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    seed_grad[i] = g;
  }
  for (int o = b.nf - 1; o >= 0 && !st; o--)
    if (b.emit[o]) st = add_grad_op(&b, o, err);
  for (int i = 0; i < nwants && !st; i++) {
    char *name = grad_name(net, wants[i]);
    int g = name ? pd_net_var(net, name) : -1;
    free(name);
    bool made = g >= 0 && net->vars[g].producer >= 0;
    for (int k = 0; k < nseeds && !made; k++) made = seed_grad[k] == g;
    want_grad[i] = made ? g : -1;
  }
  if (!st) net->n_backward = net->nops - net->n_forward;
done:
  bw_free(&b);
  return st;
}

int pd_net_param_grads(const pd_net *net, int *params, int *grads, int max) {
  int n = 0;
  for (int v = 0; v < net->nvars && n < max; v++) {
    if (net->vars[v].kind != PD_VAR_PARAM) continue;
    char *name = grad_name(net, v);
    int g = name ? pd_net_var(net, name) : -1;
    free(name);
    if (g < 0 || net->vars[g].producer < 0) continue;
    params[n] = v;
    grads[n] = g;
    n++;
  }
  return n;
}

pd_status pd_net_find_training(pd_net *net, const char *loss, pd_error *err) {
  int L = pd_net_var(net, loss);
  if (L < 0) return pd_errorf(err, PD_ERR_INPUT, "%s: the loss \"%s\" is not a variable of the net", net->file, loss);
  char *name = grad_name(net, L);
  if (!name) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  int g = pd_net_var(net, name);
  free(name);
  if (g < 0 || net->vars[g].producer < 0) return PD_OK; /* a forward net */
  int first = net->vars[g].producer, opt = net->nops;
  for (int o = first; o < net->nops; o++) {
    if (net->ops[o].def->flags & PD_OP_OPTIMIZER_SECTION) {
      opt = o;
      break;
    }
  }
  net->n_forward = first;
  net->n_backward = opt - first;
  net->n_optimizer = net->nops - opt;
  net->loss = L;
  return PD_OK;
}
