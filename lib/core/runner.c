/* runner.c — a net bound to a Scope and run on a place. The CPU's runner is
 * here (its hooks below run the kernels on the scope's tensors, with the
 * memory plan); any other place runs through the hooks its layer registered
 * (place.h), so nothing here knows of a GPU. */
#include "core/runner.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/memplan.h"
#include "cpu/blisarch.h"
#include "cpu/parallel.h"

static const pd_place_runner cpu_runner;

pd_status pd_runner_init(pd_runner *r, pd_net *net, pd_scope *scope, const bool *active, pd_error *err) {
  memset(r, 0, sizeof *r);
  r->net = net;
  r->scope = scope;
  r->exec.threads = pd_get_threads();
  r->hooks = &cpu_runner;
  r->t = calloc((size_t)net->nvars + 1, sizeof *r->t);
  r->vars = r->t;
  r->active = calloc((size_t)net->nops + 1, sizeof *r->active);
  r->shape_key = calloc((size_t)(net->nvars + 1) * (PD_MAX_DIMS + 1), sizeof *r->shape_key);
  if (!r->t || !r->active || !r->shape_key) {
    pd_runner_free(r);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  for (int o = 0; o < net->nops; o++) r->active[o] = active ? active[o] : true;
  for (int v = 0; v < net->nvars; v++) {
    pd_var_info *vi = &net->vars[v];
    pd_var *var = pd_scope_var(scope, vi->name);
    if (!var) {
      pd_runner_free(r);
      return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    }
    r->t[v] = &var->tensor;
    if (vi->kind == PD_VAR_PARAM || vi->kind == PD_VAR_STATE) {
      pd_tensor *t = r->t[v];
      if (t->storage && pd_dims_equal(t->ndim, t->dims, vi->meta.ndim, vi->meta.dims) && t->dtype == vi->meta.dtype)
        continue; /* already loaded */
      t->dtype = vi->meta.dtype;
      pd_status st = pd_tensor_set_dims(t, vi->meta.ndim, vi->meta.dims, err);
      if (!st) st = pd_tensor_alloc(t, err);
      if (st) {
        pd_runner_free(r);
        return st;
      }
    } else if (vi->kind == PD_VAR_DATA) {
      r->t[v]->dtype = vi->meta.dtype;
    }
  }
  return PD_OK;
}

/* The memory plan and its buffers (whose storage lives on while variables
 * still use it). */
static void drop_plan(pd_runner *r) {
  if (r->plan) {
    for (int b = 0; b < r->net->nvars; b++) pd_tensor_release(&r->bufs[b]);
    pd_memplan_free(r->plan);
  }
  free(r->plan), free(r->bufs);
  r->plan = NULL, r->bufs = NULL;
}

void pd_runner_free(pd_runner *r) {
  if (r->hooks) r->hooks->detach(r); /* NULL: a runner never initialised */
  drop_plan(r);
  free(r->t);
  free(r->active);
  free(r->shape_key);
  memset(r, 0, sizeof *r);
}

/* BLIS's kernels are chosen at the first product, by the size of the work:
 * the mean FLOPs of the ops that count theirs (those with matrix products,
 * convolutions, pooling and the like; blisarch.h). */
static void tell_blis(const pd_runner *r, pd_tensor **vars) {
  double total = 0;
  int n = 0;
  for (int o = 0; o < r->net->nops; o++) {
    const pd_op *op = &r->net->ops[o];
    if (!r->active[o] || !op->def->flops) continue;
    pd_ctx c = {.op = (pd_op *)op, .vars = vars};
    total += op->def->flops(&c), n++;
  }
  if (n) pd_blis_arch_workload(total / n);
}

/* Shape functions of the active ops over r->vars, and their outputs
 * allocated, except the temporaries of `plan` (the caller gives them their
 * buffers). */
static pd_status alloc_outputs(pd_runner *r, const pd_memplan *plan, pd_error *err) {
  pd_net *net = r->net;
  for (int o = 0; o < net->nops; o++) {
    if (!r->active[o]) continue;
    pd_op *op = &net->ops[o];
    pd_ctx c = {.op = op, .vars = r->vars, .exec = &r->exec, .err = err};
    pd_status st = pd_op_infer_shape(&c);
    for (int s = 0; s < op->def->n_outputs && !st; s++)
      for (int i = 0; i < op->out[s].n && !st; i++)
        if (!plan || op->out[s].vars[i] < 0 || plan->group[op->out[s].vars[i]] < 0) { /* planned: below */
          pd_tensor *t = pd_out_at(&c, s, i);
          if (t && t->storage && t->storage->plan_buffer) pd_tensor_release(t); /* a plan's, not this run's */
          st = pd_ctx_alloc(&c, t);
        }
    if (st) return st;
  }
  return PD_OK;
}

pd_status pd_runner_alloc_outputs(pd_runner *r, pd_error *err) { return alloc_outputs(r, NULL, err); }

pd_status pd_runner_prepare(pd_runner *r, pd_error *err) {
  pd_net *net = r->net;
  /* key: dims of every data tensor; re-infer only when they change */
  bool same = r->shapes_ok;
  int64_t *k = r->shape_key;
  for (int v = 0; v < net->nvars; v++) {
    if (net->vars[v].kind != PD_VAR_DATA) continue;
    const pd_tensor *t = r->vars[v];
    if (k[0] != t->ndim || memcmp(k + 1, t->dims, sizeof(int64_t) * (size_t)(t->ndim > 0 ? t->ndim : 0)) != 0)
      same = false;
    k[0] = t->ndim;
    memcpy(k + 1, t->dims, sizeof(int64_t) * PD_MAX_DIMS);
    k += PD_MAX_DIMS + 1;
  }
  if (same && pd_scope_shaped_by(r->scope) == r) return PD_OK;
  r->shapes_ok = false;
  pd_status st = r->hooks->prepare(r, err);
  if (st) return st;
  r->shapes_ok = true;
  pd_scope_set_shaped_by(r->scope, r);
  return PD_OK;
}

pd_status pd_runner_plan_memory(pd_runner *r, const int *keep, int nkeep, bool keep_forward, pd_error *err) {
  int n = r->net->nvars;
  bool *kept = calloc((size_t)n + 1, 1);
  pd_memplan *plan = calloc(1, sizeof *plan);
  pd_tensor *bufs = calloc((size_t)n + 1, sizeof *bufs);
  pd_status st = kept && plan && bufs ? PD_OK : pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int i = 0; i < nkeep && !st; i++)
    if (keep[i] >= 0 && keep[i] < n) kept[keep[i]] = true;
  if (!st) st = pd_memplan_init(plan, r->net, r->active, kept, keep_forward, err);
  free(kept);
  if (st) {
    free(plan), free(bufs);
    return st;
  }
  for (int b = 0; b < n; b++) pd_tensor_init(&bufs[b], PD_U8);
  drop_plan(r); /* planned again: the old buffers go once no variable uses them */
  r->plan = plan, r->bufs = bufs;
  r->shapes_ok = false;
  return PD_OK;
}

