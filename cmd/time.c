/* time.c — `paddle-run time`: Caffe's `time` done right. Runs the training
 * step (forward, backward, updates) on one batch for a number of iterations
 * after a warm-up, times every op's kernel, and prints the median per op,
 * its share of the step and its GFLOP/s — as a table or as JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backward.h"
#include "core/block.h"
#include "cpu/blas.h"
#include "cpu/blisarch.h"
#include "cli.h"
#include "io/feed.h"
#include "gpu/gpurt.h"
#include "core/initializer.h"
#include "io/params.h"
#include "base/rng.h"
#include "trainlog.h"
#include "base/util.h"
#include "core/optimizer.h"
#include "cpu/parallel.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_time = {
    "time", "time each op forward and backward",
    "usage: paddle-run time NET.pbtxt [--iterations N] [--warmup N] [--batch-size N]\n"
    "                       [--threads N] [--params DIR] [--data VAR=FILE]... [--forward-only]\n"
    "                       [--json] [--device cpu|gpu[:N]]\n"
    "\n"
    "Runs one batch through the training step (forward, backward and the\n"
    "file's optimizer) --iterations times after --warmup runs, and prints each\n"
    "op (named by its output; an update op by its parameter) with its median\n"
    "time, its share of the step and its GFLOP/s, the step as the sum of the\n"
    "medians and the ops' time in a mean step; on the CPU, then the matrix\n"
    "products' own mean time (timed around each product, with the bias and\n"
    "activation fc applies to each block as it is done), their share of the\n"
    "mean step's ops time and their GFLOP/s.\n"
    "\n"
    "  --iterations N   timed runs (default 20); --warmup N untimed ones first (default:\n"
    "                   3, and more until 0.25 s have passed); each at most 2^31 - 1\n"
    "  --batch-size N   rows in the batch (default: the file's, or 64; at most 2^31 - 1)\n"
    "  --data VAR=FILE  take the batch from a file (default: the file's train.data,\n"
    "                   or generated values: floats uniform in [0, 1), integers 0)\n"
    "  --params DIR     parameters (default: initialised from the seed)\n"
    "  --forward-only   time the forward ops only (no loss needed)\n"
    "  --json           one JSON object instead of the table\n"
    "On a GPU each op's time is measured from launch to completion, waiting for\n"
    "the device after every op (so it includes launch latency; no CUDA graph).\n" PD_DEVICE_HELP,
    run};

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* FLOPs of op o at the runner's current shapes: the def's count, or one per
 * output element. */
static double op_flops(pd_runner *r, int o) {
  const pd_op *op = &r->net->ops[o];
  pd_ctx c = {.op = (pd_op *)op, .vars = r->d ? r->d : r->t};
  if (op->def->flops) return op->def->flops(&c);
  double n = 0;
  for (int s = 0; s < op->def->n_outputs; s++)
    for (int i = 0; i < op->out[s].n; i++) {
      int64_t e = pd_tensor_numel(pd_out_at(&c, s, i));
      if (e > 0) n += (double)e;
    }
  return n;
}

/* What a row of the table names besides the op's type: the parameter an
 * update op updates, else the op's first output. */
static const char *op_name(const pd_net *net, int o) {
  const pd_op *op = &net->ops[o];
  for (int s = 0; s < op->def->n_inputs; s++)
    if (strcmp(op->def->inputs[s].name, "Param") == 0 && op->in[s].n > 0) return net->vars[op->in[s].vars[0]].name;
  for (int s = 0; s < op->def->n_outputs; s++)
    if (op->out[s].n > 0) return net->vars[op->out[s].vars[0]].name;
  return "";
}

static void fill_generated(pd_runner *r, int64_t batch) {
  pd_net *net = r->net;
  uint64_t s = 12345;
  for (int v = 0; v < net->nvars; v++) {
    if (net->vars[v].kind != PD_VAR_DATA) continue;
    pd_tensor *t = r->t[v];
    int64_t dims[PD_MAX_DIMS];
    memcpy(dims, net->vars[v].meta.dims, sizeof dims);
    if (net->vars[v].meta.ndim > 0 && dims[0] < 0) dims[0] = batch;
    t->dtype = net->vars[v].meta.dtype;
    if (pd_tensor_set_dims(t, net->vars[v].meta.ndim, dims, NULL) || pd_tensor_alloc(t, NULL)) continue;
    int64_t n = pd_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) pd_tensor_set(t, i, pd_dtype_is_float(t->dtype) ? pd_rng_uniform(&s) : 0);
  }
}

