/* params.c — parameters in by name (see params.h). Float parameters are
 * converted to the net's float type (gradcheck runs in float64). */
#include "io/params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "io/checkpoint.h"

/* A NaN or Inf in a parameter (or optimizer state) would make every output
 * it reaches NaN: refused, naming the file and the element (flat index and
 * coordinates). */
static pd_status check_finite(const char *path, const char *name, const pd_tensor *t, pd_error *err) {
  if (!pd_dtype_is_float(t->dtype)) return PD_OK;
  int64_t n = pd_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double v = pd_tensor_get(t, i);
    if (isfinite(v)) continue;
    int64_t at[PD_MAX_DIMS], rest = i;
    for (int d = t->ndim - 1; d >= 0; d--) { /* n > 0: no dim is 0 */
      at[d] = rest % t->dims[d];
      rest /= t->dims[d];
    }
    char where[128];
    pd_dims_str(t->ndim, at, where, sizeof where);
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: parameter \"%s\" holds %s at element %lld (index %s); parameters must be finite", path, name,
                     pd_nonfinite_str(v), (long long)i, where);
  }
  return PD_OK;
}

/* A file of an optimizer's own state (@lr, @step, p@VELOCITY, p@MOMENT1,
 * p@MOMENT2): not part of the model, so fine-tuning passes it by. */
static bool optimizer_file(const char *name) {
  static const char *const suffixes[] = {"@VELOCITY", "@MOMENT1", "@MOMENT2"};
  if (!strcmp(name, "@lr") || !strcmp(name, "@step")) return true;
  size_t n = strlen(name);
  for (int i = 0; i < 3; i++) {
    size_t k = strlen(suffixes[i]);
    if (n > k && !strcmp(name + n - k, suffixes[i])) return true;
  }
  return false;
}

pd_status pd_params_load(const pd_net *net, pd_scope *scope, const char *dir, const bool *active, bool required,
                         pd_buf *report, int *mismatched, pd_error *err) {
  if (mismatched) *mismatched = 0;
  pd_checkpoint *ck = NULL;
  pd_status st = pd_checkpoint_open(dir, &ck, err);
  if (st) return st;
  bool *used = calloc((size_t)net->nvars + 1, 1);
  if (!used) {
    pd_checkpoint_close(ck);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  if (active)
    for (int o = 0; o < net->nops; o++) {
      if (!active[o]) continue;
      const pd_op *op = &net->ops[o];
      for (int s = 0; s < op->def->n_inputs; s++)
        for (int i = 0; i < op->in[s].n; i++) used[op->in[s].vars[i]] = true;
    }
  char d1[128], d2[128];
  for (int v = 0; v < net->nvars && !st; v++) {
    const pd_var_info *vi = &net->vars[v];
    if (vi->kind != PD_VAR_PARAM && vi->kind != PD_VAR_STATE) continue;
    if (active && !used[v]) continue;
    const pd_ckpt_file *f = pd_checkpoint_find(ck, vi->name);
    if (!f) {
      if (required)
        st = pd_errorf(err, PD_ERR_INPUT, "%s: no parameter \"%s\" (%s %s) in this directory", pd_checkpoint_dir(ck),
                       vi->name, pd_dtype_name(vi->meta.dtype),
                       pd_dims_str(vi->meta.ndim, vi->meta.dims, d1, sizeof d1));
      else if (!vi->optimizer_state) { /* fine-tuning starts the optimizer afresh */
        if (report) pd_buf_printf(report, "missed %s (not in %s; initialised)\n", vi->name, pd_checkpoint_dir(ck));
        if (mismatched) ++*mismatched;
      }
      continue;
    }
    if (!pd_dims_equal(f->ndim, f->dims, vi->meta.ndim, vi->meta.dims)) {
      st = pd_errorf(err, PD_ERR_INPUT, "%s: parameter \"%s\" has shape %s, but the net needs %s", f->path, vi->name,
                     pd_dims_str(f->ndim, f->dims, d1, sizeof d1),
                     pd_dims_str(vi->meta.ndim, vi->meta.dims, d2, sizeof d2));
      break;
    }
    if (f->dtype != vi->meta.dtype && !(pd_dtype_is_float(f->dtype) && pd_dtype_is_float(vi->meta.dtype))) {
      st = pd_errorf(err, PD_ERR_INPUT, "%s: parameter \"%s\" is %s, but the net needs %s", f->path, vi->name,
                     pd_dtype_name(f->dtype), pd_dtype_name(vi->meta.dtype));
      break;
    }
    pd_var *var = pd_scope_var(scope, vi->name);
    if (!var) {
      st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
      break;
    }
    if (f->dtype == vi->meta.dtype) {
      st = pd_checkpoint_read(ck, vi->name, &var->tensor, err);
    } else {
      pd_tensor tmp;
      pd_tensor_init(&tmp, f->dtype);
      st = pd_checkpoint_read(ck, vi->name, &tmp, err);
      if (!st) {
        var->tensor.dtype = vi->meta.dtype;
        st = pd_tensor_set_dims(&var->tensor, tmp.ndim, tmp.dims, err);
        if (!st) st = pd_tensor_alloc(&var->tensor, err);
        int64_t n = pd_tensor_numel(&tmp);
        for (int64_t i = 0; i < n && !st; i++) pd_tensor_set(&var->tensor, i, pd_tensor_get(&tmp, i));
      }
      pd_tensor_release(&tmp);
    }
    if (!st) st = check_finite(f->path, vi->name, &var->tensor, err);
  }
  if (!st && report) {
    size_t n;
    const char *const *names = pd_checkpoint_vars(ck, &n);
    for (size_t i = 0; i < n; i++) {
      int v = pd_net_var(net, names[i]);
      if (v >= 0 && (net->vars[v].kind == PD_VAR_PARAM || net->vars[v].kind == PD_VAR_STATE)) continue;
      if (optimizer_file(names[i])) continue; /* another optimizer's state: fine-tuning starts afresh */
      pd_buf_printf(report, "skipped %s (no such parameter in the net)\n", names[i]);
      if (mismatched) ++*mismatched;
    }
  }
  free(used);
  pd_checkpoint_close(ck);
  return st;
}
