/* feed.c — data bindings and mini-batch reads (see feed.h). */
#include "io/feed.h"

#include "base/util.h"
#include "io/textdata.h"
#include "text/textformat.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A bad binding: the message at the field's place in the NetDesc. */
static pd_status fail_binding(const pd_net *net, const Paddle__DataBinding *b, const char *field, pd_error *err,
                              const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static pd_status fail_binding(const pd_net *net, const Paddle__DataBinding *b, const char *field, pd_error *err,
                              const char *fmt, ...) {
  char msg[PD_ERROR_MAX / 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line = 0, col = 0;
  const ProtobufCFieldDescriptor *fd =
      protobuf_c_message_descriptor_get_field_by_name(((const ProtobufCMessage *)b)->descriptor, field);
  if (!fd || !pd_srcmap_find(&net->map, b, fd, 0, &line, &col)) pd_srcmap_find(&net->map, b, NULL, 0, &line, &col);
  if (line <= 0) return pd_errorf(err, PD_ERR_INPUT, "%s: %s", net->file, msg);
  return pd_error_at(err, PD_ERR_INPUT, net->file, net->src, net->src_len, line, col, "%s", msg);
}

/* Binds data variable v to ds (replacing its binding); takes ds. */
static pd_status add_binding(pd_feed *f, int v, const char *file, pd_dataset *ds, pd_error *err) {
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

static bool is_text(const Paddle__DataBinding *b) { return b->type && strcmp(b->type, "text") == 0; }

/* What a binding's fields say, checked before anything is opened: its type,
 * and text-only fields on a text binding only. */
static pd_status check_binding(const pd_net *net, const Paddle__DataBinding *b, bool in_eval_list, pd_error *err) {
  if (b->type && *b->type && !is_text(b))
    return fail_binding(net, b, "type", err,
                        "data binding of \"%s\": unknown type \"%s\"; use \"text\" or leave it out", b->var, b->type);
  if (!is_text(b)) {
    const char *f = b->n_more_files   ? "more_files"
                    : b->target       ? "target"
                    : b->keep         ? "keep"
                    : b->vocab        ? "vocab"
                    : b->has_held_out ? "held_out"
                                      : NULL;
    if (f)
      return fail_binding(net, b, f, err, "data binding of \"%s\": %s belongs to a binding of type \"text\"", b->var,
                          f);
    return PD_OK;
  }
  if (b->target && strcmp(b->target, b->var) == 0)
    return fail_binding(net, b, "target", err, "text binding: target \"%s\" is also its var", b->target);
  if (b->keep && (strcmp(b->keep, b->var) == 0 || (b->target && strcmp(b->keep, b->target) == 0)))
    return fail_binding(net, b, "keep", err, "text binding: keep \"%s\" is also its %s", b->keep,
                        strcmp(b->keep, b->var) == 0 ? "var" : "target");
  if (b->has_held_out && !(b->held_out >= 0 && b->held_out < 1))
    return fail_binding(net, b, "held_out", err, "text binding: held_out must be in [0, 1), got %g", b->held_out);
  if (in_eval_list && b->held_out > 0)
    return fail_binding(net, b, "held_out", err,
                        "text binding: held_out belongs in train.data (its files' tails are evaluated); a text "
                        "binding in train.eval_data reads its files whole");
  return PD_OK;
}

/* Data variable `name` of a text binding, declared as the role needs. */
static pd_status text_var(const pd_net *net, const Paddle__DataBinding *b, const char *field, const char *name,
                          int role, int64_t streams, int64_t *window, int *out, pd_error *err) {
  int v = pd_net_var(net, name);
  if (v < 0 || net->vars[v].kind != PD_VAR_DATA)
    return fail_binding(net, b, field, err, "text binding: %s \"%s\" is no data variable of the net", field, name);
  const pd_tensor *m = &net->vars[v].meta;
  char sb[160];
  if (role == PD_TEXT_KEEP) {
    bool one = m->ndim >= 1 && (m->dims[0] == -1 || m->dims[0] == streams);
    for (int d = 1; d < m->ndim; d++) one = one && m->dims[d] == 1;
    if (!pd_dtype_is_float(m->dtype) || !one)
      return fail_binding(net, b, field, err,
                          "text binding: keep \"%s\" must be a float variable [-1, 1] (or [%lld, 1]: the batch "
                          "size), not %s %s",
                          name, (long long)streams, pd_dtype_name(m->dtype),
                          pd_dims_str(m->ndim, m->dims, sb, sizeof sb));
  } else {
    bool ok =
        !pd_dtype_is_float(m->dtype) && m->ndim == 2 && (m->dims[0] == -1 || m->dims[0] == streams) && m->dims[1] > 0;
    if (ok && *window > 0 && m->dims[1] != *window) ok = false;
    if (!ok)
      return fail_binding(net, b, field, err,
                          "text binding: %s \"%s\" must be an integer variable [-1, T] (or [%lld, T]: the batch "
                          "size) with a fixed window T%s, not %s %s",
                          field, name, (long long)streams, *window > 0 ? " (that of var)" : "", pd_dtype_name(m->dtype),
                          pd_dims_str(m->ndim, m->dims, sb, sizeof sb));
    *window = m->dims[1];
  }
  *out = v;
  return PD_OK;
}

/* A binding of type text: its corpus opened for the part (training or
 * held-out), and its variables bound to the roles' rows. */
static pd_status bind_text(pd_feed *f, const pd_net *net, const char *net_path, const Paddle__DataBinding *b,
                           const char *what, bool eval_part, pd_error *err) {
  if (f->text_streams <= 0)
    return fail_binding(net, b, "type", err,
                        "%s: text data is read by train only (it needs the batch size: one stream "
                        "a row)",
                        what);
  const char *names[3] = {b->var, b->target, b->keep}, *fields[3] = {"var", "target", "keep"};
  int vars[3] = {-1, -1, -1};
  int64_t window = 0;
  for (int r = 0; r < 3; r++) {
    if (!names[r]) continue;
    pd_status st = text_var(net, b, fields[r], names[r], r, f->text_streams, &window, &vars[r], err);
    if (st) return st;
    for (int k = 0; k < f->n; k++)
      if (f->b[k].var == vars[r])
        return fail_binding(net, b, fields[r], err, "%s: \"%s\" is bound twice (here and to %s)", what, names[r],
                            f->b[k].file);
  }
  size_t np = 1 + b->n_more_files;
  char **paths = calloc(np, sizeof *paths);
  char *vocab = b->vocab ? pd_path_beside(net_path, b->vocab) : NULL;
  pd_status st = paths && (vocab || !b->vocab) ? PD_OK : pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (size_t i = 0; i < np && !st; i++)
    if (!(paths[i] = pd_path_beside(net_path, i ? b->more_files[i - 1] : b->file)))
      st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  pd_text *text = NULL;
  if (!st) {
    pd_text_opts o = {.patterns = (const char *const *)paths,
                      .npatterns = (int)np,
                      .vocab = vocab,
                      .held_out = b->held_out,
                      .eval_part = eval_part,
                      .streams = f->text_streams,
                      .window = window};
    st = pd_text_open(&o, &text, err);
  }
  for (int r = 0; r < 3 && !st; r++) {
    if (vars[r] < 0) continue;
    pd_dataset *ds;
    if (!(st = pd_dataset_open_text(text, r, paths[0], &ds, err))) st = add_binding(f, vars[r], paths[0], ds, err);
  }
  if (!st) f->text = true;
  pd_text_close(text);
  for (size_t i = 0; paths && i < np; i++) free(paths[i]);
  free(paths), free(vocab);
  return st;
}

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
  bool in_eval_list = strcmp(file_what, "train.eval_data") == 0;
  for (size_t i = 0; i < n_file; i++) {
    pd_status st = check_binding(net, file_b[i], in_eval_list, err);
    if (st) return st;
  }
  for (size_t i = 0; i < n_file; i++) {
    const char *var = file_b[i]->var;
    size_t len = strlen(var);
    bool overridden = false;
    for (int k = 0; k < n_flags; k++) overridden |= strncmp(flags[k], var, len) == 0 && flags[k][len] == '=';
    if (overridden) continue;
    if (is_text(file_b[i])) {
      pd_status st = bind_text(f, net, net_path, file_b[i], file_what, false, err);
      if (st) return st;
      continue;
    }
    int v = pd_net_var(net, var);
    for (int k = 0; v >= 0 && k < f->n; k++)
      if (f->b[k].var == v && pd_dataset_text(f->b[k].ds))
        return fail_binding(net, file_b[i], "var", err, "%s: \"%s\" is bound twice (here and to the text %s)",
                            file_what, var, f->b[k].file);
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

pd_status pd_feed_bind_held_out(pd_feed *f, const pd_net *net, const char *net_path, Paddle__DataBinding *const *file_b,
                                size_t n_file, pd_error *err) {
  for (size_t i = 0; i < n_file; i++) {
    const Paddle__DataBinding *b = file_b[i];
    if (!is_text(b) || !(b->held_out > 0)) continue;
    pd_status st = bind_text(f, net, net_path, b, "held_out (the evaluation of this text's tails)", true, err);
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

const uint8_t *pd_feed_vocab(const pd_feed *f, int *n) {
  *n = 0;
  for (int k = 0; k < f->n; k++) {
    const pd_text *t = pd_dataset_text(f->b[k].ds);
    const uint8_t *v = t ? pd_text_vocab(t, n) : NULL;
    if (v) return v;
  }
  return NULL;
}

void pd_feed_close(pd_feed *f) {
  for (int k = 0; k < f->n; k++) {
    pd_dataset_close(f->b[k].ds);
    free(f->b[k].file);
  }
  free(f->b);
  memset(f, 0, sizeof *f);
}