/* What the timing steps share: the net and its runner, the settings, and
 * the timings taken. */
typedef struct timing {
  pd_net *net;
  pd_scope *scope;
  pd_feed feed;
  pd_runner r;
  pd_place place;
  bool train;                     /* forward, backward and update; else forward only */
  int end;                        /* the ops run: [0, end) */
  long long iters, warmup, batch; /* warmup grows while the warm-up is short of 0.25 s */
  double *samples;                /* every op's time in every timed iteration */
  double *load;                   /* seconds reading each timed batch */
  int64_t *idx;                   /* the batch's rows */
  double all_ops;                 /* seconds in every op of every timed iteration */
  pd_blas_profile prof;
} timing;

/* The net loaded and made trainable (unless --forward-only), its data,
 * parameters and runner on the place, and the timings' buffers. */
static pd_status setup(timing *tm, const char *path, const pd_opt *params, const pd_opt *data, pd_error *err) {
  pd_status st = pd_net_load(path, NULL, &tm->net, err);
  pd_net *net = tm->net;
  const Paddle__TrainDesc *td = st ? NULL : net->desc->train;
  if (!st && tm->train && (!td || !td->loss || !*td->loss))
    st = pd_errorf(err, PD_ERR_INPUT, "%s: no train { loss: ... } to time backward for; use --forward-only", path);
  Paddle__OptimizerDesc dflt = PADDLE__OPTIMIZER_DESC__INIT;
  if (!st && tm->train) st = pd_net_make_trainable(net, td->loss, td->optimizer ? td->optimizer : &dflt, err);
  if (!st) st = pd_net_select_kernels(net, tm->place.kind, err);
  if (!tm->batch) tm->batch = td && td->has_batch_size ? td->batch_size : 64;
  tm->feed.text_streams = tm->batch; /* a text binding: one stream a batch row */
  if (!st)
    st = pd_feed_bind_all(&tm->feed, net, path, td ? td->data : NULL, td ? td->n_data : 0, "train.data", data->values,
                          data->n_values, "--data", err);
  if (!st && tm->feed.n) st = pd_feed_check(&tm->feed, net, NULL, "give --data for every data variable, or none", err);
  if (!st && !(tm->scope = pd_scope_new(NULL))) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (!st && params->value) st = pd_params_load(net, tm->scope, params->value, NULL, false, NULL, NULL, err);
  if (!st) st = pd_init_persistables(net, tm->scope, td ? td->default_init : NULL, td ? td->seed : 1, err);
  if (!st) st = pd_runner_init(&tm->r, net, tm->scope, NULL, err);
  if (!st) st = pd_runner_plan_memory(&tm->r, NULL, 0, tm->train, err); /* as train and infer run */
  if (!st) st = pd_runner_set_place(&tm->r, tm->place, err);
  if (st) return st;
  tm->end = tm->train ? net->nops : net->n_forward;
  if (tm->feed.n && tm->batch > tm->feed.rows) tm->batch = tm->feed.rows;
  st = pd_net_check_memory(net, tm->batch, err);
  size_t nsamples = 0;
  if (!st) st = pd_array_bytes((size_t)tm->iters, (size_t)net->nops + 1, "the timings", &nsamples, err);
  if (st) return st;
  tm->samples = calloc(nsamples, sizeof *tm->samples);
  tm->r.op_seconds = calloc((size_t)net->nops + 1, sizeof *tm->r.op_seconds);
  tm->idx = pd_malloc_array((size_t)tm->batch, sizeof *tm->idx);
  tm->load = calloc((size_t)tm->iters + 1, sizeof *tm->load);
  if (!tm->samples || !tm->r.op_seconds || !tm->idx || !tm->load)
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (!tm->feed.n) fill_generated(&tm->r, tm->batch);
  return PD_OK;
}

/* The warm-up runs, then the timed ones, each op's time kept; on the CPU
 * the matrix products timed too. Without --warmup (`timed_warmup`): at
 * least 3 runs and 0.25 s (the first steps of a process can be slower
 * while caches fill and the scheduler settles the pool's threads on their
 * cores). */
