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
    "                     (empty for a net without any, as `import` writes it)\n"
    "  --data VAR=FILE    a data variable and its .npy or IDX (.gz) file; a variable\n"
    "                     with no batch dim (an imported [3, 4], say) takes a .npy\n"
    "                     of exactly its shape whole, the same for every batch\n"
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

/* What the inference steps share: the net and its runner, the fetched
 * variables, and the batching. */
typedef struct inference {
  pd_net *net;
  pd_scope *scope;
  pd_feed feed;
  pd_runner r;
  int nf;
  fetch *f;
  int *targets;  /* the fetched variables */
  bool *active;  /* the ops they need */
  int64_t *rows; /* a batch's rows */
  long long batch;
  int64_t total; /* rows in all */
  /* data variables with no batch dimension (a fixed first dim) given a
   * .npy file of exactly their shape: fed whole to every batch */
  struct whole {
    int var;
    pd_tensor t;
  } * whole;
  int nwhole;
} inference;

/* --data VAR=FILE for a data variable with no batch dim (an imported
 * model's [3, 4], say) and a .npy file of exactly its shape: read whole
 * (true), rather than as rows. */
static pd_status bind_whole(inference *in, const char *spec, bool *taken, pd_error *err) {
  *taken = false;
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec) return PD_OK;
  char *name = strndup(spec, (size_t)(eq - spec));
  if (!name) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  int v = pd_net_var(in->net, name);
  free(name);
  const pd_var_info *vi = v >= 0 ? &in->net->vars[v] : NULL;
  size_t len = strlen(eq + 1);
  if (!vi || vi->kind != PD_VAR_DATA || vi->meta.ndim < 1 || vi->meta.dims[0] < 0 || len < 4 ||
      strcmp(eq + 1 + len - 4, ".npy") != 0)
    return PD_OK;
  pd_npy_header h;
  pd_error e = {0};
  if (pd_npy_read_header(eq + 1, &h, &e) || h.ndim != vi->meta.ndim ||
      memcmp(h.dims, vi->meta.dims, sizeof *h.dims * (size_t)h.ndim) != 0)
    return PD_OK; /* read as rows, with that path's messages */
  struct whole *w = realloc(in->whole, sizeof *w * (size_t)(in->nwhole + 1));
  if (!w) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  in->whole = w;
  pd_tensor file;
  pd_tensor_init(&file, h.dtype);
  pd_tensor_init(&w[in->nwhole].t, vi->meta.dtype);
  pd_status st = pd_npy_read(eq + 1, &file, err);
  if (!st) st = pd_tensor_set_dims(&w[in->nwhole].t, h.ndim, h.dims, err);
  if (!st) st = pd_tensor_alloc(&w[in->nwhole].t, err);
  for (int64_t i = 0; !st && i < pd_tensor_numel(&file); i++) /* to the variable's dtype */
    pd_tensor_set(&w[in->nwhole].t, i, pd_tensor_get(&file, i));
  if (!st && file.dtype == PD_I64 && vi->meta.dtype == PD_I64) /* exact, not through a double */
    memcpy(pd_tensor_data(&w[in->nwhole].t), pd_tensor_data(&file), pd_tensor_bytes(&file));
  pd_tensor_release(&file);
  if (st) {
    pd_tensor_release(&w[in->nwhole].t);
    pd_error_prefix(err, "--data %s", spec);
    return st;
  }
  w[in->nwhole++].var = v;
  *taken = true;
  return PD_OK;
}

/* Each --fetch VAR[=OUT]: a variable of the net, and no two writing one file. */
static pd_status parse_fetches(inference *in, const pd_opt *fetch_opt, pd_error *err) {
  pd_status st = PD_OK;
  for (int i = 0; i < in->nf && !st; i++) {
    fetch *f = in->f;
    pd_tensor_init(&f[i].acc, PD_F32);
    const char *spec = fetch_opt->values[i], *eq = strchr(spec, '=');
    size_t len = eq ? (size_t)(eq - spec) : strlen(spec);
    if (len == 0 || (eq && !eq[1]))
      return pd_errorf(err, PD_ERR_INPUT, "--fetch \"%s\": expected VAR or VAR=OUT.npy", spec);
    char *name = strndup(spec, len); /* a name of any length */
    if (!name) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    f[i].out = eq ? eq + 1 : NULL;
    f[i].var = in->targets[i] = pd_net_var(in->net, name);
    if (f[i].var < 0) st = pd_errorf(err, PD_ERR_INPUT, "--fetch: the net has no variable \"%s\"", name);
    for (int j = 0; j < i && !st && f[i].out; j++)
      if (f[j].out && same_output(f[j].out, f[i].out))
        st = pd_errorf(err, PD_ERR_INPUT, "--fetch %s and --fetch %s write one file; give each its own",
                       fetch_opt->values[j], spec);
    free(name);
  }
  return st;
}

