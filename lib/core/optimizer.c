/* optimizer.c — AddOptimizerOps: one update op per (parameter, gradient),
 * optionally after clipping all gradients by their global norm. The learning
 * rate and the step count are variables ("@lr", "@step") the training loop
 * sets each step from the schedule, so a schedule needs no special op.
 * Training on several ranks (net->ranks > 1), an allreduce op first takes
 * every gradient to its mean over the ranks, in one fused buffer. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/optimizer.h"

#include "core/backward.h"
#include "base/util.h"

static pd_status set_attr(const pd_op_def *d, pd_attr *attrs, const char *name, double f, bool b, pd_error *err) {
  for (int a = 0; a < d->n_attrs; a++) {
    if (strcmp(d->attrs[a].name, name) != 0) continue;
    if (d->attrs[a].type == PD_ATTR_BOOL)
      attrs[a].b = b;
    else
      attrs[a].f = f;
    return pd_attr_check_range(&d->attrs[a], &attrs[a], err);
  }
  return pd_errorf(err, PD_ERR_RUNTIME, "internal error: op %s has no attribute %s", d->type, name);
}

static int state_var(pd_net *net, int p, const char *suffix) {
  size_t n = strlen(net->vars[p].name) + strlen(suffix) + 2;
  char *name = malloc(n);
  if (!name) return -1;
  snprintf(name, n, "%s@%s", net->vars[p].name, suffix);
  int v = pd_net_add_var(net, name, PD_VAR_STATE, net->vars[p].meta.dtype);
  free(name);
  if (v >= 0) {
    net->vars[v].kind = PD_VAR_STATE;
    net->vars[v].optimizer_state = true;
    net->vars[v].meta = net->vars[p].meta;
    net->vars[v].meta.storage = NULL;
  }
  return v;
}

/* One op over all gradients in place: X = Out = the gradients. */
static pd_status add_allreduce(pd_net *net, const int *grads, int n, pd_error *err) {
  const char **names = malloc(sizeof *names * (size_t)n);
  if (!names) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int i = 0; i < n; i++) names[i] = net->vars[grads[i]].name;
  pd_status st = pd_net_add_op(net, pd_op_find("allreduce"), names, &n, names, &n, NULL, -1, err);
  free(names);
  return st;
}

/* The learning rate and step count the updates read, @lr and @step: one
 * number each, optimizer state. */
static pd_status add_step_vars(pd_net *net, pd_error *err) {
  int lr = pd_net_add_var(net, "@lr", PD_VAR_STATE, PD_F64);
  int step = pd_net_add_var(net, "@step", PD_VAR_STATE, PD_F64);
  if (lr < 0 || step < 0) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int i = 0; i < 2; i++) {
    pd_var_info *vi = &net->vars[i ? step : lr];
    vi->kind = PD_VAR_STATE;
    vi->optimizer_state = true;
    vi->meta.ndim = 1;
    vi->meta.dims[0] = 1;
  }
  return PD_OK;
}

/* clip_by_global_norm over all n gradients, in place. */
static pd_status add_clip(pd_net *net, const int *grads, int n, double clip_norm, pd_error *err) {
  const pd_op_def *clip = pd_op_find("clip_by_global_norm");
  const char **names = malloc(sizeof *names * (size_t)n);
  pd_attr attrs[PD_MAX_ATTRS] = {{0}};
  pd_status st = PD_OK;
  if (!names) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int i = 0; i < n && !st; i++) names[i] = net->vars[grads[i]].name;
  attrs[0].type = PD_ATTR_FLOAT;
  attrs[0].f = clip_norm;
  if (!st) st = pd_net_add_op(net, clip, names, &n, names, &n, attrs, -1, err);
  free(names);
  return st;
}

/* The row list g@ROWS of a row-sparse gradient g (backward.c), -1 if g is dense. */
static int grad_rows(const pd_net *net, int g) {
  char *name = pd_strf("%s@ROWS", net->vars[g].name);
  int v = name ? pd_net_var(net, name) : -1;
  free(name);
  return v >= 0 && net->vars[v].producer >= 0 ? v : -1;
}

