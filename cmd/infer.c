/* infer.c — `paddle-run infer`: run a trained network on data. Only the ops
 * the fetched variables depend on run (no label needed); results go to .npy
 * files (written only once every batch succeeded) or to stdout as text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "io/feed.h"
#include "gpu/gpurt.h"
#include "core/net.h"
#include "io/npy.h"
#include "io/params.h"
#include "base/util.h"
#include "cpu/parallel.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_infer = {
    "infer", "run a trained network on data",
    "usage: paddle-run infer NET.pbtxt --params DIR --data VAR=FILE... --fetch VAR[=OUT.npy]...\n"
    "                        [--batch-size N] [--threads N] [--device cpu|gpu[:N]]\n"
    "\n"
    "Runs the ops that the fetched variables need (a label is not needed to\n"
    "predict) over every row of the data files, in batches.\n"
    "\n"
    "  --params DIR       parameters: a directory of NAME.npy files or a checkpoint\n"
    "  --data VAR=FILE    a data variable and its .npy or IDX (.gz) file\n"
    "  --fetch VAR[=OUT]  a variable to output: to OUT.npy, or as text to stdout\n"
    "  --batch-size N     rows per batch (default 256; at most 2^31 - 1)\n"
    "  --threads N        threads for matrix products (default: all cores)\n" PD_DEVICE_HELP,
    run};

typedef struct fetch {
  int var;
  const char *out; /* NULL: stdout */
  pd_tensor acc;   /* all rows */
  int64_t row_elems;
} fetch;

static void print_text(const char *name, const pd_tensor *t) {
  char d[128];
  printf("%s %s %s\n", name, pd_dtype_name(t->dtype), pd_dims_str(t->ndim, t->dims, d, sizeof d));
  int64_t n = pd_tensor_numel(t), cols = t->ndim >= 2 ? n / (t->dims[0] ? t->dims[0] : 1) : n;
  for (int64_t i = 0; i < n; i++) {
    double v = pd_tensor_get(t, i);
    if (pd_dtype_is_float(t->dtype) && isnan(v)) /* "nan", never glibc's "-nan" */
      printf("%snan", i % cols ? " " : "");
    else if (pd_dtype_is_float(t->dtype))
      printf("%s%.9g", i % cols ? " " : "", v);
    else
      printf("%s%lld", i % cols ? " " : "", (long long)v);
    if ((i + 1) % cols == 0) putchar('\n');
  }
}

/* Whether two output paths name one file: the same text, the same existing
 * file, or the same name in the same directory. */