static pd_status time_steps(timing *tm, bool timed_warmup, pd_error *err) {
  pd_net *net = tm->net;
  pd_runner *r = &tm->r;
  pd_status st = PD_OK;
  uint64_t rows_rng = 777;
  int lr = pd_net_var(net, "@lr"), stepv = pd_net_var(net, "@step");
  r->exec.training = true;
  double warm_from = pd_cli_now();
  for (long long it = 0; !st && it < tm->warmup + tm->iters; it++) {
    /* the updates need a learning rate; a tiny one keeps the parameters sane */
    if (lr >= 0) pd_tensor_set(r->t[lr], 0, 1e-6);
    if (stepv >= 0) pd_tensor_set(r->t[stepv], 0, (double)(it + 1));
    if (tm->feed.n) { /* a new batch of random rows each time, as training reads them */
      for (int64_t i = 0; i < tm->batch; i++) tm->idx[i] = (int64_t)(pd_rng_next(&rows_rng) % (uint64_t)tm->feed.rows);
      double t0 = pd_cli_now();
      if ((st = pd_feed_batch(&tm->feed, r, tm->idx, tm->batch, err))) break;
      if (it >= tm->warmup) tm->load[it - tm->warmup] = pd_cli_now() - t0;
    }
    if (it == tm->warmup && tm->place.kind == PD_CPU) pd_blas_profile_start();
    if (it == tm->warmup) /* the blocks' ops are timed from here on */
      for (int i = 0; i < net->nblocks; i++)
        if (net->blocks[i] && net->blocks[i]->op_seconds)
          memset(net->blocks[i]->op_seconds, 0, sizeof(double) * (size_t)net->blocks[i]->net->nops);
    st = pd_runner_run(r, 0, tm->end, err);
    if (timed_warmup && it + 1 == tm->warmup && pd_cli_now() - warm_from < 0.25 && tm->warmup < 100000) tm->warmup++;
    if (!st && it >= tm->warmup)
      for (int o = 0; o < tm->end; o++) {
        tm->samples[(it - tm->warmup) * net->nops + o] = r->op_seconds[o];
        tm->all_ops += r->op_seconds[o];
      }
  }
  return st;
}

/* The summary of the timings: each op's median, and the totals. */
typedef struct summary {
  double *med;    /* each op's median (NULL when out of memory: no op lines) */
  double total;   /* the medians' sum: the step */
  double part[3]; /* forward, backward, update */
  double mean_ms; /* the ops' time in a mean step, beside the products' mean */
  double prod_ms, prod_share, prod_gf;
  double load_ms, load_share;
} summary;

static const char *const pass_names[] = {"forward", "backward", "update"};

static int pass_of(const pd_net *net, int o) {
  return o < net->n_forward ? 0 : o < net->n_forward + net->n_backward ? 1 : 2;
}

/* The products' share is their time over all the ops' time, both summed
 * over the timed iterations; their GFLOP/s over the products alone. */
static void summarise(const timing *tm, summary *s) {
  const pd_net *net = tm->net;
  const pd_blas_profile *prof = &tm->prof;
  s->prod_ms = prof->seconds / (double)tm->iters * 1e3;
  s->prod_share = tm->all_ops > 0 ? prof->seconds / tm->all_ops : 0;
  s->mean_ms = tm->all_ops / (double)tm->iters * 1e3;
  s->prod_gf = prof->seconds > 0 ? prof->flops / prof->seconds * 1e-9 : 0;
  double *col = pd_malloc_array((size_t)tm->iters, sizeof *col);
  s->med = calloc((size_t)tm->end + 1, sizeof *s->med);
  for (int o = 0; col && s->med && o < tm->end; o++) {
    for (long long it = 0; it < tm->iters; it++) col[it] = tm->samples[it * net->nops + o];
    s->med[o] = median(col, (int)tm->iters);
    s->total += s->med[o];
    s->part[pass_of(net, o)] += s->med[o];
  }
  free(col);
  s->load_ms = tm->feed.n ? median(tm->load, (int)tm->iters) * 1e3 : 0;
  s->load_share = s->load_ms > 0 ? s->load_ms / (s->load_ms + s->total * 1e3) : 0;
}

