/* test.c — `paddle-run test` (Caffe's `caffe test`): a checkpoint's loss and
 * metrics on the net's evaluation data or on --data, computed by the same
 * code as train's evaluation (evaluate.c), printed and logged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/net.h"
#include "cpu/parallel.h"
#include "evaluate.h"
#include "gpu/gpurt.h"
#include "io/checkpoint.h"
#include "io/feed.h"
#include "io/params.h"
#include "base/fileutil.h"
#include "base/util.h"
#include "trainlog.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_test = {
    "test", "evaluate a checkpoint: the loss and metrics on evaluation data",
    "usage: paddle-run test NET.pbtxt --params DIR [--data VAR=FILE]... [options]\n"
    "\n"
    "Evaluates the parameters in DIR on the net's evaluation data (its\n"
    "train.eval_data and held-out text), or on --data, as train evaluates after\n"
    "an epoch: the loss and train.metrics, averaged over every row. The figures\n"
    "equal those of `train --iterations 0 --params DIR` at the same batch size.\n"
    "\n"
    "  --params DIR       parameters: a checkpoint or a directory of NAME.npy files\n"
    "  --data VAR=FILE    evaluation data for a data variable (replaces the file's\n"
    "                     train.eval_data binding of VAR)\n"
    "  --batch-size N     rows per batch (default: the file's train.batch_size)\n"
    "  --threads N        threads for matrix products (default: all cores)\n"
    "  --log FILE.jsonl   append the result as one JSON line (an \"eval\" record)\n"
    "  --set FIELD=VALUE  set a field of the file by its path (as train's --set)\n" PD_DEVICE_HELP "\n"
    "Exit codes: 0 done; 1 a failure while running; 2 bad usage or input (no\n"
    "evaluation data, parameters that do not fit the net).\n",
    run};

enum { O_PARAMS, O_DATA, O_BATCH, O_THREADS, O_LOG, O_SET, O_DEVICE, NOPT = O_DEVICE + PD_N_DEVICE_OPTS };

typedef struct tester {
  pd_net *net;
  const Paddle__TrainDesc *td;
  pd_feed feed;
  pd_scope *scope;
  pd_runner er;
  bool *active;
  int *metrics;
  int nmetrics;
  int64_t batch, *rows;
  double *values;
} tester;

/* The loss, then train.metrics, as train reports them. */
static pd_status pick_metrics(tester *t, const char *path, pd_error *err) {
  const Paddle__TrainDesc *td = t->td;
  int loss = td && td->loss && *td->loss ? pd_net_var(t->net, td->loss) : -1;
  if (loss < 0)
    return pd_errorf(err, PD_ERR_INPUT,
                     td && td->loss && *td->loss ? "%s: train.loss \"%s\" is not a variable of the net"
                                                 : "%s: no loss: set train { loss: \"VAR\" } in the file",
                     path, td && td->loss ? td->loss : "");
  if (!(t->metrics = calloc(td->n_metrics + 1, sizeof *t->metrics)) ||
      !(t->values = calloc(td->n_metrics + 1, sizeof *t->values)))
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  t->metrics[t->nmetrics++] = loss;
  for (size_t i = 0; i < td->n_metrics; i++) {
    int v = pd_net_var(t->net, td->metrics[i]);
    if (v < 0 || pd_tensor_numel(&t->net->vars[v].meta) != 1)
      return pd_errorf(err, PD_ERR_INPUT, "%s: train.metrics \"%s\" must be a one-element variable of the net", path,
                       td->metrics[i]);
    t->metrics[t->nmetrics++] = v;
  }
  return PD_OK;
}

/* The evaluation data: the file's (train.eval_data and held-out text) with
 * --data replacing a variable's binding, or --data alone; none is exit 2. */
static pd_status bind_data(tester *t, const pd_opt *data, const char *path, pd_error *err) {
  const Paddle__TrainDesc *td = t->td;
  t->feed.text_streams = t->batch; /* a text binding: one stream a batch row, as train evaluates */
  pd_status st = pd_feed_bind_all(&t->feed, t->net, path, td->eval_data, td->n_eval_data, "train.eval_data",
                                  data->values, data->n_values, "--data", err);
  if (!st && !data->n_values) st = pd_feed_bind_held_out(&t->feed, t->net, path, td->data, td->n_data, err);
  if (!st && !t->feed.n)
    st = pd_errorf(err, PD_ERR_INPUT,
                   "%s: no evaluation data: the file has no train.eval_data (nor held-out text); give --data VAR=FILE",
                   path);
  if (!st) st = pd_feed_check(&t->feed, t->net, t->active, "give --data VAR=FILE for it too", err);
  if (!st) st = pd_check_labels(t->net, &t->feed, "evaluation", err);
  return st;
}