static bool same_output(const char *a, const char *b) {
  struct stat sa, sb;
  if (!strcmp(a, b)) return true;
  if (stat(a, &sa) == 0 && stat(b, &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  const char *ba = strrchr(a, '/'), *bb = strrchr(b, '/');
  ba = ba ? ba + 1 : a, bb = bb ? bb + 1 : b;
  if (strcmp(ba, bb)) return false;
  char da[4096], db[4096];
  snprintf(da, sizeof da, "%.*s", ba == a ? 1 : (int)(ba - a), ba == a ? "." : a);
  snprintf(db, sizeof db, "%.*s", bb == b ? 1 : (int)(bb - b), bb == b ? "." : b);
  return stat(da, &sa) == 0 && stat(db, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int run(int argc, char **argv) {
  enum { PARAMS, DATA, FETCH, BATCH, THREADS, DEV, NOPT = DEV + PD_N_DEVICE_OPTS };
  pd_opt opts[NOPT] = {[PARAMS] = {.name = "--params", .has_value = true},
                       [DATA] = {.name = "--data", .has_value = true, .repeat = true},
                       [FETCH] = {.name = "--fetch", .has_value = true, .repeat = true},
                       [BATCH] = {.name = "--batch-size", .has_value = true},
                       [THREADS] = {.name = "--threads", .has_value = true},
                       PD_DEVICE_OPTS(DEV)};
  char *pos[1];
  int code = 0;
  int npos = pd_cli_parse(&pd_cmd_infer, argc, argv, opts, NOPT, pos, 1, &code);
  if (npos < 0) goto out;
  code = 2;
  if (npos != 1) {
    pd_cli_usage_error("infer", "expected NET.pbtxt; see `paddle-run infer --help`");
    goto out;
  }
  if (!opts[FETCH].n_values) {
    pd_cli_usage_error("infer", "nothing to compute: give --fetch VAR[=OUT.npy]");
    goto out;
  }
  long long batch = 256, threads = 0;
  if ((opts[BATCH].value && !pd_cli_int("infer", "--batch-size", opts[BATCH].value, 1, PD_MAX_BATCH, &batch)) ||
      (opts[THREADS].value && !pd_cli_int("infer", "--threads", opts[THREADS].value, 1, PD_MAX_THREADS, &threads)))
    goto out;
  pd_set_threads((int)threads);
  pd_place place;
  if ((code = pd_cli_device("infer", opts, DEV, &place))) goto out;

  pd_error err = {0};
  pd_net *net = NULL;
  pd_scope *scope = NULL;
  pd_feed feed = {0};
  pd_runner r = {0};
  int nf = opts[FETCH].n_values;
  fetch *f = calloc((size_t)nf, sizeof *f);
  bool *active = NULL;
  int *targets = calloc((size_t)nf, sizeof *targets);
  int64_t *rows = NULL;
  pd_status st = !f || !targets ? pd_errorf(&err, PD_ERR_RUNTIME, "out of memory") : PD_OK;
  if (!st) st = pd_net_load(pos[0], NULL, &net, &err);
  for (int i = 0; i < nf && !st; i++) {
    pd_tensor_init(&f[i].acc, PD_F32);
    const char *spec = opts[FETCH].values[i], *eq = strchr(spec, '=');
    size_t len = eq ? (size_t)(eq - spec) : strlen(spec);
    if (len == 0 || (eq && !eq[1])) {
      st = pd_errorf(&err, PD_ERR_INPUT, "--fetch \"%s\": expected VAR or VAR=OUT.npy", spec);
      break;
    }
    char *name = strndup(spec, len); /* a name of any length */
    if (!name) {
      st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
      break;
    }
    f[i].out = eq ? eq + 1 : NULL;
    f[i].var = targets[i] = pd_net_var(net, name);
    if (f[i].var < 0) st = pd_errorf(&err, PD_ERR_INPUT, "--fetch: the net has no variable \"%s\"", name);
    for (int j = 0; j < i && !st && f[i].out; j++)
      if (f[j].out && same_output(f[j].out, f[i].out))
        st = pd_errorf(&err, PD_ERR_INPUT, "--fetch %s and --fetch %s write one file; give each its own",
                       opts[FETCH].values[j], spec);
    free(name);
  }
  if (!st && !(active = calloc((size_t)net->nops + 1, 1))) st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
  if (!st) {
    pd_net_prune(net, targets, nf, active);
    st = pd_net_select_kernels(net, place.kind, &err);
  }
  for (int i = 0; i < opts[DATA].n_values && !st; i++)
    st = pd_feed_bind_spec(&feed, net, opts[DATA].values[i], "--data", &err);
  if (!st) st = pd_feed_check(&feed, net, active, "give --data VAR=FILE", &err);
  if (!st && !(scope = pd_scope_new(NULL))) st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
  if (!st && !opts[PARAMS].value) {
    bool any = false;
    for (int v = 0; v < net->nvars; v++) any |= net->vars[v].kind == PD_VAR_PARAM;
    if (any) st = pd_errorf(&err, PD_ERR_INPUT, "the net has parameters: give --params DIR");
  }
  if (!st && opts[PARAMS].value) st = pd_params_load(net, scope, opts[PARAMS].value, active, true, NULL, NULL, &err);
  if (!st) st = pd_runner_init(&r, net, scope, active, &err);
  if (!st) st = pd_runner_plan_memory(&r, targets, nf, false, &err); /* the fetched variables stay */
  if (!st) st = pd_runner_set_place(&r, place, &err);
  int64_t total = feed.n ? feed.rows : 1;
  if (!feed.n) batch = 1;
  if (!st) st = pd_net_check_memory(net, batch < total ? batch : total, &err);
  if (!st) {
    r.exec.training = false;
    /* a batch holds at most every row */
    if (!(rows = pd_malloc_array((size_t)(batch < total ? batch : total), sizeof *rows)))
      st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
  }
  for (int i = 0; i < nf && !st; i++) {
    const pd_var_info *vi = &net->vars[f[i].var];
    bool batched = vi->meta.ndim >= 1 && vi->meta.dims[0] == -1;
    if (!batched && total > batch)
      st = pd_errorf(&err, PD_ERR_INPUT,
                     "--fetch %s: \"%s\" has no batch dimension (shape %s), so it differs per batch; fetch it with "
                     "--batch-size >= %lld (all rows in one batch)",
                     vi->name, vi->name, "[...]", (long long)total);
  }
  /* every output must be writable before the first is written: a run that
   * fails leaves no output behind */
  for (int i = 0; i < nf && !st; i++)
    if (f[i].out) st = pd_check_creatable(f[i].out, &err);
  for (int64_t start = 0; start < total && !st; start += batch) {
    int64_t n = total - start < batch ? total - start : batch;
    for (int64_t i = 0; i < n; i++) rows[i] = start + i;
    if (feed.n) st = pd_feed_batch(&feed, &r, rows, n, &err);
    if (!st) st = pd_runner_run(&r, 0, net->nops, &err);
    for (int i = 0; i < nf && !st; i++) {
      if ((st = pd_runner_fetch(&r, f[i].var, &err))) break;
      const pd_tensor *t = r.t[f[i].var];
      const pd_var_info *vi = &net->vars[f[i].var];
      bool batched = vi->meta.ndim >= 1 && vi->meta.dims[0] == -1;
      if (start == 0) {
        int64_t dims[PD_MAX_DIMS];
        memcpy(dims, t->dims, sizeof dims);
        if (batched) dims[0] = total;
        f[i].acc.dtype = t->dtype;
        st = pd_tensor_set_dims(&f[i].acc, t->ndim, dims, &err);
        if (!st) st = pd_tensor_alloc(&f[i].acc, &err);
        f[i].row_elems = batched && t->dims[0] ? pd_tensor_numel(t) / t->dims[0] : pd_tensor_numel(t);
      }
      if (st) break;
      size_t es = pd_dtype_size(t->dtype);
      size_t off = batched ? (size_t)(start * f[i].row_elems) * es : 0;
      memcpy((char *)pd_tensor_data(&f[i].acc) + off, pd_tensor_data(t), pd_tensor_bytes(t));
    }
  }
  for (int i = 0; i < nf && !st; i++)
    if (f[i].out) st = pd_npy_write(f[i].out, &f[i].acc, &err);
  for (int i = 0; i < nf && !st; i++)
    if (!f[i].out) print_text(net->vars[f[i].var].name, &f[i].acc);
  code = st ? pd_cli_fail(&err) : 0;
  if (!st && fflush(stdout)) code = 1;
  for (int i = 0; f && i < nf; i++) pd_tensor_release(&f[i].acc);
  free(f), free(targets), free(active), free(rows);
  pd_runner_free(&r);
  pd_feed_close(&feed);
  pd_scope_free(scope);
  pd_net_free(net);
  pd_gpu_close();
out:
  pd_cli_free(opts, NOPT);
  return code;
}
