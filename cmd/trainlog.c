/* trainlog.c — train's output for a person (numbers, durations) and for a
 * script (the --log file's JSON, every write checked), and the scan of the
 * data's class labels before the first step. */
#include "trainlog.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "io/dataset.h"

const char *pd_fmt_num(char *buf, size_t size, double v) {
  if (isfinite(v))
    snprintf(buf, size, "%.5g", v);
  else
    snprintf(buf, size, "%s", pd_nonfinite_str(v));
  return buf;
}

const char *pd_fmt_secs(char *buf, size_t size, double s) {
  if (!(s >= 0)) s = 0;
  if (s >= 100)
    snprintf(buf, size, "%.0f s", s);
  else if (s >= 0.001)
    snprintf(buf, size, "%.3g s", s);
  else
    snprintf(buf, size, "%.2g s", s);
  return buf;
}

const char *pd_fmt_eta(char *buf, size_t size, double s) {
  if (!(s >= 0) || s > 1e9) {
    snprintf(buf, size, "?");
    return buf;
  }
  long long r = (long long)(s + 0.5);
  if (r < 60)
    snprintf(buf, size, "%llds", r);
  else if (r < 3600)
    snprintf(buf, size, "%lldm%02llds", r / 60, r % 60);
  else
    snprintf(buf, size, "%lldh%02lldm", r / 3600, r % 3600 / 60);
  return buf;
}

void pd_json_str(FILE *f, const char *s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p == '\n')
      fputs("\\n", f);
    else if (*p == '\t')
      fputs("\\t", f);
    else if (*p < 0x20 || *p == 0x7f)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

void pd_json_num(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, "%.9g", v);
  else
    fputs("null", f);
}

void pd_json_feed(FILE *f, const char *key, const pd_net *net, const pd_feed *feed) {
  fprintf(f, ",\"%s\":{", key);
  for (int k = 0; k < feed->n; k++) {
    if (k) fputc(',', f);
    pd_json_str(f, net->vars[feed->b[k].var].name);
    fputc(':', f);
    pd_json_str(f, feed->b[k].file);
  }
  fputc('}', f);
}

pd_status pd_log_end_record(FILE *f, const char *path, pd_error *err) {
  fputs("}\n", f);
  errno = 0;
  if (fflush(f) == 0 && !ferror(f)) return PD_OK;
  int e = errno;
  return pd_errorf(err, PD_ERR_RUNTIME, "--log %s: cannot write the log: %s", path, e ? strerror(e) : "write error");
}

pd_status pd_log_close(FILE *f, const char *path, pd_error *err) {
  errno = 0;
  bool bad = fflush(f) != 0 || ferror(f);
  int e = errno;
  if (fclose(f) != 0 && !bad) bad = true, e = errno;
  if (!bad) return PD_OK;
  return pd_errorf(err, PD_ERR_RUNTIME, "--log %s: cannot write the log: %s", path, e ? strerror(e) : "write error");
}

/* Rows read at a time while scanning labels. */
enum { SCAN_ROWS = 65536 };

static pd_status scan_file(const pd_net *net, int o, const pd_feed_bind *b, int64_t classes, const char *what,
                           pd_error *err) {
  const pd_dataset *ds = b->ds;
  int64_t rows = pd_dataset_rows(ds), per_row = 1;
  for (int d = 0; d < pd_dataset_row_ndim(ds); d++) per_row *= pd_dataset_row_dims(ds)[d];
  if (per_row <= 0) return PD_OK;
  int64_t chunk = SCAN_ROWS;
  int64_t *idx = malloc(sizeof *idx * (size_t)chunk);
  if (!idx) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  pd_tensor t;
  pd_tensor_init(&t, PD_I64);
  pd_status st = PD_OK;
  for (int64_t lo = 0; lo < rows && !st; lo += chunk) {
    int64_t n = rows - lo < chunk ? rows - lo : chunk;
    for (int64_t i = 0; i < n; i++) idx[i] = lo + i;
    if ((st = pd_dataset_read(ds, idx, n, PD_I64, &t, err))) break;
    const int64_t *v = pd_tensor_data(&t);
    int64_t m = n * per_row;
    for (int64_t k = 0; k < m; k++)
      if (v[k] < 0 || v[k] >= classes) {
        char l[200];
        st = pd_errorf(err, PD_ERR_INPUT,
                       "%s, row %lld: label %lld is out of range [0, %lld) of %s (the %s data's labels are checked "
                       "before the first step)",
                       b->file, (long long)(lo + k / per_row), (long long)v[k], (long long)classes,
                       pd_net_op_label(net, o, l, sizeof l), what);
        break;
      }
  }
  pd_tensor_release(&t);
  free(idx);
  return st;
}

pd_status pd_check_labels(const pd_net *net, const pd_feed *feed, const char *what, pd_error *err) {
  for (int o = 0; o < net->n_forward; o++) {
    const pd_op *op = &net->ops[o];
    bool soft = false;
    for (int a = 0; a < op->def->n_attrs; a++)
      if (strcmp(op->def->attrs[a].name, "soft_label") == 0) soft = op->attrs[a].b;
    if (soft || op->def->n_inputs < 2 || op->in[0].n < 1) continue;
    const pd_tensor *scores = &net->vars[op->in[0].vars[0]].meta;
    int64_t classes = scores->ndim > 0 ? scores->dims[scores->ndim - 1] : -1;
    if (classes <= 0) continue;
    for (int s = 1; s < op->def->n_inputs; s++) {
      if (strcmp(op->def->inputs[s].name, "Label") != 0 || op->in[s].n < 1) continue;
      int v = op->in[s].vars[0];
      for (int k = 0; k < feed->n; k++) {
        if (feed->b[k].var != v || pd_dtype_is_float(pd_dataset_dtype(feed->b[k].ds))) continue;
        pd_status st = scan_file(net, o, &feed->b[k], classes, what, err);
        if (st) return st;
      }
    }
  }
  return PD_OK;
}