/* The net and its data, the parameters (as infer loads them), the runner. */
static pd_status setup(tester *t, const pd_opt *opts, const char *path, pd_place place, pd_error *err) {
  static Paddle__TrainDesc empty_train = PADDLE__TRAIN_DESC__INIT;
  pd_net_opts nopts = {.float_dtype = PD_F32, .overrides = opts[O_SET].values, .n_overrides = opts[O_SET].n_values};
  pd_status st = pd_net_load(path, &nopts, &t->net, err);
  if (st) return st;
  t->td = t->net->desc->train ? t->net->desc->train : &empty_train;
  if (!t->batch) t->batch = t->td->batch_size;
  if (t->batch <= 0) return pd_errorf(err, PD_ERR_INPUT, "%s: train.batch_size must be > 0", path);
  if ((st = pick_metrics(t, path, err))) return st;
  if (!(t->active = calloc((size_t)t->net->nops + 1, 1))) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  pd_net_prune(t->net, t->metrics, t->nmetrics, t->active);
  if ((st = pd_net_select_kernels(t->net, place.kind, err))) return st;
  if ((st = bind_data(t, &opts[O_DATA], path, err))) return st;
  if (!(t->scope = pd_scope_new(NULL))) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  st = pd_params_load(t->net, t->scope, opts[O_PARAMS].value, t->active, true, NULL, NULL, err);
  if (!st) st = pd_runner_init(&t->er, t->net, t->scope, t->active, err);
  if (!st) st = pd_runner_set_place(&t->er, place, err);
  if (!st && !(t->rows = pd_malloc_array((size_t)t->batch + 1, sizeof *t->rows)))
    st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  t->er.exec.training = false;
  t->er.exec.seed = t->td->seed;
  return st;
}

/* The step and epoch the parameters were saved at (a checkpoint's manifest;
 * 0 and 0 for a plain parameter directory). */
static void checkpoint_position(const char *dir, int64_t *step, int64_t *epoch) {
  pd_checkpoint *ck = NULL;
  pd_error ignored = {0};
  *step = *epoch = 0;
  if (pd_checkpoint_open(dir, &ck, &ignored)) return;
  *step = pd_checkpoint_state(ck)->step, *epoch = pd_checkpoint_state(ck)->epoch;
  pd_checkpoint_close(ck);
}

/* Evaluate, print the figures on stdout, and log them. */
static pd_status report(tester *t, const pd_opt *opts, pd_error *err) {
  pd_eval e = {.er = &t->er,
               .feed = &t->feed,
               .net = t->net,
               .metrics = t->metrics,
               .nmetrics = t->nmetrics,
               .batch = t->batch,
               .rows = t->rows};
  pd_status st = pd_eval_run(&e, t->values, err);
  FILE *log = NULL;
  const char *log_path = opts[O_LOG].value;
  /* opened after every input was read: never one of them */
  if (!st && log_path) st = pd_output_open_stream("--log", log_path, true, &log, err);
  if (st) return st;
  printf("evaluated %lld rows at batch size %lld:", (long long)t->feed.rows, (long long)t->batch);
  pd_eval_print(&e, stdout, t->values, "eval_");
  putchar('\n');
  if (!log) return PD_OK;
  int64_t step, epoch;
  checkpoint_position(opts[O_PARAMS].value, &step, &epoch);
  st = pd_eval_record(&e, log, log_path, step, epoch, t->values, err);
  if (!st) return pd_log_close(log, log_path, err);
  fclose(log);
  return st;
}

static void free_tester(tester *t) {
  free(t->active), free(t->metrics), free(t->values), free(t->rows);
  pd_runner_free(&t->er);
  pd_feed_close(&t->feed);
  pd_scope_free(t->scope);
  pd_net_free(t->net);
  pd_gpu_close();
}

static int run(int argc, char **argv) {
  pd_opt opts[NOPT] = {[O_PARAMS] = {.name = "--params", .has_value = true},
                       [O_DATA] = {.name = "--data", .has_value = true, .repeat = true},
                       [O_BATCH] = {.name = "--batch-size", .has_value = true},
                       [O_THREADS] = {.name = "--threads", .has_value = true},
                       [O_LOG] = {.name = "--log", .has_value = true},
                       [O_SET] = {.name = "--set", .has_value = true, .repeat = true},
                       PD_DEVICE_OPTS(O_DEVICE)};
  char *pos[1];
  int code = 0;
  tester t = {0};
  long long batch = 0, threads = 0;
  pd_place place;
  int npos = pd_cli_parse(&pd_cmd_test, argc, argv, opts, NOPT, pos, 1, &code);
  if (npos < 0) goto out;
  code = 2;
  if (npos != 1) {
    pd_cli_usage_error("test", "expected NET.pbtxt; see `paddle-run test --help`");
    goto out;
  }
  if (!opts[O_PARAMS].value) {
    pd_cli_usage_error("test", "nothing to evaluate: give --params DIR (a checkpoint or parameter directory)");
    goto out;
  }
  if ((opts[O_BATCH].value && !pd_cli_int("test", "--batch-size", opts[O_BATCH].value, 1, PD_MAX_BATCH, &batch)) ||
      (opts[O_THREADS].value && !pd_cli_int("test", "--threads", opts[O_THREADS].value, 1, PD_MAX_THREADS, &threads)) ||
      !pd_cli_unique_vars("test", &opts[O_DATA]))
    goto out;
  pd_set_threads((int)threads);
  if ((code = pd_cli_device("test", opts, O_DEVICE, &place))) goto out;
  t.batch = batch;
  pd_error err = {0};
  pd_status st = setup(&t, opts, pos[0], place, &err);
  if (!st) st = report(&t, opts, &err);
  code = st ? pd_cli_fail(&err) : 0;
  free_tester(&t);
out:
  pd_cli_free(opts, NOPT);
  return code;
}