/* The header and a line (or JSON object) per op. */
static void print_ops(timing *tm, const summary *s, bool json) {
  pd_net *net = tm->net;
  const char *name = net->desc->name ? net->desc->name : "";
  if (json)
    printf("{\"net\":\"%s\",\"batch\":%lld,\"threads\":%d,\"iterations\":%lld,\"ops\":[", name, tm->batch,
           pd_get_threads(), tm->iters);
  else
    printf("net \"%s\": batch %lld, threads %d, median of %lld iterations after %lld warm-up\n\n"
           "%4s  %-32s %-24s %-8s %10s %7s %9s\n",
           name, tm->batch, pd_get_threads(), tm->iters, tm->warmup, "#", "op", "output", "pass", "ms", "share",
           "GFLOP/s");
  for (int o = 0; s->med && o < tm->end; o++) {
    int p = pass_of(net, o);
    double gf = s->med[o] > 0 ? op_flops(&tm->r, o) / s->med[o] * 1e-9 : 0,
           share = s->total > 0 ? s->med[o] / s->total : 0;
    if (json) {
      printf("%s{\"index\":%d,\"type\":\"%s\",\"name\":", o ? "," : "", o, net->ops[o].def->type);
      pd_json_str(stdout, op_name(net, o));
      printf(",\"pass\":\"%s\",\"ms\":%.6f,\"share\":%.6f,\"gflops\":%.3f}", pass_names[p], s->med[o] * 1e3, share, gf);
    } else
      printf("%4d  %-32s %-24s %-8s %10.4f %6.1f%% %9.2f\n", o, net->ops[o].def->type, op_name(net, o), pass_names[p],
             s->med[o] * 1e3, 100 * share, gf);
  }
}

/* The ops of each block an op runs: their kernel time per iteration (the
 * mean, summed over the steps), inside their op's line above; with json,
 * "blocks": [{"name", "ops": [{"index", "type", "name", "pass", "ms",
 * "side"}]}] after the top-level ops (whose array it closes). */
static void print_block_ops(const timing *tm, bool json) {
  const pd_net *net = tm->net;
  bool first = true;
  if (json) printf("],\"blocks\":[");
  for (int i = 0; i < net->nblocks; i++) {
    const pd_block *b = net->blocks[i];
    if (!b || !b->op_seconds || tm->iters <= 0) continue;
    bool side = false;
    for (int o = 0; o < b->net->nops; o++) side |= pd_block_side_by_side(b, o);
    if (json) {
      printf("%s{\"name\":", first ? "" : ",");
      pd_json_str(stdout, b->name);
      printf(",\"ops\":[");
    } else
      printf("\nblock \"%s\": its ops' time per iteration (the mean, summed over every run of the block)%s\n", b->name,
             side ? ";\nthose marked \"side\" ran side by side with others, one thread each (their times overlap)"
                  : "");
    first = false;
    for (int o = 0; o < b->net->nops; o++) {
      const pd_op *op = &b->net->ops[o];
      const char *out = op->out[0].n ? b->net->vars[op->out[0].vars[0]].name : "";
      const char *pass = o < b->net->n_forward ? "forward" : "backward";
      double ms = b->op_seconds[o] / (double)tm->iters * 1e3;
      bool by = pd_block_side_by_side(b, o);
      if (json) {
        printf("%s{\"index\":%d,\"type\":\"%s\",\"name\":", o ? "," : "", o, op->def->type);
        pd_json_str(stdout, out);
        printf(",\"pass\":\"%s\",\"ms\":%.6f,\"side\":%s}", pass, ms, by ? "true" : "false");
      } else
        printf("%4d  %-32s %-24s %-8s %10.4f%s\n", o, op->def->type, out, pass, ms, by ? "  side" : "");
    }
    if (json) printf("]}");
  }
}

static void print_totals_json(const timing *tm, const summary *s) {
  const pd_blas_profile *prof = &tm->prof;
  printf("],\"forward_ms\":%.6f,\"backward_ms\":%.6f,\"update_ms\":%.6f,\"step_ms\":%.6f,\"step_mean_ms\":%.6f,"
         "\"examples_per_sec\":%.1f",
         s->part[0] * 1e3, s->part[1] * 1e3, s->part[2] * 1e3, s->total * 1e3, s->mean_ms,
         s->total > 0 ? (double)tm->batch / s->total : 0);
  if (tm->place.kind == PD_CPU)
    printf(",\"products\":{\"ms\":%.6f,\"share\":%.6f,\"gflops\":%.3f,\"calls\":%lld,\"calls_in_parts\":%lld,"
           "\"blis_kernels\":\"%s\"}",
           s->prod_ms, s->prod_share, s->prod_gf, (long long)(prof->calls / tm->iters),
           (long long)(prof->calls_in_parts / tm->iters), pd_blis_arch());
  if (tm->feed.n) printf(",\"data\":{\"ms\":%.6f,\"share\":%.6f}", s->load_ms, s->load_share);
  printf("}\n");
}