/* The ops the fetches need, their data and parameters, and the runner on
 * the place. */
static pd_status prepare(inference *in, const pd_opt *params, const pd_opt *data, pd_place place, pd_error *err) {
  pd_net *net = in->net;
  pd_status st = PD_OK;
  if (!(in->active = calloc((size_t)net->nops + 1, 1))) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  pd_net_prune(net, in->targets, in->nf, in->active);
  st = pd_net_select_kernels(net, place.kind, err);
  for (int i = 0; i < data->n_values && !st; i++) {
    bool whole;
    st = bind_whole(in, data->values[i], &whole, err);
    if (!st && !whole) st = pd_feed_bind_spec(&in->feed, net, data->values[i], "--data", err);
  }
  /* the feed checks that every data variable has rows: the whole ones are
   * bound here, so they are not data to it meanwhile */
  for (int i = 0; i < in->nwhole; i++) net->vars[in->whole[i].var].kind = PD_VAR_STATE;
  if (!st) st = pd_feed_check(&in->feed, net, in->active, "give --data VAR=FILE", err);
  for (int i = 0; i < in->nwhole; i++) net->vars[in->whole[i].var].kind = PD_VAR_DATA;
  if (!st && !(in->scope = pd_scope_new(NULL))) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (!st && !params->value) {
    bool any = false;
    for (int v = 0; v < net->nvars; v++) any |= net->vars[v].kind == PD_VAR_PARAM;
    if (any) st = pd_errorf(err, PD_ERR_INPUT, "the net has parameters: give --params DIR");
  }
  bool need = false; /* an empty directory serves a net with nothing to load */
  for (int v = 0; v < net->nvars; v++) need |= net->vars[v].kind == PD_VAR_PARAM || net->vars[v].kind == PD_VAR_STATE;
  bool fetch_value = false; /* a fetched parameter or constant is read by no op: load all */
  for (int i = 0; i < in->nf; i++)
    fetch_value |= net->vars[in->f[i].var].kind != PD_VAR_DATA && net->vars[in->f[i].var].kind != PD_VAR_TEMP;
  if (!st && params->value && (need || !pd_cli_empty_dir(params->value)))
    st = pd_params_load(net, in->scope, params->value, fetch_value ? NULL : in->active, true, NULL, NULL, err);
  if (!st) st = pd_runner_init(&in->r, net, in->scope, in->active, err);
  if (!st) st = pd_runner_plan_memory(&in->r, in->targets, in->nf, false, err); /* the fetched variables stay */
  if (!st) st = pd_runner_set_place(&in->r, place, err);
  return st;
}

/* The batching (one row when there is no data), and what would fail later:
 * a fetch that differs per batch, an output that cannot be written (a run
 * that fails leaves no output behind). */
static pd_status plan_batches(inference *in, pd_error *err) {
  pd_net *net = in->net;
  in->total = in->feed.n ? in->feed.rows : 1;
  if (!in->feed.n) in->batch = 1;
  int64_t most = in->batch < in->total ? in->batch : in->total; /* a batch holds at most every row */
  pd_status st = pd_net_check_memory(net, most, err);
  if (st) return st;
  in->r.exec.training = false;
  if (!(in->rows = pd_malloc_array((size_t)most, sizeof *in->rows)))
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int i = 0; i < in->nf; i++) {
    const pd_var_info *vi = &net->vars[in->f[i].var];
    bool batched = vi->meta.ndim >= 1 && vi->meta.dims[0] == -1;
    if (!batched && in->total > in->batch)
      return pd_errorf(err, PD_ERR_INPUT,
                       "--fetch %s: \"%s\" has no batch dimension (shape %s), so it differs per batch; fetch it with "
                       "--batch-size >= %lld (all rows in one batch)",
                       vi->name, vi->name, "[...]", (long long)in->total);
  }
  for (int i = 0; i < in->nf; i++)
    if (in->f[i].out && (st = pd_check_creatable(in->f[i].out, err))) return st;
  return PD_OK;
}

/* Fetch i's value in the batch from `start`, copied into its rows of all
 * (sized at the first batch). */