pd_status pd_runner_run(pd_runner *r, int begin, int end, pd_error *err) {
  if (begin < 0) begin = 0;
  if (end < 0 || end > r->net->nops) end = r->net->nops;
  pd_status st = r->staged ? PD_OK : r->hooks->stage(r, err);
  r->staged = false;
  if (!st) st = pd_runner_prepare(r, err);
  if (st) return st;
  return r->hooks->run(r, begin, end, err);
}

pd_status pd_runner_stage(pd_runner *r, pd_error *err) {
  pd_status st = r->hooks->stage(r, err);
  r->staged = !st;
  return st;
}

pd_status pd_runner_set_place(pd_runner *r, pd_place place, pd_error *err) {
  if (place.kind == r->exec.place.kind && place.device == r->exec.place.device) return PD_OK;
  const pd_place_ops *p = pd_place_ops_of(place.kind);
  const char *name = pd_place_kind_name(place.kind);
  if (!p) return pd_errorf(err, PD_ERR_RUNTIME, "a runner was placed on a %s that is not open", name);
  r->hooks->detach(r);
  r->vars = r->t;
  r->exec.place = place;
  r->shapes_ok = false;
  r->hooks = p->runner ? p->runner : &cpu_runner;
  return r->hooks->attach(r, err);
}

