/* optim.h — the checks the update ops (sgd, momentum, adam) share: Param is
 * float; every state input (Grad, Velocity, Moment1...) matches it in shape
 * and dtype; LearningRate and Step hold one value. Their outputs take Param's
 * shape and may be the very variables of the inputs (updates in place). */
#ifndef PD_OPTIM_H
#define PD_OPTIM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/op.h"
#include "cpu/parallel.h"

/* Input `param` must be float32 or float64. */
static inline pd_status pd_optim_check_param(pd_ctx *c, int param) {
  const pd_tensor *p = pd_in(c, param);
  if (!pd_dtype_is_float(p->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "%s \"%s\" must be float32 or float64, got %s", c->op->def->inputs[param].name,
                       pd_ctx_in_name(c, param, 0), pd_dtype_name(p->dtype));
  return PD_OK;
}

/* Input `slot` must have the shape and dtype of input `param`. */
static inline pd_status pd_optim_check_like(pd_ctx *c, int slot, int param) {
  const pd_tensor *p = pd_in(c, param), *t = pd_in(c, slot);
  const char *pn = c->op->def->inputs[param].name, *tn = c->op->def->inputs[slot].name;
  char ps[128], ts[128];
  bool ok = t->dtype == p->dtype && t->ndim == p->ndim;
  for (int i = 0; ok && i < p->ndim; i++) ok = t->dims[i] < 0 || p->dims[i] < 0 || t->dims[i] == p->dims[i];
  if (!ok)
    return pd_ctx_fail(c, PD_ERR_INPUT, "%s \"%s\" must match %s \"%s\" (%s %s), got %s %s", tn,
                       pd_ctx_in_name(c, slot, 0), pn, pd_ctx_in_name(c, param, 0), pd_dtype_name(p->dtype),
                       pd_dims_str(p->ndim, p->dims, ps, sizeof ps), pd_dtype_name(t->dtype),
                       pd_dims_str(t->ndim, t->dims, ts, sizeof ts));
  return PD_OK;
}

/* A row-sparse gradient (the optional input `rows`, int64 [n], of an
 * embedding's gradient: docs/netdesc.md): Grad holds n rows of Param's
 * shape after its first dim, the row of Param each updates in Rows
 * (-1: unused). Without Rows, Grad must match Param (pd_optim_check_like). */
static inline pd_status pd_optim_check_grad(pd_ctx *c, int grad, int rows, int param) {
  const pd_tensor *r = pd_in(c, rows);
  if (!r) return pd_optim_check_like(c, grad, param);
  const pd_tensor *p = pd_in(c, param), *g = pd_in(c, grad);
  char ps[128], gs[128], rs[128];
  bool ok = r->dtype == PD_I64 && r->ndim == 1 && g->dtype == p->dtype && g->ndim == p->ndim && p->ndim >= 1 &&
            (g->dims[0] < 0 || r->dims[0] < 0 || g->dims[0] == r->dims[0]);
  for (int i = 1; ok && i < p->ndim; i++) ok = g->dims[i] < 0 || p->dims[i] < 0 || g->dims[i] == p->dims[i];
  if (!ok)
    return pd_ctx_fail(
        c, PD_ERR_INPUT,
        "a row-sparse Grad \"%s\" (%s %s) must hold rows of Param \"%s\" (%s %s), one per entry of "
        "Rows \"%s\" (int64 [n]), got Rows %s %s",
        pd_ctx_in_name(c, grad, 0), pd_dtype_name(g->dtype), pd_dims_str(g->ndim, g->dims, gs, sizeof gs),
        pd_ctx_in_name(c, param, 0), pd_dtype_name(p->dtype), pd_dims_str(p->ndim, p->dims, ps, sizeof ps),
        pd_ctx_in_name(c, rows, 0), pd_dtype_name(r->dtype), pd_dims_str(r->ndim, r->dims, rs, sizeof rs));
  return PD_OK;
}

/* A row-sparse update's rows at run time (when given): rows of Param in
 * ascending order, then only -1 (unused entries), as embedding's gradient
 * writes them; anything else is an input error. */
static inline pd_status pd_optim_check_rows(pd_ctx *c, int rows, int param) {
  const pd_tensor *r = pd_in(c, rows);
  if (!r) return PD_OK;
  const int64_t *row = PD_DATA(r, int64_t), v = pd_in(c, param)->dims[0];
  for (int64_t i = 0, n = pd_tensor_numel(r); i < n; i++) {
    bool ok =
        row[i] == -1 ? i + 1 == n || row[i + 1] == -1 : row[i] >= 0 && row[i] < v && (i == 0 || row[i] > row[i - 1]);
    if (!ok)
      return pd_ctx_fail(c, PD_ERR_INPUT,
                         "Rows \"%s\" entry %lld is %lld: a row list holds distinct rows of Param \"%s\" (0 to %lld) "
                         "in ascending order, then -1",
                         pd_ctx_in_name(c, rows, 0), (long long)i, (long long)row[i], pd_ctx_in_name(c, param, 0),
                         (long long)v - 1);
  }
  return PD_OK;
}

/* A row-sparse update: the op's dense job, run on one row at a time (its
 * pointers moved to Param's row and Grad's entry), the entries of Rows
 * split among threads: rows are distinct (pd_optim_check_rows). */
typedef struct pd_rows_job {
  const void *job;
  const int64_t *rows;
  int64_t n, d; /* entries of Rows, elements of a row */
} pd_rows_job;

/* Runs `rows_range` over the entries of Rows when Rows is given; false: dense. */
static inline bool pd_optim_run_rows(pd_ctx *c, int rows, int param, const void *job, pd_range_fn rows_range) {
  const pd_tensor *r = pd_in(c, rows), *p = pd_in(c, param);
  if (!r) return false;
  pd_rows_job rj = {job, PD_DATA(r, int64_t), pd_tensor_numel(r), p->dims[0] > 0 ? pd_tensor_numel(p) / p->dims[0] : 0};
  int64_t grain = rj.d > 0 ? (PD_UPDATE_GRAIN + rj.d - 1) / rj.d : 1;
  pd_parallel_for(rj.n, grain, rows_range, &rj);
  return true;
}

/* Input `slot` must hold exactly one value, of dtype `dt` (or any, if dt < 0). */
static inline pd_status pd_optim_check_scalar(pd_ctx *c, int slot, int dt) {
  const pd_tensor *t = pd_in(c, slot);
  char ts[128];
  if (pd_tensor_numel(t) != 1 || (dt >= 0 && t->dtype != (pd_dtype)dt))
    return pd_ctx_fail(c, PD_ERR_INPUT, "%s \"%s\" must hold one %s value ([1]), got %s %s",
                       c->op->def->inputs[slot].name, pd_ctx_in_name(c, slot, 0),
                       dt >= 0 ? pd_dtype_name((pd_dtype)dt) : "number", pd_dtype_name(t->dtype),
                       pd_dims_str(t->ndim, t->dims, ts, sizeof ts));
  return PD_OK;
}

/* The learning rate: one value of either float dtype (the trainer keeps it
 * in float64 whatever the parameters' dtype). */
static inline pd_status pd_optim_check_lr(pd_ctx *c, int slot) {
  const pd_tensor *t = pd_in(c, slot);
  char ts[128];
  if (pd_tensor_numel(t) != 1 || !pd_dtype_is_float(t->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "%s \"%s\" must hold one float32 or float64 value ([1]), got %s %s",
                       c->op->def->inputs[slot].name, pd_ctx_in_name(c, slot, 0), pd_dtype_name(t->dtype),
                       pd_dims_str(t->ndim, t->dims, ts, sizeof ts));
  return PD_OK;
}

/* Output `slot` takes the shape and dtype of input `param`. */
static inline pd_status pd_optim_out_like(pd_ctx *c, int slot, int param) {
  const pd_tensor *p = pd_in(c, param);
  return pd_ctx_set_shape(c, pd_out(c, slot), p->dtype, p->ndim, p->dims);
}

/* Shape function of an op over a list of gradients: input slot 0 (X) lists
 * float tensors of one dtype, output slot 0 (Out) as many, each shaped like
 * its X (usually the X variables themselves). */
static inline pd_status pd_optim_infer_list(pd_ctx *c) {
  int n = pd_in_count(c, 0);
  if (pd_out_count(c, 0) != n)
    return pd_ctx_fail(c, PD_ERR_INPUT, "Out must list as many variables as X (%d), got %d", n, pd_out_count(c, 0));
  if (n == 0) return pd_ctx_fail(c, PD_ERR_INPUT, "X must list at least one variable");
  pd_dtype dt = pd_in(c, 0)->dtype;
  if (!pd_dtype_is_float(dt))
    return pd_ctx_fail(c, PD_ERR_INPUT, "X \"%s\" must be float32 or float64, got %s", pd_ctx_in_name(c, 0, 0),
                       pd_dtype_name(dt));
  for (int i = 0; i < n; i++) {
    pd_tensor *x = pd_in_at(c, 0, i);
    if (x->dtype != dt)
      return pd_ctx_fail(c, PD_ERR_INPUT, "all X must have one dtype: X \"%s\" is %s but X \"%s\" is %s",
                         pd_ctx_in_name(c, 0, 0), pd_dtype_name(dt), pd_ctx_in_name(c, 0, i), pd_dtype_name(x->dtype));
    pd_status st = pd_ctx_set_shape(c, pd_out_at(c, 0, i), x->dtype, x->ndim, x->dims);
    if (st) return st;
  }
  return PD_OK;
}

#endif