static void print_totals_text(const timing *tm, const summary *s) {
  const pd_blas_profile *prof = &tm->prof;
  bool cpu = tm->place.kind == PD_CPU;
  printf("\nforward %.4f ms, backward %.4f ms, update %.4f ms: step %.4f ms (the ops' medians; %.0f examples/s, "
         "kernels only)\nmean step %.4f ms in the ops (the medians' sum leaves out the slow steps)\n",
         s->part[0] * 1e3, s->part[1] * 1e3, s->part[2] * 1e3, s->total * 1e3,
         s->total > 0 ? (double)tm->batch / s->total : 0, s->mean_ms);
  if (cpu && prof->calls)
    printf("matrix products: %.4f ms a step (mean), %.1f%% of the mean step's ops time, %.2f GFLOP/s, %lld a step\n",
           s->prod_ms, 100 * s->prod_share, s->prod_gf, (long long)(prof->calls / tm->iters));
  if (tm->feed.n)
    printf("data: %.4f ms a step (median) reading a batch of random rows, %.1f%% of data and ops\n", s->load_ms,
           100 * s->load_share);
  if (cpu && prof->calls_in_parts)
    printf("  and %lld a step inside threads' parts (convolutions, step-block ops side by side), counted in their "
           "ops' time only\n",
           (long long)(prof->calls_in_parts / tm->iters));
  if (cpu && (prof->calls || prof->calls_in_parts)) {
    const char *kernels = pd_blis_arch();
    printf("BLIS kernels: '%s' (%s)\n", kernels, pd_blis_arch_how());
  }
}

static void free_timing(timing *tm) {
  free(tm->samples), free(tm->idx), free(tm->load), free(tm->r.op_seconds);
  tm->r.op_seconds = NULL;
  pd_runner_free(&tm->r);
  pd_feed_close(&tm->feed);
  pd_scope_free(tm->scope);
  pd_net_free(tm->net);
  pd_gpu_close();
}

static int run(int argc, char **argv) {
  enum { ITERS, WARMUP, BATCH, THREADS, PARAMS, DATA, FWD, JSON, DEVICE, NOPT = DEVICE + PD_N_DEVICE_OPTS };
  pd_opt opts[NOPT] = {{.name = "--iterations", .has_value = true},
                       {.name = "--warmup", .has_value = true},
                       {.name = "--batch-size", .has_value = true},
                       {.name = "--threads", .has_value = true},
                       {.name = "--params", .has_value = true},
                       {.name = "--data", .has_value = true, .repeat = true},
                       {.name = "--forward-only"},
                       {.name = "--json"},
                       PD_DEVICE_OPTS(DEVICE)};
  char *pos[1];
  int code = 0;
  int npos = pd_cli_parse(&pd_cmd_time, argc, argv, opts, NOPT, pos, 1, &code);
  if (npos < 0) goto out;
  code = 2;
  timing tm = {.iters = 20, .warmup = 3, .train = !opts[FWD].value};
  long long threads = 0;
  if (npos != 1) {
    pd_cli_usage_error("time", "expected NET.pbtxt; see `paddle-run time --help`");
    goto out;
  }
  if ((opts[ITERS].value && !pd_cli_int("time", "--iterations", opts[ITERS].value, 1, PD_MAX_COUNT, &tm.iters)) ||
      (opts[WARMUP].value && !pd_cli_int("time", "--warmup", opts[WARMUP].value, 0, PD_MAX_COUNT, &tm.warmup)) ||
      (opts[BATCH].value && !pd_cli_int("time", "--batch-size", opts[BATCH].value, 1, PD_MAX_BATCH, &tm.batch)) ||
      (opts[THREADS].value && !pd_cli_int("time", "--threads", opts[THREADS].value, 1, PD_MAX_THREADS, &threads)) ||
      !pd_cli_unique_vars("time", &opts[DATA]))
    goto out;
  pd_set_threads((int)threads);
  if ((code = pd_cli_device("time", opts, DEVICE, &tm.place))) goto out;
  pd_error err = {0};
  pd_status st = setup(&tm, pos[0], &opts[PARAMS], &opts[DATA], &err);
  if (!st) st = time_steps(&tm, !opts[WARMUP].value, &err);
  if (tm.place.kind == PD_CPU) tm.prof = pd_blas_profile_stop();
  if (st) {
    code = pd_cli_fail(&err);
  } else {
    summary s = {0};
    summarise(&tm, &s);
    print_ops(&tm, &s, opts[JSON].value != NULL);
    print_block_ops(&tm, opts[JSON].value != NULL);
    if (opts[JSON].value)
      print_totals_json(&tm, &s);
    else
      print_totals_text(&tm, &s);
    free(s.med);
    code = 0;
  }
  free_timing(&tm);
out:
  pd_cli_free(opts, NOPT);
  return code;
}