static pd_status collect(inference *in, int i, int64_t start, pd_error *err) {
  fetch *f = &in->f[i];
  pd_status st = pd_runner_fetch(&in->r, f->var, err);
  if (st) return st;
  const pd_tensor *t = in->r.t[f->var];
  const pd_var_info *vi = &in->net->vars[f->var];
  bool batched = vi->meta.ndim >= 1 && vi->meta.dims[0] == -1;
  int64_t n = in->total - start < in->batch ? in->total - start : in->batch;
  if (batched && (t->ndim < 1 || t->dims[0] != n)) { /* its -1 is not the batch: rows cannot be joined */
    char d[128];
    return pd_errorf(err, PD_ERR_INPUT,
                     "--fetch %s: \"%s\" has %s for a batch of %lld rows: its first dim is not the batch, so batches "
                     "cannot be joined; fetch it with --batch-size >= %lld (all rows in one batch) if it is one",
                     vi->name, vi->name, pd_dims_str(t->ndim, t->dims, d, sizeof d), (long long)n,
                     (long long)in->total);
  }
  if (start == 0) {
    int64_t dims[PD_MAX_DIMS];
    memcpy(dims, t->dims, sizeof dims);
    if (batched) dims[0] = in->total;
    f->acc.dtype = t->dtype;
    st = pd_tensor_set_dims(&f->acc, t->ndim, dims, err);
    if (!st) st = pd_tensor_alloc(&f->acc, err);
    f->row_elems = batched && t->dims[0] ? pd_tensor_numel(t) / t->dims[0] : pd_tensor_numel(t);
  }
  if (st) return st;
  size_t es = pd_dtype_size(t->dtype);
  size_t off = batched ? (size_t)(start * f->row_elems) * es : 0;
  memcpy((char *)pd_tensor_data(&f->acc) + off, pd_tensor_data(t), pd_tensor_bytes(t));
  return PD_OK;
}

/* Every batch run and its fetches collected. */
static pd_status run_batches(inference *in, pd_error *err) {
  pd_status st = PD_OK;
  for (int64_t start = 0; start < in->total && !st; start += in->batch) {
    int64_t n = in->total - start < in->batch ? in->total - start : in->batch;
    for (int64_t i = 0; i < n; i++) in->rows[i] = start + i;
    if (in->feed.n) st = pd_feed_batch(&in->feed, &in->r, in->rows, n, err);
    for (int i = 0; i < in->nwhole && !st; i++) st = pd_tensor_copy(in->r.t[in->whole[i].var], &in->whole[i].t, err);
    if (!st) st = pd_runner_run(&in->r, 0, in->net->nops, err);
    for (int i = 0; i < in->nf && !st; i++) st = collect(in, i, start, err);
  }
  return st;
}

/* The .npy outputs first, then the text ones on stdout. */
static pd_status write_outputs(inference *in, pd_error *err) {
  pd_status st = PD_OK;
  for (int i = 0; i < in->nf && !st; i++)
    if (in->f[i].out) st = pd_npy_write(in->f[i].out, &in->f[i].acc, err);
  for (int i = 0; i < in->nf && !st; i++)
    if (!in->f[i].out) print_text(in->net->vars[in->f[i].var].name, &in->f[i].acc);
  return st;
}

static void free_inference(inference *in) {
  for (int i = 0; in->f && i < in->nf; i++) pd_tensor_release(&in->f[i].acc);
  free(in->f), free(in->targets), free(in->active), free(in->rows);
  for (int i = 0; i < in->nwhole; i++) pd_tensor_release(&in->whole[i].t);
  free(in->whole);
  pd_runner_free(&in->r);
  pd_feed_close(&in->feed);
  pd_scope_free(in->scope);
  pd_net_free(in->net);
  pd_gpu_close();
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
  inference in = {.batch = 256, .nf = opts[FETCH].n_values};
  long long threads = 0;
  if ((opts[BATCH].value && !pd_cli_int("infer", "--batch-size", opts[BATCH].value, 1, PD_MAX_BATCH, &in.batch)) ||
      (opts[THREADS].value && !pd_cli_int("infer", "--threads", opts[THREADS].value, 1, PD_MAX_THREADS, &threads)) ||
      !pd_cli_unique_vars("infer", &opts[DATA]))
    goto out;
  pd_set_threads((int)threads);
  pd_place place;
  if ((code = pd_cli_device("infer", opts, DEV, &place))) goto out;

  pd_error err = {0};
  in.f = calloc((size_t)in.nf, sizeof *in.f);
  in.targets = calloc((size_t)in.nf, sizeof *in.targets);
  pd_status st = !in.f || !in.targets ? pd_errorf(&err, PD_ERR_RUNTIME, "out of memory") : PD_OK;
  if (!st) st = pd_net_load(pos[0], NULL, &in.net, &err);
  if (!st) st = parse_fetches(&in, &opts[FETCH], &err);
  if (!st) st = prepare(&in, &opts[PARAMS], &opts[DATA], place, &err);
  if (!st) st = plan_batches(&in, &err);
  if (!st) st = run_batches(&in, &err);
  if (!st) st = write_outputs(&in, &err);
  code = st ? pd_cli_fail(&err) : 0;
  if (!st && fflush(stdout)) code = 1;
  free_inference(&in);
out:
  pd_cli_free(opts, NOPT);
  return code;
}
