/* op.c — what kernels and shape functions use through pd_ctx, and attribute
 * values: conversion from paddle.AttrValue, defaults, range checks. */
#include "core/op.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/exec.h"
#include "base/rng.h"

pd_status pd_ctx_fail(pd_ctx *c, pd_status st, const char *fmt, ...) {
  char msg[PD_ERROR_MAX - 512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const pd_op *op = c->op;
  char in[PD_ERROR_MAX / 4] = "";
  if (op->block) snprintf(in, sizeof in, "block \"%s\", ", op->block);
  if (op->file && op->line > 0)
    return pd_errorf(c->err, st, "%s:%d:%d: %sop #%d \"%s\": %s", op->file, op->line, op->col, in, op->index,
                     op->def->type, msg);
  return pd_errorf(c->err, st, "%sop #%d \"%s\": %s", in, op->index, op->def->type, msg);
}

bool pd_is_grad_name(const char *g, const char *x) {
  size_t n = strlen(x);
  return strncmp(g, x, n) == 0 && strncmp(g + n, "@GRAD", 5) == 0 && (g[n + 5] == '\0' || g[n + 5] == '@');
}

pd_tensor *pd_ctx_grad_of_in(pd_ctx *c, int in_slot, int out_slot, int i) {
  if (pd_out_count(c, out_slot) == pd_in_count(c, in_slot)) return pd_out_at(c, out_slot, i);
  const char *x = pd_ctx_in_name(c, in_slot, i);
  for (int j = 0; j < pd_out_count(c, out_slot); j++)
    if (pd_is_grad_name(pd_ctx_out_name(c, out_slot, j), x)) return pd_out_at(c, out_slot, j);
  return NULL;
}

pd_tensor *pd_ctx_grad_of_out(pd_ctx *c, int y_slot, int dy_slot, int i) {
  if (pd_in_count(c, dy_slot) == pd_in_count(c, y_slot)) return pd_in_at(c, dy_slot, i);
  const char *y = pd_ctx_in_name(c, y_slot, i);
  for (int k = 0; k < pd_in_count(c, dy_slot); k++)
    if (pd_is_grad_name(pd_ctx_in_name(c, dy_slot, k), y)) return pd_in_at(c, dy_slot, k);
  return NULL;
}

pd_status pd_ctx_fail_shape(pd_ctx *c, const char *what, const char *name, const pd_tensor *t, const char *want) {
  char d[128];
  return pd_ctx_fail(c, PD_ERR_INPUT, "%s \"%s\" is %s %s; %s", what, name, pd_dtype_name(t->dtype),
                     pd_dims_str(t->ndim, t->dims, d, sizeof d), want);
}

pd_status pd_ctx_set_shape(pd_ctx *c, pd_tensor *t, pd_dtype dtype, int ndim, const int64_t *dims) {
  if (!t) return PD_OK;
  t->dtype = dtype;
  pd_status st = pd_tensor_set_dims(t, ndim, dims, c->err);
  if (st) return pd_ctx_fail(c, st, "%s", c->err->msg);
  return PD_OK;
}

pd_status pd_ctx_param_shape(pd_ctx *c, int slot, pd_dtype dtype, int ndim, const int64_t *dims) {
  pd_tensor *t = pd_in(c, slot);
  if (!t) return PD_OK;
  if (t->ndim < 0) return pd_ctx_set_shape(c, t, dtype, ndim, dims);
  if (!pd_dims_equal(t->ndim, t->dims, ndim, dims)) {
    char a[128], b[128];
    return pd_ctx_fail(c, PD_ERR_INPUT, "parameter \"%s\" (%s) has shape %s, but the op needs %s",
                       pd_ctx_in_name(c, slot, 0), c->op->def->inputs[slot].name,
                       pd_dims_str(t->ndim, t->dims, a, sizeof a), pd_dims_str(ndim, dims, b, sizeof b));
  }
  if (t->dtype != dtype)
    return pd_ctx_fail(c, PD_ERR_INPUT, "parameter \"%s\" has dtype %s, but the op needs %s",
                       pd_ctx_in_name(c, slot, 0), pd_dtype_name(t->dtype), pd_dtype_name(dtype));
  return PD_OK;
}

pd_status pd_ctx_alloc(pd_ctx *c, pd_tensor *t) {
  if (!t) return PD_OK;
  pd_status st = pd_tensor_alloc(t, c->err);
  if (!st) return PD_OK;
  for (int s = 0; s < c->op->def->n_outputs; s++) /* name the variable when it is an output */
    for (int i = 0; i < pd_out_count(c, s); i++)
      if (pd_out_at(c, s, i) == t)
        return pd_ctx_fail(c, st, "output \"%s\": %s", pd_ctx_out_name(c, s, i), c->err->msg);
  return pd_ctx_fail(c, st, "%s", c->err->msg);
}

static const char *arg_name(const pd_op *op, const pd_arg *a, int i) {
  if (i >= a->n || a->vars[i] < 0) return "";
  return op->names ? op->names[a->vars[i]] : "?";
}
const char *pd_ctx_in_name(pd_ctx *c, int slot, int i) { return arg_name(c->op, &c->op->in[slot], i); }
const char *pd_ctx_out_name(pd_ctx *c, int slot, int i) { return arg_name(c->op, &c->op->out[slot], i); }

bool pd_ctx_training(pd_ctx *c) { return c->exec && c->exec->training; }

uint64_t pd_ctx_rng_seed(pd_ctx *c) {
  uint64_t s = c->exec ? c->exec->seed : 0;
  uint64_t step = c->exec ? (uint64_t)c->exec->step : 0;
  return pd_rng_op_seed(s, (uint64_t)c->op->index, step);
}

int pd_ctx_threads(pd_ctx *c) { return c->exec && c->exec->threads > 0 ? c->exec->threads : 1; }

pd_status pd_op_infer_shape(pd_ctx *c) {
  const pd_op_def *d = c->op->def;
  if (d->infer_shape) return d->infer_shape(c);
  pd_status st = PD_OK;
  for (int s = 0; s < d->n_outputs && !st; s++)
    for (int i = 0; i < c->op->out[s].n && !st; i++) {
      pd_tensor *x = pd_in_at(c, s, i), *dx = pd_out_at(c, s, i);
      if (dx && x) st = pd_ctx_set_shape(c, dx, x->dtype, x->ndim, x->dims);
    }
  return st;
}

pd_dtype pd_op_key_dtype(pd_ctx *c) {
  const pd_op_def *d = c->op->def;
  if (d->kernel_dtype) return d->kernel_dtype(c);
  for (int s = 0; s < d->n_inputs; s++)
    if (pd_in(c, s)) return pd_in(c, s)->dtype;
  return PD_F32;
}

const pd_kernel *pd_op_kernel(const pd_op_def *d, pd_place_kind place, pd_dtype dtype) {
  for (int k = 0; k < d->n_kernels; k++)
    if (d->kernels[k].key.place == place && d->kernels[k].key.dtype == dtype) return &d->kernels[k];
  return NULL;
}

/* ---- attribute values ---- */

static const char *const attr_type_names[] = {
    "int", "float", "string", "list of ints", "list of floats", "list of strings", "bool", "list of bools", "block"};

static bool bound_ok(pd_bound kind, double bound, double v, bool is_min) {
  switch (kind) {
  case PD_NONE:
    return true;
  case PD_GE:
    return is_min ? v >= bound : v <= bound;
  case PD_GT:
    return is_min ? v > bound : v < bound;
  }
  return true;
}

static const char *bound_text(const pd_attr_def *d, char *buf, size_t size) {
  char lo[64] = "", hi[64] = "";
  if (d->min_kind) snprintf(lo, sizeof lo, "%s %g", d->min_kind == PD_GT ? ">" : ">=", d->min);
  if (d->max_kind) snprintf(hi, sizeof hi, "%s %g", d->max_kind == PD_GT ? "<" : "<=", d->max);
  snprintf(buf, size, "%s%s%s", lo, lo[0] && hi[0] ? " and " : "", hi);
  return buf;
}

pd_status pd_attr_check_range(const pd_attr_def *d, const pd_attr *v, pd_error *err) {
  char b[128], g[256];
  if (d->one_of && v->type == PD_ATTR_STRING) {
    for (const char *const *o = d->one_of; *o; o++)
      if (strcmp(*o, v->s) == 0) return PD_OK;
    char list[256] = "";
    size_t used = 0;
    for (const char *const *o = d->one_of; *o && used < sizeof list; o++)
      used += (size_t)snprintf(list + used, sizeof list - used, "%s\"%s\"", o == d->one_of ? "" : ", ", *o);
    size_t n = 0;
    while (d->one_of[n]) n++;
    const char *sug = pd_suggest(v->s, d->one_of, n);
    return pd_errorf(err, PD_ERR_INPUT, "attribute \"%s\" must be one of %s, got \"%s\"%s%s%s", d->name, list, v->s,
                     sug ? " (did you mean \"" : "", sug ? sug : "", sug ? "\"?)" : "");
  }
  if (!d->min_kind && !d->max_kind) return PD_OK;
  int n = 1;
  if (v->type == PD_ATTR_INTS || v->type == PD_ATTR_FLOATS) n = v->n;
  for (int i = 0; i < n; i++) {
    double x = v->type == PD_ATTR_INT      ? (double)v->i
               : v->type == PD_ATTR_FLOAT  ? v->f
               : v->type == PD_ATTR_INTS   ? (double)v->ints[i]
               : v->type == PD_ATTR_FLOATS ? v->floats[i]
                                           : 0;
    if (!bound_ok(d->min_kind, d->min, x, true) || !bound_ok(d->max_kind, d->max, x, false) || isnan(x)) {
      if (n > 1 || v->type == PD_ATTR_INTS || v->type == PD_ATTR_FLOATS)
        return pd_errorf(err, PD_ERR_INPUT, "attribute \"%s\": every element must be %s, got %s", d->name,
                         bound_text(d, b, sizeof b), pd_attr_str(v, g, sizeof g));
      return pd_errorf(err, PD_ERR_INPUT, "attribute \"%s\" must be %s, got %s", d->name, bound_text(d, b, sizeof b),
                       pd_attr_str(v, g, sizeof g));
    }
  }
  return PD_OK;
}

const char *pd_attr_str(const pd_attr *v, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
#define PUT(...) (used < size ? used += (size_t)snprintf(buf + used, size - used, __VA_ARGS__) : 0)
  switch (v->type) {
  case PD_ATTR_INT:
    PUT("%lld", (long long)v->i);
    break;
  case PD_ATTR_FLOAT:
    PUT("%.17g", v->f);
    break;
  case PD_ATTR_STRING:
  case PD_ATTR_BLOCK:
    PUT("\"%s\"", v->s ? v->s : "");
    break;
  case PD_ATTR_BOOL:
    PUT("%s", v->b ? "true" : "false");
    break;
  case PD_ATTR_INTS:
  case PD_ATTR_FLOATS:
  case PD_ATTR_STRINGS:
    PUT("[");
    for (int i = 0; i < v->n; i++) {
      if (i) PUT(", ");
      if (v->type == PD_ATTR_INTS)
        PUT("%lld", (long long)v->ints[i]);
      else if (v->type == PD_ATTR_FLOATS)
        PUT("%.17g", v->floats[i]);
      else
        PUT("\"%s\"", v->strs[i]);
    }
    PUT("]");
    break;
  }
#undef PUT
  return buf;
}

const char *pd_attr_type_name(pd_attr_type t) {
  return (unsigned)t < (unsigned)PD_LEN(attr_type_names) ? attr_type_names[t] : "?";
}