/* The update op `d` (sgd, momentum or adam) of parameter p from gradient g,
 * with the state variables it keeps, wired by its slots: Param and Grad, the
 * step's LearningRate (@lr) and Step (@step), Rows as g's row list when g
 * is row-sparse, and a state input S (Velocity, Moment1, ...) as the
 * variable p@S in upper case, updated in place through output SOut. The
 * optimizer's settings go to the attributes of their name the op has; the
 * parameter's own multipliers scale its lr (lr_mult) and weight decay. */
static pd_status add_update(pd_net *net, const pd_op_def *d, const Paddle__OptimizerDesc *opt, int p, int g,
                            pd_error *err) {
  pd_status st = PD_OK;
  pd_attr attrs[PD_MAX_ATTRS];
  for (int a = 0; a < d->n_attrs && !st; a++) st = pd_attr_parse_default(&d->attrs[a], &attrs[a], err);
  const struct {
    const char *name;
    double f;
    bool b;
  } set[] = {{"weight_decay", opt->weight_decay * net->vars[p].decay_mult, false},
             {"lr_mult", net->vars[p].lr_mult, false},
             {"mu", opt->momentum, false},
             {"use_nesterov", 0, opt->nesterov},
             {"beta1", opt->beta1, false},
             {"beta2", opt->beta2, false},
             {"epsilon", opt->epsilon, false}};
  for (size_t i = 0; i < sizeof set / sizeof *set && !st; i++)
    for (int a = 0; a < d->n_attrs; a++)
      if (!strcmp(d->attrs[a].name, set[i].name)) st = set_attr(d, attrs, set[i].name, set[i].f, set[i].b, err);
  if (st) return st;
  int in[PD_MAX_SLOTS], out[PD_MAX_SLOTS], rows = grad_rows(net, g);
  for (int s = 0; s < d->n_inputs; s++) {
    const char *sn = d->inputs[s].name;
    if (!strcmp(sn, "Rows")) {
      in[s] = rows;
      continue;
    }
    if (!strcmp(sn, "Param"))
      in[s] = p;
    else if (!strcmp(sn, "Grad"))
      in[s] = g;
    else if (!strcmp(sn, "LearningRate"))
      in[s] = pd_net_var(net, "@lr");
    else if (!strcmp(sn, "Step"))
      in[s] = pd_net_var(net, "@step");
    else {
      char suffix[64];
      size_t k = 0;
      for (; sn[k] && k + 1 < sizeof suffix; k++) suffix[k] = (char)toupper((unsigned char)sn[k]);
      suffix[k] = 0;
      in[s] = state_var(net, p, suffix);
    }
    if (in[s] < 0) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  if (rows >= 0) {
    bool takes = false;
    for (int s = 0; s < d->n_inputs; s++) takes |= !strcmp(d->inputs[s].name, "Rows");
    if (!takes)
      return pd_errorf(err, PD_ERR_INPUT, "%s: the gradient \"%s\" is row-sparse and %s takes no Rows input", net->file,
                       net->vars[g].name, d->type);
  }
  for (int o = 0; o < d->n_outputs; o++) { /* SOut: the variable of input S */
    out[o] = -1;
    size_t n = strlen(d->outputs[o].name);
    for (int s = 0; s < d->n_inputs; s++)
      if (n == strlen(d->inputs[s].name) + 3 && !strncmp(d->outputs[o].name, d->inputs[s].name, n - 3) &&
          !strcmp(d->outputs[o].name + n - 3, "Out"))
        out[o] = in[s];
    if (out[o] < 0)
      return pd_errorf(err, PD_ERR_RUNTIME, "internal error: op %s output %s updates no input", d->type,
                       d->outputs[o].name);
  }
  const char *ins[PD_MAX_SLOTS], *outs[PD_MAX_SLOTS]; /* names once all are added: add_var may move net->vars */
  for (int s = 0; s < d->n_inputs; s++) ins[s] = in[s] >= 0 ? net->vars[in[s]].name : "";
  for (int o = 0; o < d->n_outputs; o++) outs[o] = net->vars[out[o]].name;
  return pd_net_add_op(net, d, ins, NULL, outs, NULL, attrs, -1, err);
}

pd_status pd_net_add_optimizer(pd_net *net, const Paddle__OptimizerDesc *opt, pd_error *err) {
  if (net->loss < 0) return pd_errorf(err, PD_ERR_INPUT, "add the backward ops before the optimizer");
  const char *type = opt->type ? opt->type : "sgd";
  /* a name the user gave: it must be an update op's */
  const pd_op_def *d = pd_op_find(type);
  if (!d || !(d->flags & PD_OP_UPDATE)) {
    static const char *const names[] = {"sgd", "momentum", "adam"};
    const char *sug = pd_suggest(type, names, 3);
    return pd_errorf(err, PD_ERR_INPUT, "unknown optimizer \"%s\"%s%s%s; use sgd, momentum or adam", type,
                     sug ? " (did you mean \"" : "", sug ? sug : "", sug ? "\"?)" : "");
  }
  /* every parameter, however many: at most one per variable */
  size_t cap = (size_t)net->nvars + 1;
  int *params = malloc(sizeof(int) * cap), *grads = malloc(sizeof(int) * cap);
  if (!params || !grads) {
    free(params), free(grads);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  int n = pd_net_param_grads(net, params, grads, net->nvars), kept = 0;
  /* a frozen parameter: no update, no state, and out of the clipping norm
   * (a net printed with its backward ops may still hold its gradient) */
  for (int i = 0; i < n; i++)
    if (!net->vars[params[i]].frozen) params[kept] = params[i], grads[kept] = grads[i], kept++;
  n = kept;
  pd_status st = PD_OK;
  if (n == 0)
    st = pd_errorf(err, PD_ERR_INPUT, "%s: no parameter gets a gradient from the loss; nothing to train", net->file);
  int before = net->nops;
  if (!st) st = add_step_vars(net, err);
  for (int i = 0; i < n && !st && (net->ranks > 1 || net->nccl); i++)
    if (grad_rows(net, grads[i]) >= 0)
      st = pd_errorf(err, PD_ERR_INPUT,
                     "%s: the gradient \"%s\" is row-sparse, which the allreduce of data-parallel training cannot "
                     "average; give the net without its backward ops (they are then made dense)",
                     net->file, net->vars[grads[i]].name);
  if (!st && (net->ranks > 1 || net->nccl)) st = add_allreduce(net, grads, n, err);
  if (!st && opt->clip_norm > 0) st = add_clip(net, grads, n, opt->clip_norm, err);
  for (int i = 0; i < n && !st; i++) st = add_update(net, d, opt, params[i], grads[i], err);
  free(params), free(grads);
  if (st) {
    pd_error_prefix(err, "optimizer %s", type);
    return st;
  }
  net->n_optimizer = net->nops - before;
  return pd_net_infer_shapes(net, err);
}

pd_status pd_net_make_trainable(pd_net *net, const char *loss, const Paddle__OptimizerDesc *opt, pd_error *err) {
  pd_status st = pd_net_find_training(net, loss, err);
  /* row-sparse gradients only where an update op reads them, and never
   * under the allreduce, which averages dense tensors */
  bool rows = opt && net->ranks <= 1 && !net->nccl;
  if (!st && net->loss < 0) st = rows ? pd_net_add_backward_rows(net, loss, err) : pd_net_add_backward(net, loss, err);
  if (!st && opt && !net->n_optimizer) st = pd_net_add_optimizer(net, opt, err);
  bool reduced = false;
  for (int o = net->nops - net->n_optimizer; o < net->nops; o++)
    reduced |= (net->ops[o].def->flags & PD_OP_COLLECTIVE) != 0;
  if (!st && net->ranks > 1 && net->n_optimizer && !reduced)
    st = pd_errorf(err, PD_ERR_INPUT,
                   "%s: the net holds update ops but no allreduce op, so %d ranks would train apart; give it "
                   "without its optimizer ops or print it with `paddle-run desc --optimizer NAME --ranks N`",
                   net->file, net->ranks);
  return st;
}