pd_status pd_runner_fetch(pd_runner *r, int v, pd_error *err) { return v >= 0 ? r->hooks->fetch(r, v, err) : PD_OK; }

pd_status pd_runner_fetch_persistables(pd_runner *r, pd_error *err) {
  pd_status st = PD_OK;
  for (int v = 0; v < r->net->nvars && !st; v++)
    if (r->net->vars[v].kind == PD_VAR_PARAM || r->net->vars[v].kind == PD_VAR_STATE) st = r->hooks->fetch(r, v, err);
  return st;
}

/* ---- the CPU: kernels on the scope's own tensors ---- */

static pd_status cpu_attach(pd_runner *r, pd_error *err) {
  (void)err;
  r->vars = r->t;
  return PD_OK;
}

static void cpu_detach(pd_runner *r) { (void)r; }

/* the host-fed variables are where the kernels read them already */
static pd_status cpu_stage(pd_runner *r, pd_error *err) {
  (void)r, (void)err;
  return PD_OK;
}

/* the outputs, the memory plan's buffers, BLIS's kernel choice, and the ops
 * that place their inputs (op.h's bind) */
static pd_status cpu_prepare(pd_runner *r, pd_error *err) {
  pd_net *net = r->net;
  pd_tensor **vars = r->vars;
  pd_memplan *plan = r->plan;
  pd_status st = alloc_outputs(r, plan, err);
  if (st) return st;
  tell_blis(r, vars);
  if (plan) {
    pd_memplan_assign(plan, vars);
    for (int b = 0; b < plan->nbufs; b++) {
      pd_tensor *buf = &r->bufs[b];
      int64_t bytes = (int64_t)(plan->bytes[b] ? plan->bytes[b] : 1);
      st = pd_tensor_set_dims(buf, 1, &bytes, err);
      if (!st) st = pd_tensor_alloc(buf, err);
      if (st) return st;
      buf->storage->plan_buffer = true;
    }
    for (int v = 0; v < net->nvars; v++)
      if (plan->group[v] >= 0) pd_tensor_set_storage(vars[v], r->bufs[plan->buf[plan->group[v]]].storage);
  }
  for (int o = 0; o < net->nops; o++) {
    if (!r->active[o] || !net->ops[o].def->bind) continue;
    pd_ctx c = {.op = &net->ops[o], .vars = vars, .exec = &r->exec, .err = err};
    if ((st = net->ops[o].def->bind(&c))) return st;
  }
  return PD_OK;
}

static pd_status cpu_run(pd_runner *r, int begin, int end, pd_error *err) {
  pd_net *net = r->net;
  pd_ctx c = {.vars = r->vars, .exec = &r->exec, .err = err};
  pd_status st;
  r->exec.time_ops = r->op_seconds != NULL;
  if (r->op_seconds) {
    for (int o = begin; o < end; o++) {
      if (!r->active[o]) continue;
      c.op = &net->ops[o];
      struct timespec t0, t1;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      st = c.op->kernel->fn(&c);
      clock_gettime(CLOCK_MONOTONIC, &t1);
      r->op_seconds[o] = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
      if (st) return st;
    }
    return PD_OK;
  }
  for (int o = begin; o < end; o++) {
    if (!r->active[o]) continue;
    c.op = &net->ops[o];
    if ((st = c.op->kernel->fn(&c))) return st;
  }
  return PD_OK;
}

/* the host tensors are the values */
static pd_status cpu_fetch(pd_runner *r, int v, pd_error *err) {
  (void)r, (void)v, (void)err;
  return PD_OK;
}

static const pd_place_runner cpu_runner = {cpu_attach, cpu_detach, cpu_stage, cpu_prepare, cpu_run, cpu_fetch};
