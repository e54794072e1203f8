/* feed.c — data bindings and mini-batch reads (see feed.h). */
#include "io/feed.h"

#include "base/util.h"

#include <stdlib.h>
#include <string.h>

pd_status pd_feed_bind_file(pd_feed *f, const pd_net *net, const char *var, const char *file, const char *what,
                            pd_error *err) {
  int v = pd_net_var(net, var);
  if (v < 0) {
    const char **names = malloc(sizeof *names * (size_t)(net->nvars + 1));
    const char *sug = NULL;
    int n = 0;
    if (names) {
      for (int i = 0; i < net->nvars; i++)
        if (net->vars[i].kind == PD_VAR_DATA) names[n++] = net->vars[i].name;
      sug = pd_suggest(var, names, (size_t)n);
    }
    pd_status st =
        sug ? pd_errorf(err, PD_ERR_INPUT, "%s: the net has no variable \"%s\" (did you mean \"%s\"?)", what, var, sug)
            : pd_errorf(err, PD_ERR_INPUT, "%s: the net has no variable \"%s\"", what, var);
    free(names);
    return st;
  }
  const pd_var_info *vi = &net->vars[v];
  if (vi->kind != PD_VAR_DATA)
    return pd_errorf(err, PD_ERR_INPUT, "%s: \"%s\" is a %s variable, not data; only data variables read files", what,
                     var, pd_var_kind_name(vi->kind));
  pd_dataset *ds = NULL;
  pd_status st = pd_dataset_open_header(file, &ds, err); /* inflated by pd_feed_check, once all agree */
  if (!st && vi->meta.ndim >= 1) st = pd_dataset_check_rows(ds, var, vi->meta.ndim - 1, vi->meta.dims + 1, err);
  if (st) {
    pd_dataset_close(ds);
    pd_error_prefix(err, "%s %s=%s", what, var, file);
    return st;
  }
  for (int i = 0; i < f->n; i++)
    if (f->b[i].var == v) {
      pd_dataset_close(f->b[i].ds);
      free(f->b[i].file);
      f->b[i].ds = ds;
      f->b[i].file = strdup(file);
      return PD_OK;
    }
  pd_feed_bind *nb = realloc(f->b, sizeof *nb * (size_t)(f->n + 1));
  if (!nb) {
    pd_dataset_close(ds);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  f->b = nb;
  f->b[f->n++] = (pd_feed_bind){v, strdup(file), ds};
  return PD_OK;
}

pd_status pd_feed_bind_spec(pd_feed *f, const pd_net *net, const char *spec, const char *what, pd_error *err) {
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec || !eq[1])
    return pd_errorf(err, PD_ERR_INPUT, "%s \"%s\": expected VAR=FILE, e.g. %s pixels=train-images.idx3-ubyte.gz", what,
                     spec, what);
  char *var = strndup(spec, (size_t)(eq - spec)); /* a name of any length */
  if (!var) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  pd_status st = pd_feed_bind_file(f, net, var, eq + 1, what, err);
  free(var);
  return st;
}

pd_status pd_feed_bind_all(pd_feed *f, const pd_net *net, const char *net_path, Paddle__DataBinding *const *file_b,
                           size_t n_file, const char *file_what, const char *const *flags, int n_flags,
                           const char *flag_what, pd_error *err) {
  for (size_t i = 0; i < n_file; i++) {
    const char *var = file_b[i]->var;
    size_t len = strlen(var);
    bool overridden = false;
    for (int k = 0; k < n_flags; k++) overridden |= strncmp(flags[k], var, len) == 0 && flags[k][len] == '=';
    if (overridden) continue;
    char *path = pd_path_beside(net_path, file_b[i]->file);
    if (!path) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    pd_status st = pd_feed_bind_file(f, net, var, path, file_what, err);
    free(path);
    if (st) return st;
  }
  for (int k = 0; k < n_flags; k++) {
    pd_status st = pd_feed_bind_spec(f, net, flags[k], flag_what, err);
    if (st) return st;
  }
  return PD_OK;
}

pd_status pd_feed_check(pd_feed *f, const pd_net *net, const bool *active, const char *hint, pd_error *err) {
  for (int o = 0; o < net->nops; o++) {
    if (active && !active[o]) continue;
    const pd_op *op = &net->ops[o];
    for (int s = 0; s < op->def->n_inputs; s++)
      for (int i = 0; i < op->in[s].n; i++) {
        int v = op->in[s].vars[i];
        if (net->vars[v].kind != PD_VAR_DATA) continue;
        bool bound = false;
        for (int k = 0; k < f->n; k++) bound |= f->b[k].var == v;
        if (!bound)
          return pd_errorf(err, PD_ERR_INPUT, "data variable \"%s\" (read by op #%d \"%s\") has no data: %s",
                           net->vars[v].name, o, op->def->type, hint);
      }
  }
  f->rows = -1;
  for (int k = 0; k < f->n; k++) {
    int64_t rows = pd_dataset_rows(f->b[k].ds);
    if (f->rows >= 0 && rows != f->rows)
      return pd_errorf(err, PD_ERR_INPUT, "%s has %lld rows but %s has %lld; data files of one net must agree",
                       f->b[k].file, (long long)rows, f->b[0].file, (long long)f->rows);
    f->rows = rows;
  }
  if (f->n && f->rows == 0) return pd_errorf(err, PD_ERR_INPUT, "%s has no rows", f->b[0].file);
  /* Every fact the headers give agrees (shapes with the net at bind, rows
   * here): only now is a gzip file inflated, so a huge header that cannot
   * be right costs nothing. */
  for (int k = 0; k < f->n; k++) {
    pd_status st = pd_dataset_load(f->b[k].ds, err);
    if (st) return st;
  }
  return PD_OK;
}

pd_status pd_feed_check_finite(const pd_feed *f, const pd_net *net, const char *skip, pd_error *err) {
  for (int k = 0; k < f->n; k++) {
    int64_t row, elem;
    double v;
    if (pd_dataset_find_nonfinite(f->b[k].ds, NULL, 0, &row, &elem, &v))
      return pd_errorf(err, PD_ERR_INPUT,
                       "%s: row %lld holds %s at element %lld; the data for \"%s\" must be finite (%s skips this "
                       "check)",
                       f->b[k].file, (long long)row, pd_nonfinite_str(v), (long long)elem, net->vars[f->b[k].var].name,
                       skip);
  }
  return PD_OK;
}

pd_status pd_feed_batch(pd_feed *f, pd_runner *r, const int64_t *rows, int64_t n, pd_error *err) {
  for (int k = 0; k < f->n; k++) {
    const pd_var_info *vi = &r->net->vars[f->b[k].var];
    pd_tensor *t = r->t[f->b[k].var];
    pd_status st = pd_dataset_read(f->b[k].ds, rows, n, vi->meta.dtype, t, err);
    if (st) return st;
    int64_t dims[PD_MAX_DIMS];
    dims[0] = n;
    for (int d = 1; d < vi->meta.ndim; d++) dims[d] = vi->meta.dims[d];
    if ((st = pd_tensor_set_dims(t, vi->meta.ndim, dims, err))) return st;
  }
  return PD_OK;
}

void pd_feed_close(pd_feed *f) {
  for (int k = 0; k < f->n; k++) {
    pd_dataset_close(f->b[k].ds);
    free(f->b[k].file);
  }
  free(f->b);
  memset(f, 0, sizeof *f);
}
