/* optim.h — the checks the update ops (sgd, momentum, adam) share: Param is
 * float; every state input (Grad, Velocity, Moment1...) matches it in shape
 * and dtype; LearningRate and Step hold one value. Their outputs take Param's
 * shape and may be the very variables of the inputs (updates in place). */
#ifndef PD_OPTIM_H
#define PD_OPTIM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/op.h"

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
