/* train.c — `paddle-run train`: load the net, add backward and optimizer
 * ops, initialise (or load) parameters, then run mini-batches for the given
 * epochs or iterations with per-epoch shuffling from the seed; evaluate,
 * log, checkpoint, and stop cleanly on SIGINT/SIGTERM or a non-finite loss. */
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "core/backward.h"
#include "io/checkpoint.h"
#include "cli.h"
#include "dist/dist.h"
#include "dist_cli.h"
#include "evaluate.h"
#include "io/feed.h"
#include "base/fileutil.h"
#include "gpu/gpurt.h"
#include "dist/gpunccl.h"
#include "core/initializer.h"
#include "core/net.h"
#include "io/params.h"
#include "base/rng.h"
#include "trainlog.h"
#include "base/util.h"
#include "core/optimizer.h"
#include "cpu/parallel.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_train = {
    "train", "train a network and save its parameters",
    "usage: paddle-run train NET.pbtxt [options]\n"
    "\n"
    "Trains NET.pbtxt with the data and defaults in its `train` section; flags\n"
    "override them.\n"
    "\n"
    "  --data VAR=FILE       training data for a data variable (.npy, IDX, .gz)\n"
    "  --eval-data VAR=FILE  evaluation data, evaluated after each epoch\n"
    "  --eval-every N        also evaluate after every N steps (default: the\n"
    "                        file's train.eval_every; 0: at epochs' ends only)\n"
    "  --batch-size N        examples per step\n"
    "  --epochs N            passes over the data in all (with --resume: counting\n"
    "                        the checkpoint's, so the same command finishes a run)\n"
    "  --iterations N        steps in total (instead of epochs); 0: none, so --save\n"
    "                        writes the starting parameters (initialised or --params)\n"
    "  --optimizer NAME      sgd, momentum or adam\n"
    "  --lr F                learning rate\n"
    "  --seed N              seed for initialisation, shuffling and random ops\n"
    "  --shuffle, --no-shuffle  shuffle each epoch (default: the file's, shuffle)\n"
    "  --threads N           threads for matrix products (default: all cores)\n"
    "  --save DIR            save checkpoints to DIR (DIR/latest is the newest): a\n"
    "                        new DIR, or the one --resume continues (one writer\n"
    "                        at a time)\n"
    "  --save-every N        also save every N steps\n"
    "  --keep N              checkpoints kept in DIR (default 3)\n"
    "  --resume DIR          continue exactly where the checkpoint in DIR stopped\n"
    "                        (at the batch size it was trained with)\n"
    "  --params DIR          start from these parameters (fine-tuning); DIR must\n"
    "                        hold exactly this net's parameters\n"
    "  --allow-partial-params  with --params: start from those that match, the\n"
    "                        others initialised (fine-tuning a subset)\n"
    "  --log FILE.jsonl      JSON lines: the run's settings, each logged step and\n"
    "                        epoch, how the run ended (--resume appends)\n"
    "  --log-every N         steps between log lines (default: the file's, 100)\n"
    "  --no-check-data       skip the scan of float data files for NaN and Inf\n"
    "                        before training (a NaN then stops the run at the\n"
    "                        first op it reaches, naming the file and row)\n" PD_DEVICE_HELP
    "  --check-every N       under mpirun: steps between the ranks' parameter\n"
    "                        checksum comparison (default 100)\n"
    "  --comm-timeout S      under mpirun: seconds a rank waits for the others\n"
    "                        in a collective before it fails (default 300)\n"
    "  --set FIELD=VALUE     set any field of the file by its path, e.g.\n"
    "                        --set train.optimizer.lr=0.01 --set train.optimizer.type=adam\n"
    "                        --set 'op[h1].attrs.size=256' (the op writing h1),\n"
    "                        --set 'train.data[x].file=F' (the binding of x);\n"
    "                        an index is 0-based: op[0] is the first op\n"
    "\n"
    "Counts have limits far beyond any real run: --batch-size up to 2^31 - 1,\n"
    "--epochs and --iterations up to 2^53 steps, --keep up to 2^31 - 1,\n"
    "--threads up to 4096; --seed is any of 0 .. 2^64 - 1 (docs/training.md).\n"
    "\n"
    "Under `mpirun -np N`, N ranks train together, each on its slice of every\n"
    "batch (batch_size is the global batch); see docs/distributed.md.\n"
    "\n"
    "PADDLE_RUN_PROGRESS_SECONDS=S: when stderr is not a terminal, a progress\n"
    "line also every S seconds (default 10; 0: only every --log-every steps).\n"
    "\n"
    "Exit codes: 0 done; 1 a failure while running (I/O, non-finite loss);\n"
    "2 bad usage or input; 130/143 interrupted by SIGINT/SIGTERM.\n",
    run};

static volatile sig_atomic_t g_signal = 0;
static void on_signal(int sig) { g_signal = sig; }

enum {
  O_DATA,
  O_EVAL,
  O_BATCH,
  O_EPOCHS,
  O_ITERS,
  O_OPT,
  O_LR,
  O_SEED,
  O_SHUF,
  O_NOSHUF,
  O_THREADS,
  O_SAVE,
  O_SAVE_EVERY,
  O_KEEP,
  O_RESUME,
  O_PARAMS,
  O_LOG,
  O_LOG_EVERY,
  O_DEVICE, /* the place options (cli.h), in their order */
  O_TF32,
  O_NO_GRAPH,
  O_CONV_ALGO,
  O_SET,
  O_CHECK_EVERY,
  O_COMM_TIMEOUT,
  O_NO_CHECK_DATA,
  O_ALLOW_PARTIAL,
  O_EVAL_EVERY,
  NOPT
};

typedef struct trainer {
  pd_net *net;
  Paddle__TrainDesc *td;
  Paddle__OptimizerDesc *opt;
  pd_scope *scope;
  pd_runner r;  /* whole training step */
  pd_runner er; /* evaluation: forward only */
  bool have_eval;
  pd_feed feed, efeed;
  int64_t batch, epochs, iterations, log_every, save_every, keep, check_every;
  bool no_steps; /* --iterations 0: save (and evaluate) the parameters as they start */
  uint64_t seed;
  bool shuffle;
  bool diverged; /* the ranks' checksums disagreed (every rank knows) */
  const char *save_dir;
  FILE *log;
  const char *log_path;
  bool tty;
  double progress_every; /* not on a terminal: seconds between progress lines (0: only every log_every steps) */
  double *esum;          /* this epoch's metrics times rows (and rows last), for the epoch line */
  double *fin;           /* the evaluation the end record carries (when fin_ok) */
  bool fin_ok;
  int64_t fin_step, fin_epoch; /* where the run stopped */
  double t_epoch;              /* when the epoch began */
  int *metrics;                /* variables reported: loss first, then train.metrics */
  int nmetrics;
  int64_t *perm, *rows;
  double t0;
  /* what the setup holds until the end */
  pd_checkpoint *ck;         /* the one --resume continues */
  pd_ckpt_lock *save_lock;   /* one writer per save directory */
  bool made_save_dir;        /* this run created it: removed again if it saves nothing */
  bool late_place;           /* GPUs of several ranks: the device copies come after the broadcast */
  bool *eval_ops;            /* the ops the evaluation runs */
  char *orig_type, *my_type; /* --optimizer's copy, and the file's type put back at the end */
  /* a GPU run staged the next step's @lr/@step (run_batch): the last step's, for a checkpoint */
  bool staged_ahead;
  double done_lr, done_step;
  int64_t eval_every; /* also evaluate after every eval_every steps (0: not) */
  bool plateau;       /* the schedule is "plateau": plat holds its lr */
  pd_plateau plat;
  pd_tensor *carried; /* a text run's STATE variables, kept around a mid-epoch evaluation */
} trainer;

/* The training runner, and the evaluation one when there is one, on `place`
 * (on a GPU: device copies of the variables, the parameters uploaded). */
static pd_status set_place(trainer *t, pd_place place, pd_error *err) {
  pd_status st = pd_runner_set_place(&t->r, place, err);
  return !st && t->have_eval ? pd_runner_set_place(&t->er, place, err) : st;
}

/* After every rank's setup succeeded (collectives, in the same order on
 * every rank): rank 0's parameters to all, the NCCL communicator, then (on
 * GPUs of several ranks) the device copies of the broadcast parameters. */
static pd_status share(trainer *t, pd_place place, bool late_place, pd_error *err) {
  pd_status st = pd_cli_dist_share(&t->r, err);
  if (!st && t->net->nccl) st = pd_nccl_init(err);
  return !st && late_place ? set_place(t, place, err) : st;
}

/* The steps this run trains to, counted from the start of the run (as
 * train_loop counts): --epochs and --iterations are totals, also on resume. */
static int64_t planned_steps(const trainer *t) {
  int64_t per_epoch = (t->feed.rows + t->batch - 1) / t->batch;
  return t->no_steps ? 0 : t->iterations > 0 ? t->iterations : per_epoch * t->epochs;
}

/* A resumed run continues the checkpoint's: its step and epoch counts are
 * in its batches, so the batch size stays; and it must have steps left. */
static pd_status check_resume(const trainer *t, const char *resume, const pd_checkpoint *ck, pd_error *err) {
  const pd_ckpt_state *cs = pd_checkpoint_state(ck);
  if (cs->batch_size && cs->batch_size != t->batch)
    return pd_errorf(err, PD_ERR_INPUT,
                     "--resume %s: the checkpoint was trained at batch size %lld (its %lld steps and position in "
                     "epoch %lld count batches of that size), this run asks for %lld; resume with --batch-size %lld, "
                     "or start a new run from its parameters with --params %s",
                     resume, (long long)cs->batch_size, (long long)cs->step, (long long)cs->epoch + 1,
                     (long long)t->batch, (long long)cs->batch_size, resume);
  int64_t total = planned_steps(t);
  if (t->no_steps) return PD_OK; /* --iterations 0: saves the checkpoint's parameters again */
  if (cs->step < total) {
    if (pd_dist_rank() == 0)
      fprintf(stderr, "resuming %s at step %lld (epoch %lld), training to step %lld\n", pd_checkpoint_dir(ck),
              (long long)cs->step, (long long)cs->epoch + 1, (long long)total);
    return PD_OK;
  }
  char asked[64];
  if (t->iterations > 0)
    snprintf(asked, sizeof asked, "%lld steps", (long long)t->iterations);
  else
    snprintf(asked, sizeof asked, "%lld epoch%s (%lld steps)", (long long)t->epochs, t->epochs == 1 ? "" : "s",
             (long long)total);
  return pd_errorf(err, PD_ERR_INPUT,
                   "--resume %s: nothing to train: the checkpoint is at step %lld (%lld epoch%s done), and this run "
                   "asks for %s in all; --epochs and --iterations count from the start of the run, the checkpoint's "
                   "included, so ask for more",
                   resume, (long long)cs->step, (long long)cs->epoch, cs->epoch == 1 ? "" : "s", asked);
}

static pd_status fill_persistables(trainer *t, const char *params_dir, bool allow_partial, const char *resume,
                                   pd_checkpoint **ck_out, pd_error *err) {
  pd_net *net = t->net;
  pd_status st = PD_OK;
  if (resume) {
    st = pd_checkpoint_open(resume, ck_out, err);
    const pd_ckpt_state *cs = st ? NULL : pd_checkpoint_state(*ck_out);
    if (cs && cs->optimizer && t->opt->type && strcmp(cs->optimizer, t->opt->type) != 0)
      st = pd_errorf(err, PD_ERR_INPUT,
                     "--resume %s: the checkpoint was trained with optimizer \"%s\", this run uses \"%s\"", resume,
                     cs->optimizer, t->opt->type);
    if (!st) st = check_resume(t, resume, *ck_out, err);
    if (!st) st = pd_params_load(net, t->scope, resume, NULL, true, NULL, NULL, err);
    if (st) return st;
  } else if (params_dir) {
    pd_buf report = {0};
    int mismatched = 0;
    st = pd_params_load(net, t->scope, params_dir, NULL, false, &report, &mismatched, err);
    if (!st && report.len) fprintf(stderr, "paddle-run: --params %s:\n%.*s", params_dir, (int)report.len, report.data);
    pd_buf_free(&report);
    /* another net's parameters would train it from scratch, silently */
    if (!st && mismatched && !allow_partial)
      st = pd_errorf(err, PD_ERR_INPUT,
                     "--params %s does not hold this net's parameters (%d listed above missed or skipped: another "
                     "net's?); give --allow-partial-params to start from the ones that match",
                     params_dir, mismatched);
    if (st) return st;
  }
  return pd_init_persistables(net, t->scope, t->td->default_init, t->seed, err);
}

/* A save directory with checkpoints in it (a `latest`) belongs to the run
 * that wrote them: only that run, resumed from one of them, saves there
 * (another run's checkpoints would mix with its own, and --keep count both). */
static pd_status check_save_dir(const trainer *t, const pd_checkpoint *ck, pd_error *err) {
  char what[4200];
  pd_status st = pd_checkpoint_dir_holds(t->save_dir, what, sizeof what, err);
  if (st || !what[0] || (ck && pd_checkpoint_is_in(ck, t->save_dir))) return st;
  return pd_errorf(err, PD_ERR_INPUT,
                   "--save %s already holds another run's checkpoints (%s); to continue that run give --resume %s, "
                   "otherwise save into a new directory",
                   t->save_dir, what, t->save_dir);
}

static void permutation(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch, bool shuffle) {
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  if (!shuffle) return;
  uint64_t s = seed ^ (0x2545f4914f6cdd1dull * (uint64_t)(epoch + 1));
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)(pd_rng_next(&s) % (uint64_t)(i + 1));
    int64_t tmp = perm[i];
    perm[i] = perm[j];
    perm[j] = tmp;
  }
}

/* fmt has two %s: the device bytes in use and the peak. */
static void print_gpu_mem(FILE *out, const char *fmt) {
  pd_gpu_mem m = pd_gpu_mem_stats();
  char a[32], b[32];
  snprintf(a, sizeof a, "%.1f MiB", (double)m.in_use / 1048576.0);
  snprintf(b, sizeof b, "%.1f MiB", (double)m.peak / 1048576.0);
  fprintf(out, fmt, a, b);
}

static double scalar(const pd_tensor *t) { return pd_tensor_numel(t) >= 1 ? pd_tensor_get(t, 0) : NAN; }

/* When op `o` reads a data variable whose batch (file rows rows[0..n)) holds
 * a NaN or Inf: which row of which file, appended to buf. */
static void name_data_row(trainer *t, int o, const int64_t *rows, int64_t n, char *buf, size_t size) {
  const pd_op *op = &t->net->ops[o];
  for (int k = 0; k < t->feed.n; k++) {
    bool reads = false;
    for (int s = 0; s < op->def->n_inputs; s++)
      for (int i = 0; i < op->in[s].n; i++) reads = reads || op->in[s].vars[i] == t->feed.b[k].var;
    int64_t at, elem;
    double v;
    if (!reads || !pd_dataset_find_nonfinite(t->feed.b[k].ds, rows, n, &at, &elem, &v)) continue;
    size_t len = strlen(buf);
    char vb[32];
    snprintf(buf + len, size - len,
             "; it reads the data \"%s\": %s row %lld holds %s at element %lld (row %lld of the batch)",
             t->net->vars[t->feed.b[k].var].name, t->feed.b[k].file, (long long)rows[at], pd_fmt_num(vb, sizeof vb, v),
             (long long)elem, (long long)at);
    return;
  }
}

/* The first forward op whose output holds a NaN or Inf, for the message;
 * the batch was rows[0..nrows) of the data files. */
static void find_nonfinite(trainer *t, const int64_t *rows, int64_t nrows, char *buf, size_t size) {
  pd_net *net = t->net;
  snprintf(buf, size, "no op output was non-finite");
  for (int o = 0; o < net->nops; o++) {
    const pd_op *op = &net->ops[o];
    for (int s = 0; s < op->def->n_outputs; s++)
      for (int i = 0; i < op->out[s].n; i++) {
        pd_error ferr = {0};
        if (pd_runner_fetch(&t->r, op->out[s].vars[i], &ferr)) continue;
        const pd_tensor *x = t->r.t[op->out[s].vars[i]];
        if (!pd_dtype_is_float(x->dtype) || !x->storage) continue;
        int64_t n = pd_tensor_numel(x);
        for (int64_t k = 0; k < n; k++) {
          double v = pd_tensor_get(x, k);
          if (!isfinite(v)) {
            char l[160], vb[32];
            snprintf(buf, size, "%s wrote %s into \"%s\" at element %lld", pd_net_op_label(net, o, l, sizeof l),
                     pd_fmt_num(vb, sizeof vb, v), net->vars[op->out[s].vars[i]].name, (long long)k);
            name_data_row(t, o, rows, nrows, buf, size);
            return;
          }
        }
      }
  }
}

static pd_status save(trainer *t, int64_t step, int64_t epoch, int64_t batch_in_epoch, double lr, pd_error *err) {
  pd_net *net = t->net;
  if (pd_dist_rank() != 0) return PD_OK; /* the ranks hold the same parameters */
  pd_status fst = pd_runner_fetch_persistables(&t->r, err);
  if (fst) return fst;
  /* @lr and @step as of the step saved, as a CPU run holds them: a GPU run
   * has the next step's staged already, and they were fetched back */
  int lr_v = pd_net_var(net, "@lr"), step_v = pd_net_var(net, "@step");
  if (t->staged_ahead && lr_v >= 0 && t->r.t[lr_v]->storage) pd_tensor_set(t->r.t[lr_v], 0, t->done_lr);
  if (t->staged_ahead && step_v >= 0 && t->r.t[step_v]->storage) pd_tensor_set(t->r.t[step_v], 0, t->done_step);
  pd_ckpt_var *vars = malloc(sizeof *vars * (size_t)(net->nvars + 1));
  if (!vars) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  int n = 0;
  for (int v = 0; v < net->nvars; v++)
    if (net->vars[v].kind == PD_VAR_PARAM || net->vars[v].kind == PD_VAR_STATE)
      vars[n++] = (pd_ckpt_var){net->vars[v].name, t->r.t[v]};
  pd_ckpt_state state = {.net = net->desc->name ? net->desc->name : "",
                         .step = step,
                         .epoch = epoch,
                         .batch_in_epoch = batch_in_epoch,
                         .batch_size = t->batch,
                         .optimizer = t->opt->type,
                         .seed = t->seed,
                         .lr = lr,
                         .has_plateau = t->plateau,
                         .plateau_lr = t->plat.lr,
                         .plateau_best = t->plat.best,
                         .plateau_bad = t->plat.bad};
  int nvocab;
  state.vocab = pd_feed_vocab(&t->feed, &nvocab); /* so `generate` reads ids back as text */
  state.n_vocab = (size_t)nvocab;
  char path[4096];
  pd_status st = pd_checkpoint_save(t->save_dir, vars, n, &state, (int)t->keep, path, sizeof path, err);
  free(vars);
  if (!st) fprintf(stderr, "%ssaved %s\n", t->tty ? "\n" : "", path);
  return st;
}

/* After a failure between steps: a checkpoint of the last good step; the
 * message says whether it was saved. */
static void keep_last_good(trainer *t, int64_t step, int64_t epoch, int64_t bi, double lr, pd_error *err) {
  pd_error serr = {0};
  size_t len = strlen(err->msg);
  if (save(t, step, epoch, bi, lr, &serr) == PD_OK)
    snprintf(err->msg + len, sizeof err->msg - len, "; checkpoint of step %lld saved", (long long)step);
  else
    snprintf(err->msg + len, sizeof err->msg - len, "; no checkpoint saved: %s", serr.msg);
}

/* Under MPI: sums[0..n) over the ranks (metrics times rows, and rows). */
static pd_status reduce_sums(double *sums, int n, pd_error *err) {
  return pd_dist_allreduce_sum(sums, n, PD_F64, "the metrics' allreduce", err);
}

/* Rank r of N holds rows [n r / N, n (r + 1) / N) of n. */
static void my_slice(int64_t n, int64_t *lo, int64_t *count) {
  int r = pd_dist_rank(), size = pd_dist_size();
  *lo = n * r / size;
  *count = n * (r + 1) / size - *lo;
}

/* The evaluation of the current parameters (evaluate.c, shared with `test`). */
static pd_eval eval_of(trainer *t) {
  return (pd_eval){.er = &t->er,
                   .feed = &t->efeed,
                   .net = t->net,
                   .metrics = t->metrics,
                   .nmetrics = t->nmetrics,
                   .batch = t->batch,
                   .rows = t->rows};
}

static pd_status evaluate(trainer *t, double *values, pd_error *err) {
  /* the two runners share the scope's tensors, so each must re-infer the
   * shapes after the other ran (a runner only notices its own data change) */
  t->er.shapes_ok = false, t->r.shapes_ok = false;
  pd_eval e = eval_of(t);
  return pd_eval_run(&e, values, err);
}

static void print_metrics(trainer *t, FILE *out, const double *values, const char *prefix) {
  pd_eval e = eval_of(t);
  pd_eval_print(&e, out, values, prefix);
}

static void log_metrics(trainer *t, const double *values, const char *prefix) {
  pd_eval e = eval_of(t);
  pd_eval_log(&e, t->log, values, prefix);
}

/* An evaluation's loss into a plateau schedule, saying when it lowers the lr. */
static void plateau_step(trainer *t, int64_t step, double loss) {
  double before = t->plat.lr;
  if (!pd_plateau_step(t->opt->schedule, &t->plat, loss) || pd_dist_rank() != 0) return;
  char a[32], b[32];
  fprintf(stderr, "%splateau: lr %s -> %s after step %lld\n", t->tty ? "\n" : "", pd_fmt_num(a, sizeof a, before),
          pd_fmt_num(b, sizeof b, t->plat.lr), (long long)step);
}

/* The end of an epoch: evaluate (when there is evaluation data), then print
 * the epoch line (the epoch's training averages, the evaluation) and log it. */
static pd_status end_epoch(trainer *t, int64_t epoch, int64_t step, double *ev, pd_error *err) {
  double now = pd_cli_now(), el = now - t->t0, ep = now - t->t_epoch;
  double *es = t->esum;
  pd_status st = pd_dist_size() > 1 ? reduce_sums(es, t->nmetrics + 1, err) : PD_OK;
  double rows = es[t->nmetrics];
  for (int m = 0; m < t->nmetrics; m++) es[m] = rows > 0 ? es[m] / rows : NAN;
  if (!st && t->have_eval) st = evaluate(t, ev, err);
  if (!st && t->plateau) plateau_step(t, step, ev[0]);
  if (t->tty) fputc('\n', stderr);
  if (st) return st;
  char b1[32], b2[32];
  fprintf(stderr, "epoch %lld done: step %lld, %s (epoch %s)", (long long)epoch, (long long)step,
          pd_fmt_secs(b1, sizeof b1, el), pd_fmt_secs(b2, sizeof b2, ep));
  if (rows > 0) print_metrics(t, stderr, es, "");
  if (t->have_eval) print_metrics(t, stderr, ev, "eval_");
  fputc('\n', stderr);
  if (t->log) {
    fprintf(t->log, "{\"type\":\"epoch\",\"epoch\":%lld,\"step\":%lld,\"elapsed\":%.3f,\"epoch_seconds\":%.3f",
            (long long)epoch, (long long)step, el, ep);
    if (t->have_eval) log_metrics(t, ev, "eval_");
    if (rows > 0) log_metrics(t, es, "");
    st = pd_log_end_record(t->log, t->log_path, err);
  }
  memset(es, 0, sizeof *es * (size_t)(t->nmetrics + 1));
  t->t_epoch = pd_cli_now();
  return st;
}

/* The progress line: where the run is, the averages since the last logged
 * step, the rate and the time left. */
static void progress(trainer *t, int64_t epoch, int64_t step, int64_t total, const double *avg, double lr, double rate,
                     double eta) {
  char b[32], b2[32];
  fprintf(stderr, "%sepoch %lld step %lld/%lld", t->tty ? "\r" : "", (long long)epoch + 1, (long long)step,
          (long long)total);
  print_metrics(t, stderr, avg, "");
  fprintf(stderr, " lr %s %.0f ex/s, %.1f%%, ETA %s", pd_fmt_num(b, sizeof b, lr), rate,
          total > 0 ? 100.0 * (double)step / (double)total : 100.0, pd_fmt_eta(b2, sizeof b2, eta));
  if (t->r.d && !t->tty) print_gpu_mem(stderr, " gpu_mem %s (peak %s)");
  fputs(t->tty ? "\033[K" : "\n", stderr); /* on a terminal: clear what a longer line left */
}

/* What train_loop carries from step to step: the plan, where the run is,
 * the metrics since the last logged step and the progress line's clock. */
typedef struct loop {
  int64_t rows, per_epoch, total;
  int64_t step, epoch, bi, step0; /* bi: the batch in the epoch; step0: where this run began */
  int lr_v, step_v, reduce_op;
  double *sum, *ev, *avg; /* metrics times rows since the last log line (rows last), evaluation, averages */
  double lr, tstep, tline;
  int64_t seen, logged_examples;
  bool evaluated; /* ev holds the evaluation of the current parameters */
  bool prestaged; /* this step's batch was fed and staged during the last one (GPU) */
  bool nonfinite; /* the loss went non-finite: the parameters are not those of a good step */
} loop;

/* The run's length and where it starts (a checkpoint's position); under
 * mpirun every rank must have the same plan. */
static pd_status plan_loop(trainer *t, pd_checkpoint *ck, loop *L, pd_error *err) {
  pd_net *net = t->net;
  L->rows = t->feed.rows;
  L->per_epoch = (L->rows + t->batch - 1) / t->batch;
  L->total = t->no_steps ? 0 : t->iterations;
  if (!t->no_steps && t->iterations <= 0 &&
      (!pd_i64_mul(L->per_epoch, t->epochs, &L->total) || L->total > PD_MAX_STEPS))
    return pd_errorf(err, PD_ERR_INPUT, "%lld epochs of %lld batches are more than the %lld steps a run may take",
                     (long long)t->epochs, (long long)L->per_epoch, (long long)PD_MAX_STEPS);
  if (ck) {
    const pd_ckpt_state *cs = pd_checkpoint_state(ck);
    L->step = cs->step, L->epoch = cs->epoch, L->bi = cs->batch_in_epoch;
    if (t->plateau && cs->has_plateau) t->plat = (pd_plateau){cs->plateau_lr, cs->plateau_best, cs->plateau_bad};
    if (L->bi > L->per_epoch)
      return pd_errorf(err, PD_ERR_INPUT,
                       "%s/manifest.pbtxt: batch_in_epoch %lld is beyond this run's %lld batches per epoch "
                       "(other data or batch size?)",
                       pd_checkpoint_dir(ck), (long long)L->bi, (long long)L->per_epoch);
  }
  if (pd_dist_size() > 1) { /* the ranks must meet in the same collectives */
    int64_t plan[] = {L->rows,      t->batch,       L->total,
                      L->step,      L->epoch,       L->bi,
                      t->log_every, t->check_every, t->have_eval ? t->efeed.rows : -1,
                      t->nmetrics,  net->nops,      net->nvars};
    pd_status st = pd_cli_dist_same_plan(plan, (int)(sizeof plan / sizeof *plan), &t->diverged, err);
    if (st) return st;
  }
  L->lr_v = pd_net_var(net, "@lr"), L->step_v = pd_net_var(net, "@step");
  while (L->reduce_op < net->nops && !(net->ops[L->reduce_op].def->flags & PD_OP_COLLECTIVE)) L->reduce_op++;
  L->sum = calloc((size_t)t->nmetrics + 1, sizeof *L->sum), L->ev = calloc((size_t)t->nmetrics + 1, sizeof *L->ev);
  L->avg = calloc((size_t)t->nmetrics + 1, sizeof *L->avg);
  if (!L->sum || !L->ev || !L->avg) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  return PD_OK;
}

/* An epoch's end inside the run: its line (and evaluation), then the next
 * epoch's order of the rows. */
static pd_status next_epoch(trainer *t, loop *L, pd_error *err) {
  L->epoch++, L->bi = 0;
  pd_status st = end_epoch(t, L->epoch, L->step, L->ev, err);
  if (st) return st;
  L->evaluated = true;
  permutation(t->perm, L->rows, t->seed, L->epoch, t->shuffle);
  return PD_OK;
}

/* An op that names a row of the batch: say which row of the data it is. */
static void name_data_row_of_batch(trainer *t, int64_t start, int64_t n, pd_error *err) {
  if (err->row < 0 || err->row >= n) return;
  char files[1024] = "";
  size_t used = 0;
  for (int k = 0; k < t->feed.n && used < sizeof files; k++)
    used += (size_t)snprintf(files + used, sizeof files - used, "%s%s", k ? ", " : "", t->feed.b[k].file);
  size_t len = strlen(err->msg);
  snprintf(err->msg + len, sizeof err->msg - len, "; row %lld of the batch is row %lld of %s", (long long)err->row,
           (long long)t->perm[start + err->row], files);
}

/* The learning rate of the step after `step` updates: the schedule's, or
 * a plateau schedule's current lr once its warm-up is over. */
static double lr_at(const trainer *t, int64_t step) {
  const Paddle__LrSchedule *s = t->opt->schedule;
  if (t->plateau && !(s->warmup_steps > 0 && step < s->warmup_steps)) return t->plat.lr;
  return pd_schedule_lr(t->opt, step);
}

/* Feed this rank's rows [start, start + n) of the permutation and run the
 * step. On a GPU the step is only queued: read and stage the next batch of
 * the epoch now, so its copy overlaps this step's compute (one process; not
 * across an epoch's end, where evaluation comes in between). */
static pd_status run_batch(trainer *t, loop *L, int64_t start, int64_t n, pd_error *err) {
  pd_status st;
  pd_dist_step_begin(n, g_signal != 0);
  L->lr = lr_at(t, L->step);
  t->r.exec.step = L->step;
  if (!L->prestaged) {
    pd_tensor_set(t->r.t[L->lr_v], 0, L->lr);
    pd_tensor_set(t->r.t[L->step_v], 0, (double)(L->step + 1));
    if (n && (st = pd_feed_batch(&t->feed, &t->r, t->perm + start, n, err))) return st;
  }
  L->prestaged = t->staged_ahead = false;
  st = pd_runner_run(&t->r, n ? 0 : L->reduce_op, t->net->nops, err);
  int64_t err_start = start; /* where the batch an error names begins */
  /* not before an evaluation, which may change the lr (plateau) */
  if (!st && t->r.d && pd_dist_size() == 1 && L->step + 1 < L->total && L->bi + 1 < L->per_epoch &&
      !(t->eval_every && (L->step + 1) % t->eval_every == 0)) {
    int64_t next = start + n, nn = L->rows - next < t->batch ? L->rows - next : t->batch;
    t->staged_ahead = true;
    t->done_lr = L->lr, t->done_step = (double)(L->step + 1); /* what this step ran with */
    pd_tensor_set(t->r.t[L->lr_v], 0, lr_at(t, L->step + 1));
    pd_tensor_set(t->r.t[L->step_v], 0, (double)(L->step + 2));
    st = pd_feed_batch(&t->feed, &t->r, t->perm + next, nn, err);
    if (st) err_start = next;
    if (!st) st = pd_runner_stage(&t->r, err);
    L->prestaged = !st;
  }
  if (st) name_data_row_of_batch(t, err_start, n, err);
  return st;
}

/* The step's metrics, fetched; a non-finite loss stops the run, naming
 * the rows (and files) that carry a non-finite value. */
static pd_status check_loss(trainer *t, loop *L, int64_t start, int64_t n, pd_error *err) {
  pd_net *net = t->net;
  pd_status st = PD_OK;
  for (int m = 0; m < t->nmetrics && !st; m++) st = pd_runner_fetch(&t->r, t->metrics[m], err);
  if (st) { /* a GPU kernel's fault (a bad label) surfaces here, not in the step */
    name_data_row_of_batch(t, start, n, err);
    return st;
  }
  double loss = scalar(t->r.t[net->loss]);
  if (n && !isfinite(loss)) {
    char where[1024];
    find_nonfinite(t, t->perm + start, n, where, sizeof where);
    char lb[32];
    st =
        pd_errorf(err, PD_ERR_RUNTIME, "the loss \"%s\" is %s at step %lld (epoch %lld): %s", net->vars[net->loss].name,
                  pd_fmt_num(lb, sizeof lb, loss), (long long)L->step + 1, (long long)L->epoch + 1, where);
    L->nonfinite = true; /* the step's updates ran: no checkpoint of these parameters */
  }
  return st;
}

/* Under mpirun: the metrics summed over the ranks at a logged step, and the
 * ranks' parameters compared every check_every steps. */
static pd_status sync_ranks(trainer *t, loop *L, bool last, pd_error *err) {
  pd_status st;
  if (pd_dist_size() == 1) return PD_OK;
  if (L->step % t->log_every == 0 || last) {
    L->sum[t->nmetrics] = (double)L->seen;
    if ((st = reduce_sums(L->sum, t->nmetrics + 1, err))) return st;
    L->seen = (int64_t)L->sum[t->nmetrics];
  }
  /* on a GPU the checksum is over the parameters fetched back to the host */
  if ((L->step % t->check_every == 0 || last) &&
      ((st = pd_runner_fetch_persistables(&t->r, err)) || (st = pd_cli_dist_check(&t->r, L->step, &t->diverged, err))))
    return st;
  return PD_OK;
}

/* A logged step's JSON line. */
static pd_status log_step(trainer *t, loop *L, double rate, double tn, pd_error *err) {
  fprintf(t->log, "{\"type\":\"step\",\"epoch\":%lld,\"step\":%lld,\"lr\":%.9g", (long long)L->epoch + 1,
          (long long)L->step, L->lr);
  log_metrics(t, L->avg, "");
  if (pd_dist_size() > 1)
    fprintf(t->log, ",\"ranks\":%d,\"comm_seconds\":%.6f,\"shared_steps\":%lld", pd_dist_size(), pd_dist_comm_seconds(),
            (long long)pd_dist_shared_steps());
  fprintf(t->log, ",\"examples_per_sec\":%.1f,\"elapsed\":%.3f", rate, tn - t->t0);
  if (t->r.d) {
    pd_gpu_mem m = pd_gpu_mem_stats();
    fprintf(t->log, ",\"gpu_mem_bytes\":%zu,\"gpu_mem_peak_bytes\":%zu", m.in_use, m.peak);
  }
  return pd_log_end_record(t->log, t->log_path, err);
}

/* The progress line (every step on a terminal, else every log_every steps
 * and, in one process, every progress_every seconds) and the log line; a
 * logged step starts the next averages. */
static pd_status report_step(trainer *t, loop *L, bool last, pd_error *err) {
  bool timely = !t->tty && t->progress_every > 0 && pd_dist_size() == 1 && pd_cli_now() - L->tline >= t->progress_every;
  if (!(L->step % t->log_every == 0 || last || t->tty || timely)) return PD_OK;
  double tn = pd_cli_now(),
         rate = (double)(L->seen - L->logged_examples) / (tn - L->tstep > 1e-9 ? tn - L->tstep : 1e-9);
  for (int m = 0; m < t->nmetrics; m++) L->avg[m] = L->sum[m] / (double)(L->seen ? L->seen : 1);
  double eta = rate > 0 ? (double)(L->total - L->step) * (double)t->batch / rate : 0;
  bool logged = L->step % t->log_every == 0 || last;
  if (t->tty || logged || timely) {
    progress(t, L->epoch, L->step, L->total, L->avg, L->lr, rate, eta);
    L->tline = tn;
  }
  if (!logged) return PD_OK;
  pd_status st;
  if (t->log && (st = log_step(t, L, rate, tn, err))) return st;
  memset(L->sum, 0, sizeof *L->sum * (size_t)t->nmetrics);
  L->logged_examples = L->seen = 0;
  L->tstep = tn;
  return PD_OK;
}

/* A text run's STATE variables (the streams' carried state, which the
 * evaluation's forward ops overwrite with the evaluation's) copied aside
 * (keep) or back: training continues each stream where it stopped. */
static pd_status carry_state(trainer *t, bool keep, pd_error *err) {
  pd_net *net = t->net;
  if (!t->feed.text) return PD_OK;
  if (!t->carried && !(t->carried = calloc((size_t)net->nvars + 1, sizeof *t->carried)))
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int v = 0; v < net->nvars; v++) {
    const pd_var_info *vi = &net->vars[v];
    pd_tensor *x = t->r.t[v], *c = &t->carried[v];
    if (vi->kind != PD_VAR_STATE || vi->optimizer_state || !x->storage) continue;
    if (keep) {
      pd_status st = pd_runner_fetch(&t->r, v, err);
      c->dtype = x->dtype;
      if (!st && !c->storage) st = pd_tensor_set_dims(c, x->ndim, x->dims, err);
      if (!st && !c->storage) st = pd_tensor_alloc(c, err);
      if (st) return st;
      memcpy(pd_tensor_data(c), pd_tensor_data(x), pd_tensor_bytes(x));
    } else {
      memcpy(pd_tensor_data(x), pd_tensor_data(c), pd_tensor_bytes(x));
    }
  }
  return PD_OK;
}

/* --eval-every's evaluation inside an epoch: printed, logged as an "eval"
 * record, and given to a plateau schedule. */
static pd_status mid_epoch_eval(trainer *t, loop *L, pd_error *err) {
  pd_status st = carry_state(t, true, err);
  if (!st) st = evaluate(t, L->ev, err);
  if (!st) st = carry_state(t, false, err);
  if (st) return st;
  L->evaluated = true;
  if (t->plateau) plateau_step(t, L->step, L->ev[0]);
  if (pd_dist_rank() != 0) return PD_OK;
  pd_eval e = eval_of(t);
  fprintf(stderr, "%sstep %lld (epoch %lld):", t->tty ? "\n" : "", (long long)L->step, (long long)L->epoch + 1);
  pd_eval_print(&e, stderr, L->ev, "eval_");
  fputc('\n', stderr);
  return t->log ? pd_eval_record(&e, t->log, t->log_path, L->step, L->epoch + 1, L->ev, err) : PD_OK;
}

/* One step: this rank's slice of the batch, run, checked, counted and
 * reported; *stop when a signal (on any rank) asks the run to end. */
static pd_status train_step(trainer *t, loop *L, bool *stop, pd_error *err) {
  int64_t start = L->bi * t->batch, n = L->rows - start < t->batch ? L->rows - start : t->batch;
  /* this rank's slice of the global batch; with no rows it only joins the allreduce */
  int64_t lo, nl;
  my_slice(n, &lo, &nl);
  start += lo, n = nl;
  pd_status st = run_batch(t, L, start, n, err);
  if (!st) st = check_loss(t, L, start, n, err);
  if (st) return st;
  for (int m = 0; m < t->nmetrics && n; m++) {
    double v = scalar(t->r.t[t->metrics[m]]) * (double)n;
    L->sum[m] += v, t->esum[m] += v;
  }
  L->seen += n, t->esum[t->nmetrics] += (double)n;
  L->step++, L->bi++;
  L->evaluated = false;
  bool last = L->step == L->total;
  if ((st = sync_ranks(t, L, last, err)) || (st = report_step(t, L, last, err))) return st;
  /* on an epoch's last step the epoch's evaluation is this one */
  if (t->eval_every && L->step % t->eval_every == 0 && L->bi < L->per_epoch && (st = mid_epoch_eval(t, L, err)))
    return st;
  if (t->save_dir && t->save_every > 0 && L->step % t->save_every == 0 && !last)
    st = save(t, L->step, L->epoch, L->bi, L->lr, err);
  /* under MPI every rank stops after the same step: the one whose allreduce carried a request */
  if (pd_dist_size() > 1 ? pd_dist_global_stop() : g_signal != 0) {
    if (!g_signal) g_signal = SIGTERM; /* another rank was asked to stop */
    *stop = true;
  }
  return st;
}

/* The summary a script (or `make demo`) reads: the last evaluation. */
static pd_status print_summary(trainer *t, loop *L, pd_error *err) {
  pd_status st = PD_OK;
  double el = pd_cli_now() - t->t0;
  if (t->have_eval && !L->evaluated) st = evaluate(t, L->ev, err);
  if (st) return st;
  L->evaluated = true;
  char b[32];
  fprintf(stderr, "finished: %lld steps in %s", (long long)L->step, pd_fmt_secs(b, sizeof b, el));
  if (t->have_eval) print_metrics(t, stderr, L->ev, "eval_");
  fputc('\n', stderr);
  if (t->r.d) {
    long replays, captures;
    pd_gpu_runner_graph_stats(&t->r, &replays, &captures);
    char dev[300];
    fprintf(stderr, "gpu: %s;", pd_gpu_describe(dev, sizeof dev));
    print_gpu_mem(stderr, " memory %s in use, peak %s;");
    fprintf(stderr, " CUDA graph captured %ld, replayed %ld times\n", captures, replays);
    const char *note = pd_gpu_runner_graph_note(&t->r);
    if (note) fprintf(stderr, "gpu: note: %s\n", note);
  }
  return PD_OK;
}

/* After the last step (or a failure, or a signal): the last epoch's end,
 * the final checkpoint, the summary. */
static pd_status finish_loop(trainer *t, loop *L, pd_status st, pd_error *err) {
  if (!st && !g_signal && L->bi == L->per_epoch) {
    L->epoch++, L->bi = 0;
    if (!(st = end_epoch(t, L->epoch, L->step, L->ev, err))) L->evaluated = true;
  }
  if (!st && t->save_dir) {
    st = save(t, L->step, L->epoch, L->bi, L->lr, err);
  } else if (st && t->save_dir && !L->nonfinite && L->step > L->step0 && pd_dist_size() == 1 && !t->r.d) {
    /* a failure mid-run (evaluation, the log, reading data that shrank, an
     * op): the parameters are still those of the last good step (a failing
     * op stops the step before its updates), so they are saved first. Not
     * on a GPU, where the failing step may already be queued behind them. */
    keep_last_good(t, L->step, L->epoch, L->bi, L->lr, err);
  }
  if (!st && !g_signal) st = print_summary(t, L, err);
  return st;
}

static pd_status train_loop(trainer *t, pd_checkpoint *ck, pd_error *err) {
  loop L = {0};
  pd_status st = plan_loop(t, ck, &L, err);
  if (st) {
    free(L.sum), free(L.ev), free(L.avg);
    return st;
  }
  L.tstep = L.tline = t->t_epoch = pd_cli_now();
  L.step0 = L.step;
  permutation(t->perm, L.rows, t->seed, L.epoch, t->shuffle);
  while (L.step < L.total && !st) {
    if (L.bi == L.per_epoch && (st = next_epoch(t, &L, err))) break;
    bool stop = false;
    st = train_step(t, &L, &stop, err);
    if (stop) break;
  }
  st = finish_loop(t, &L, st, err);
  t->fin_step = L.step, t->fin_epoch = L.epoch;
  t->fin_ok = t->have_eval && L.evaluated;
  if (t->fin_ok) memcpy(t->fin, L.ev, sizeof *L.ev * (size_t)t->nmetrics);
  free(L.sum), free(L.ev), free(L.avg);
  return st;
}

/* The shapes of the net at the short last batch of `rows` (this rank's
 * slice of it under mpirun), checked before the first step: a shape that
 * only fits the full batch (a reshape to a fixed batch) would otherwise fail
 * after an epoch's worth of steps. */
static pd_status check_last_batch(trainer *t, int64_t rows, const char *what, pd_error *err) {
  int64_t last = rows % t->batch, lo, mine;
  if (!last) return PD_OK;
  my_slice(last, &lo, &mine);
  if (!mine) return PD_OK;
  pd_tensor *shapes = calloc((size_t)t->net->nvars + 1, sizeof *shapes);
  if (!shapes) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  pd_status st = pd_net_shapes_at(t->net, mine, shapes, err);
  free(shapes);
  if (st)
    pd_error_prefix(err,
                    "the %s data's last batch has %lld rows (%lld rows, batch size %lld), and the net does not take it",
                    what, (long long)mine, (long long)rows, (long long)t->batch);
  return st;
}

/* The log's first record of a run: its settings. */
static pd_status log_run(trainer *t, const char *net_path, const pd_opt *opts, pd_place place, pd_error *err) {
  FILE *f = t->log;
  pd_net *net = t->net;
  char when[32] = "";
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  fputs("{\"type\":\"run\",\"version\":", f);
  pd_json_str(f, PD_VERSION);
  fputs(",\"time\":", f);
  pd_json_str(f, when);
  fputs(",\"net\":", f);
  pd_json_str(f, net->desc->name ? net->desc->name : "");
  fputs(",\"net_file\":", f);
  pd_json_str(f, net_path);
  if (net->src) fprintf(f, ",\"net_crc32\":\"%08lx\"", crc32(0L, (const Bytef *)net->src, (uInt)net->src_len));
  fputs(",\"set\":[", f);
  for (int i = 0; i < opts[O_SET].n_values; i++) {
    if (i) fputc(',', f);
    pd_json_str(f, opts[O_SET].values[i]);
  }
  fputc(']', f);
  pd_json_feed(f, "data", net, &t->feed);
  if (t->have_eval) pd_json_feed(f, "eval_data", net, &t->efeed);
  fprintf(f, ",\"rows\":%lld,\"batch_size\":%lld", (long long)t->feed.rows, (long long)t->batch);
  if (t->no_steps || t->iterations > 0)
    fprintf(f, ",\"iterations\":%lld", (long long)(t->no_steps ? 0 : t->iterations));
  else
    fprintf(f, ",\"epochs\":%lld", (long long)t->epochs);
  if (t->eval_every) fprintf(f, ",\"eval_every\":%lld", (long long)t->eval_every);
  fputs(",\"optimizer\":", f);
  pd_json_str(f, t->opt->type ? t->opt->type : "sgd");
  fputs(",\"lr\":", f);
  pd_json_num(f, t->opt->lr);
  fprintf(f, ",\"seed\":%llu,\"shuffle\":%s,\"threads\":%d,\"device\":", (unsigned long long)t->seed,
          t->shuffle ? "true" : "false", pd_get_threads());
  char dev[32];
  snprintf(dev, sizeof dev, place.kind == PD_GPU ? "gpu:%d" : "cpu", place.device);
  pd_json_str(f, dev);
  fprintf(f, ",\"ranks\":%d,\"resume\":", pd_dist_size());
  pd_json_str(f, opts[O_RESUME].value);
  fputs(",\"params\":", f);
  pd_json_str(f, opts[O_PARAMS].value);
  fputs(",\"save\":", f);
  pd_json_str(f, t->save_dir);
  return pd_log_end_record(f, t->log_path, err);
}

/* The log's last record of a run: how it ended (finished, interrupted,
 * failed and why), where, and the last evaluation. Returns the exit code,
 * 1 instead of 0 when the log could not be written. */
static int log_end(trainer *t, int code, const pd_error *failure) {
  FILE *f = t->log;
  pd_error err = {0};
  pd_status st = PD_OK;
  if (!ferror(f)) { /* a log that failed already gets nothing more */
    const char *how = failure || (code && !g_signal) ? "failed" : g_signal ? "interrupted" : "finished";
    fputs("{\"type\":\"end\",\"status\":", f);
    pd_json_str(f, how);
    fprintf(f, ",\"exit\":%d", code);
    if (g_signal) fprintf(f, ",\"signal\":%d", (int)g_signal);
    if (failure) {
      fputs(",\"message\":", f);
      pd_json_str(f, failure->msg);
    }
    fprintf(f, ",\"step\":%lld,\"epochs_done\":%lld,\"elapsed\":%.3f", (long long)t->fin_step, (long long)t->fin_epoch,
            t->t0 > 0 ? pd_cli_now() - t->t0 : 0.0);
    if (t->fin_ok) log_metrics(t, t->fin, "eval_");
    const char *note = t->r.d ? pd_gpu_runner_graph_note(&t->r) : NULL;
    if (note) {
      fputs(",\"gpu_note\":", f);
      pd_json_str(f, note);
    }
    st = pd_log_end_record(f, t->log_path, &err);
    if (st) {
      fclose(f);
    } else {
      st = pd_log_close(f, t->log_path, &err);
    }
  } else {
    fclose(f);
  }
  t->log = NULL;
  if (st && !failure) {
    fprintf(stderr, "paddle-run: %s\n", err.msg);
    if (!code) code = 1;
  }
  return code;
}

static int train_main(int argc, char **argv);

static int run(int argc, char **argv) {
  int code = pd_cli_dist_begin();
  if (!code) code = train_main(argc, argv);
  return pd_cli_dist_end(code);
}

/* The flags' values, as given (0 where not). */
typedef struct train_flags {
  long long batch, epochs, iters, threads, save_every, keep, log_every, check_every, eval_every;
  uint64_t seed;
  double lr, comm_timeout;
} train_flags;

/* The command line alone, checked before any file is read: 0, or 2 after
 * the usage error is printed. */
static int read_flags(pd_opt *opts, int npos, train_flags *f) {
  *f = (train_flags){.keep = 3, .check_every = 100, .comm_timeout = 300};
  if (npos != 1) {
    pd_cli_usage_error("train", "expected NET.pbtxt; see `paddle-run train --help`");
    return 2;
  }
  if (opts[O_SHUF].value && opts[O_NOSHUF].value) {
    pd_cli_usage_error("train", "--shuffle and --no-shuffle exclude each other");
    return 2;
  }
  if (opts[O_EPOCHS].value && opts[O_ITERS].value) {
    pd_cli_usage_error("train", "give --epochs or --iterations, not both");
    return 2;
  }
  if ((opts[O_BATCH].value && !pd_cli_int("train", "--batch-size", opts[O_BATCH].value, 1, PD_MAX_BATCH, &f->batch)) ||
      (opts[O_EPOCHS].value && !pd_cli_int("train", "--epochs", opts[O_EPOCHS].value, 1, PD_MAX_STEPS, &f->epochs)) ||
      (opts[O_ITERS].value && !pd_cli_int("train", "--iterations", opts[O_ITERS].value, 0, PD_MAX_STEPS, &f->iters)) ||
      (opts[O_SEED].value && !pd_cli_u64("train", "--seed", opts[O_SEED].value, &f->seed)) ||
      (opts[O_THREADS].value &&
       !pd_cli_int("train", "--threads", opts[O_THREADS].value, 1, PD_MAX_THREADS, &f->threads)) ||
      (opts[O_SAVE_EVERY].value &&
       !pd_cli_int("train", "--save-every", opts[O_SAVE_EVERY].value, 1, PD_MAX_STEPS, &f->save_every)) ||
      (opts[O_KEEP].value && !pd_cli_int("train", "--keep", opts[O_KEEP].value, 1, PD_MAX_COUNT, &f->keep)) ||
      (opts[O_LOG_EVERY].value &&
       !pd_cli_int("train", "--log-every", opts[O_LOG_EVERY].value, 1, PD_MAX_STEPS, &f->log_every)) ||
      (opts[O_LR].value && !pd_cli_double("train", "--lr", opts[O_LR].value, &f->lr)) ||
      (opts[O_EVAL_EVERY].value &&
       !pd_cli_int("train", "--eval-every", opts[O_EVAL_EVERY].value, 0, PD_MAX_STEPS, &f->eval_every)) ||
      (opts[O_CHECK_EVERY].value &&
       !pd_cli_int("train", "--check-every", opts[O_CHECK_EVERY].value, 1, PD_MAX_STEPS, &f->check_every)) ||
      (opts[O_COMM_TIMEOUT].value &&
       !pd_cli_double("train", "--comm-timeout", opts[O_COMM_TIMEOUT].value, &f->comm_timeout)) ||
      !pd_cli_unique_vars("train", &opts[O_DATA]) || !pd_cli_unique_vars("train", &opts[O_EVAL]))
    return 2;
  if (!(f->comm_timeout > 0)) {
    pd_cli_usage_error("train", "--comm-timeout must be > 0, got %s", opts[O_COMM_TIMEOUT].value);
    return 2;
  }
  pd_dist_set_timeout(f->comm_timeout);
  if (opts[O_LR].value && !(f->lr > 0 && f->lr <= FLT_MAX)) { /* the step takes it as a float32 */
    pd_cli_usage_error("train", "--lr must be > 0 and at most %g (a float32), got %s", FLT_MAX, opts[O_LR].value);
    return 2;
  }
  if (opts[O_ALLOW_PARTIAL].value && !opts[O_PARAMS].value) {
    pd_cli_usage_error("train", "--allow-partial-params needs --params DIR");
    return 2;
  }
  if (opts[O_SAVE_EVERY].value && !opts[O_SAVE].value) {
    pd_cli_usage_error("train", "--save-every needs --save DIR");
    return 2;
  }
  return 0;
}

/* The run's settings: a flag where given, else the file's train section,
 * else the defaults. */
static pd_status apply_settings(trainer *t, const train_flags *f, const pd_opt *opts, const char *path, pd_error *err) {
  static Paddle__TrainDesc empty_train = PADDLE__TRAIN_DESC__INIT;
  static Paddle__OptimizerDesc empty_opt = PADDLE__OPTIMIZER_DESC__INIT;
  pd_status st = PD_OK;
  t->td = t->net->desc->train ? t->net->desc->train : &empty_train;
  t->opt = t->td->optimizer ? t->td->optimizer : &empty_opt;
  if (opts[O_OPT].value) {
    t->orig_type = t->opt->type;
    if (!(t->my_type = strdup(opts[O_OPT].value)))
      st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    else
      t->opt->type = t->my_type;
  }
  if (opts[O_LR].value) t->opt->lr = f->lr;
  t->batch = f->batch ? f->batch : t->td->batch_size;
  t->epochs = f->epochs ? f->epochs : t->td->epochs;
  t->iterations = f->epochs ? 0 : f->iters ? f->iters : t->td->iterations;
  /* iterations 0, from the flag or the file: no step */
  t->no_steps = opts[O_ITERS].value ? f->iters == 0 : !f->epochs && t->td->has_iterations && t->td->iterations == 0;
  if (!t->epochs && !t->iterations) t->epochs = 1;
  t->seed = opts[O_SEED].value ? f->seed : t->td->seed;
  t->shuffle = opts[O_NOSHUF].value ? false : opts[O_SHUF].value ? true : t->td->shuffle;
  t->log_every = f->log_every ? f->log_every : t->td->log_every > 0 ? t->td->log_every : 100;
  t->save_every = f->save_every;
  t->eval_every = opts[O_EVAL_EVERY].value ? f->eval_every : t->td->eval_every;
  if (t->eval_every < 0) st = pd_errorf(err, PD_ERR_INPUT, "%s: train.eval_every must be >= 0", path);
  t->plateau = t->opt->schedule && t->opt->schedule->type && !strcmp(t->opt->schedule->type, "plateau");
  t->plat = (pd_plateau){.lr = t->opt->lr, .best = INFINITY};
  t->save_dir = opts[O_SAVE].value;
  t->tty = isatty(2) && pd_dist_size() == 1;
  t->progress_every = 10;
  const char *pe = getenv("PADDLE_RUN_PROGRESS_SECONDS");
  if (pe && *pe) {
    char *end;
    double v = strtod(pe, &end);
    if (*end || !(v >= 0) || !isfinite(v))
      st = pd_errorf(err, PD_ERR_INPUT, "PADDLE_RUN_PROGRESS_SECONDS must be seconds >= 0, got \"%s\"", pe);
    t->progress_every = v;
  }
  if (t->batch <= 0) st = pd_errorf(err, PD_ERR_INPUT, "%s: train.batch_size must be > 0", path);
  if (!st && (!t->td->loss || !*t->td->loss))
    st = pd_errorf(err, PD_ERR_INPUT, "%s: no loss: set train { loss: \"VAR\" } in the file", path);
  return st;
}

/* The net made trainable on `place`, and its data bound: the file's
 * bindings, then flags (which override). The evaluation data opens after
 * the training data, not beside it on a thread: that saves little start-up
 * time and raises the peak RSS by the evaluation images, held while the
 * training images inflate. */
static pd_status prepare_net(trainer *t, pd_place place, const pd_opt *opts, const char *path, pd_error *err) {
  pd_status st = pd_schedule_check(t->opt, err);
  if (!st) {
    t->net->ranks = pd_dist_size();
    /* GPUs under mpirun: the gradients' allreduce through NCCL, one rank too
     * (where it loads: more ranks without it were refused by pd_cli_device) */
    t->net->nccl = place.kind == PD_GPU && pd_dist_joined() && pd_nccl_available();
  }
  /* a net printed by `desc --backward --optimizer` already has them */
  if (!st) st = pd_net_make_trainable(t->net, t->td->loss, t->opt, err);
  if (!st) st = pd_net_select_kernels(t->net, place.kind, err);
  t->feed.text_streams = t->efeed.text_streams = t->batch; /* a text binding: one stream a batch row */
  if (!st)
    st = pd_feed_bind_all(&t->feed, t->net, path, t->td->data, t->td->n_data, "train.data", opts[O_DATA].values,
                          opts[O_DATA].n_values, "--data", err);
  if (!st)
    st = pd_feed_check(&t->feed, t->net, NULL, "add train { data { var: ... file: ... } } or --data VAR=FILE", err);
  if (!st) st = pd_net_check_memory(t->net, t->batch < t->feed.rows ? t->batch : t->feed.rows, err);
  if (!st)
    st = pd_feed_bind_all(&t->efeed, t->net, path, t->td->eval_data, t->td->n_eval_data, "train.eval_data",
                          opts[O_EVAL].values, opts[O_EVAL].n_values, "--eval-data", err);
  if (!st) st = pd_feed_bind_held_out(&t->efeed, t->net, path, t->td->data, t->td->n_data, err);
  if (t->feed.text) t->shuffle = false; /* windows continue each row's stream from batch to batch */
  return st;
}

/* The variables reported: the loss, then train.metrics. */
static pd_status pick_metrics(trainer *t, const char *path, pd_error *err) {
  pd_status st = PD_OK;
  t->metrics = calloc(t->td->n_metrics + 1, sizeof *t->metrics);
  if (!t->metrics)
    st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  else
    t->metrics[t->nmetrics++] = t->net->loss;
  for (size_t i = 0; !st && i < t->td->n_metrics; i++) {
    int v = pd_net_var(t->net, t->td->metrics[i]);
    if (v < 0 || pd_tensor_numel(&t->net->vars[v].meta) != 1)
      st = pd_errorf(err, PD_ERR_INPUT, "%s: train.metrics \"%s\" must be a one-element variable of the net", path,
                     t->td->metrics[i]);
    else
      t->metrics[t->nmetrics++] = v;
  }
  return st;
}

/* The forward ops the metrics need, which the evaluation runs; its data
 * must feed them. */
static pd_status prune_eval(trainer *t, pd_error *err) {
  pd_status st = PD_OK;
  t->eval_ops = calloc((size_t)t->net->nops + 1, 1);
  if (!t->eval_ops)
    st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  else
    pd_net_prune(t->net, t->metrics, t->nmetrics, t->eval_ops);
  for (int o = t->net->n_forward; t->eval_ops && o < t->net->nops; o++) t->eval_ops[o] = false;
  if (!st) st = pd_feed_check(&t->efeed, t->net, t->eval_ops, "give --eval-data for it too", err);
  t->have_eval = !st;
  return st;
}

/* A plateau schedule and --eval-every evaluate during training: refused
 * without evaluation data (and, for now, a text run's mid-epoch evaluation
 * on a GPU, whose carried state it would have to copy back). */
static pd_status check_eval_needs(trainer *t, pd_place place, const char *path, pd_error *err) {
  if (t->plateau && !t->have_eval)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: schedule \"plateau\" lowers the lr when the evaluation loss stops improving, and this run "
                     "has no evaluation data: give train.eval_data, --eval-data or a held_out text binding",
                     path);
  if (t->eval_every && !t->have_eval)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: eval_every %lld: there is no evaluation data; give train.eval_data or --eval-data", path,
                     (long long)t->eval_every);
  if (t->eval_every && t->feed.text && place.kind == PD_GPU)
    return pd_errorf(err, PD_ERR_INPUT,
                     "eval_every with a text binding runs on the CPU only for now (a mid-epoch evaluation must keep "
                     "the training streams' carried state); evaluate at epochs' ends (eval_every 0) on a GPU");
  return PD_OK;
}

/* What would fail at a later step fails now: a class label out of range in
 * either data, a shape the short last batch cannot take, and (unless
 * --no-check-data) float data that is not finite: one NaN would reach the
 * loss (or, through an integer cast, turn into 0) mid-run. */
static pd_status check_data(trainer *t, const pd_opt *opts, pd_error *err) {
  pd_status st = pd_check_labels(t->net, &t->feed, "training", err);
  if (!st && t->have_eval) st = pd_check_labels(t->net, &t->efeed, "evaluation", err);
  if (!st) st = check_last_batch(t, t->feed.rows, "training", err);
  if (!st && t->have_eval) st = check_last_batch(t, t->efeed.rows, "evaluation", err);
  if (!st && !(t->esum = calloc((size_t)t->nmetrics + 1, sizeof *t->esum)))
    st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (!st && !(t->fin = calloc((size_t)t->nmetrics + 1, sizeof *t->fin)))
    st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (!st && !opts[O_NO_CHECK_DATA].value) st = pd_feed_check_finite(&t->feed, t->net, "--no-check-data", err);
  if (!st && t->have_eval && !opts[O_NO_CHECK_DATA].value)
    st = pd_feed_check_finite(&t->efeed, t->net, "--no-check-data", err);
  return st;
}

/* The save directory checked and locked (one writer each), the parameters
 * initialised or read, then the log opened. */
static pd_status open_state(trainer *t, const pd_opt *opts, const char *path, pd_place place, pd_error *err) {
  bool rank0 = pd_dist_rank() == 0; /* the one that writes checkpoints and the log */
  pd_status st = PD_OK;
  if (rank0 && t->save_dir) st = pd_checkpoint_check_writable(t->save_dir, err);
  if (!st && rank0 && t->save_dir) st = pd_checkpoint_lock(t->save_dir, &t->save_lock, err);
  if (!st && !(t->scope = pd_scope_new(NULL))) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (!st)
    st = fill_persistables(t, opts[O_PARAMS].value, opts[O_ALLOW_PARTIAL].value != NULL, opts[O_RESUME].value, &t->ck,
                           err);
  if (!st && rank0 && t->save_dir) st = check_save_dir(t, t->ck, err);
  /* after every input is read: never one of them, a directory or a socket;
   * a resumed run appends to its log (the log is the run's history) */
  if (!st && rank0 && opts[O_LOG].value)
    st = pd_output_open_stream("--log", opts[O_LOG].value, opts[O_RESUME].value != NULL, &t->log, err);
  t->log_path = opts[O_LOG].value;
  if (!st && t->log) st = log_run(t, path, opts, place, err);
  return st;
}

/* The training runner (its gradients sharing buffers; its forward values,
 * which the evaluation runner shares unplanned, kept to name a non-finite
 * loss), the evaluation one, and the row buffers. */
static pd_status make_runners(trainer *t, pd_place place, pd_error *err) {
  pd_status st = pd_runner_init(&t->r, t->net, t->scope, NULL, err);
  if (!st) st = pd_runner_plan_memory(&t->r, t->metrics, t->nmetrics, true, err);
  if (!st && t->have_eval) st = pd_runner_init(&t->er, t->net, t->scope, t->eval_ops, err);
  /* on GPUs of several ranks the device copies come after the broadcast (share) */
  t->late_place = place.kind == PD_GPU && pd_dist_size() > 1;
  if (!st && !t->late_place) st = set_place(t, place, err);
  if (!st) {
    t->r.exec.training = true;
    t->r.exec.seed = t->seed;
    t->er.exec.training = false;
    t->er.exec.seed = t->seed;
    t->perm = pd_malloc_array((size_t)t->feed.rows + 1, sizeof *t->perm);
    t->rows = pd_malloc_array((size_t)t->batch + 1, sizeof *t->rows);
    if (!t->perm || !t->rows) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  return st;
}

/* Everything before the first step, in order; a failure stops the chain. */
static pd_status setup(trainer *t, const train_flags *f, const pd_opt *opts, const char *path, pd_place place,
                       pd_error *err) {
  pd_net_opts nopts = {.float_dtype = PD_F32, .overrides = opts[O_SET].values, .n_overrides = opts[O_SET].n_values};
  pd_status st = pd_net_load(path, &nopts, &t->net, err);
  if (!st) st = apply_settings(t, f, opts, path, err);
  if (!st) st = prepare_net(t, place, opts, path, err);
  if (!st) st = pick_metrics(t, path, err);
  if (!st && t->efeed.n) st = prune_eval(t, err);
  if (!st) st = check_eval_needs(t, place, path, err);
  if (!st) st = check_data(t, opts, err);
  /* a save directory this run creates is removed again if the run saves
   * nothing (a failure before the first checkpoint leaves no trace) */
  struct stat sb;
  t->made_save_dir = pd_dist_rank() == 0 && t->save_dir && stat(t->save_dir, &sb) != 0;
  if (!st) st = open_state(t, opts, path, place, err);
  if (!st) st = make_runners(t, place, err);
  return st;
}

/* The signals caught, the ranks' data compared, the start logged, then the
 * steps. */
static pd_status start_training(trainer *t, pd_error *err) {
  pd_status st = PD_OK;
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  t->t0 = pd_cli_now();
  /* ranks reading other data of the same shape would train on a mix */
  if (pd_dist_size() > 1)
    st = pd_cli_dist_same_data(t->net, &t->feed, t->have_eval ? &t->efeed : NULL, &t->diverged, err);
  if (!st && t->log) { /* start-up: main() to the first step, data opened and parameters placed */
    fprintf(t->log, "{\"type\":\"start\",\"ranks\":%d,\"startup\":%.4f", pd_dist_size(), t->t0 - pd_cli_t_main);
    if (pd_dist_size() > 1) { /* how the CPU gradients are summed */
      const char *why = pd_dist_shared_why_not();
      fprintf(t->log, ",\"allreduce\":\"%s%s%s\"", why ? "mpi (" : "shared memory", why ? why : "", why ? ")" : "");
    }
    st = pd_log_end_record(t->log, t->log_path, err);
  }
  if (!st) st = train_loop(t, t->ck, err);
  return st;
}

/* The exit code (`code`: the setup's, `agreed`: another rank's failed
 * setup), the save directory unlocked (removed when this run made it and
 * failed), and the log's end record. */
static int finish(trainer *t, int code, int agreed, pd_status st, pd_error *err) {
  /* under mpirun a failure aborts every rank (pd_cli_dist_fail): the log's end first */
  if (t->log && !code && !agreed && st && pd_dist_size() > 1) log_end(t, pd_exit_code(err->status), err);
  if (!code && agreed)
    code = agreed; /* another rank failed its setup; it said why */
  else if (!code && st)
    code = pd_cli_dist_fail(err, t->diverged);
  else if (!code)
    code = g_signal == SIGINT ? 130 : g_signal == SIGTERM ? 143 : 0;
  pd_checkpoint_unlock(t->save_lock);
  if (st && t->made_save_dir) rmdir(t->save_dir); /* only succeeds while empty */
  if (g_signal)
    fprintf(stderr, "paddle-run: interrupted by signal %d%s\n", (int)g_signal, t->save_dir ? "; checkpoint saved" : "");
  if (t->log) code = log_end(t, code, st ? err : NULL);
  return code;
}

static void free_trainer(trainer *t) {
  if (t->my_type) {
    t->opt->type = t->orig_type;
    free(t->my_type);
  }
  free(t->metrics), free(t->perm), free(t->rows), free(t->eval_ops), free(t->esum), free(t->fin);
  for (int v = 0; t->carried && v < t->net->nvars; v++) pd_tensor_release(&t->carried[v]);
  free(t->carried);
  pd_runner_free(&t->r);
  pd_runner_free(&t->er);
  pd_feed_close(&t->feed);
  pd_feed_close(&t->efeed);
  pd_checkpoint_close(t->ck);
  pd_scope_free(t->scope);
  pd_net_free(t->net);
  pd_nccl_close();
  pd_gpu_close();
}

/* Set up, agree with the other ranks, train, and clean up: the exit code. */
static int train(const train_flags *f, const pd_opt *opts, const char *path, pd_place place) {
  trainer t = {.keep = f->keep, .check_every = f->check_every};
  pd_error err = {0};
  pd_status st = setup(&t, f, opts, path, place, &err);
  /* every rank's setup done or failed: agreed before training (under MPI) */
  int code = st ? pd_cli_fail(&err) : 0;
  int agreed = pd_cli_dist_agree(code);
  if (!st && !agreed && !(st = share(&t, place, t.late_place, &err))) st = start_training(&t, &err);
  code = finish(&t, code, agreed, st, &err);
  free_trainer(&t);
  return code;
}

static int train_main(int argc, char **argv) {
  pd_opt opts[NOPT] = {
      [O_DATA] = {.name = "--data", .has_value = true, .repeat = true},
      [O_EVAL] = {.name = "--eval-data", .has_value = true, .repeat = true},
      [O_BATCH] = {.name = "--batch-size", .has_value = true},
      [O_EPOCHS] = {.name = "--epochs", .has_value = true},
      [O_ITERS] = {.name = "--iterations", .has_value = true},
      [O_OPT] = {.name = "--optimizer", .has_value = true},
      [O_LR] = {.name = "--lr", .has_value = true},
      [O_SEED] = {.name = "--seed", .has_value = true},
      [O_SHUF] = {.name = "--shuffle"},
      [O_NOSHUF] = {.name = "--no-shuffle"},
      [O_THREADS] = {.name = "--threads", .has_value = true},
      [O_SAVE] = {.name = "--save", .has_value = true},
      [O_SAVE_EVERY] = {.name = "--save-every", .has_value = true},
      [O_KEEP] = {.name = "--keep", .has_value = true},
      [O_RESUME] = {.name = "--resume", .has_value = true},
      [O_PARAMS] = {.name = "--params", .has_value = true},
      [O_LOG] = {.name = "--log", .has_value = true},
      [O_LOG_EVERY] = {.name = "--log-every", .has_value = true},
      PD_DEVICE_OPTS(O_DEVICE),
      [O_SET] = {.name = "--set", .has_value = true, .repeat = true},
      [O_CHECK_EVERY] = {.name = "--check-every", .has_value = true},
      [O_COMM_TIMEOUT] = {.name = "--comm-timeout", .has_value = true},
      [O_NO_CHECK_DATA] = {.name = "--no-check-data"},
      [O_ALLOW_PARTIAL] = {.name = "--allow-partial-params"},
      [O_EVAL_EVERY] = {.name = "--eval-every", .has_value = true},
  };
  char *pos[1];
  int code = 0;
  train_flags f;
  pd_place place;
  int npos = pd_cli_parse(&pd_cmd_train, argc, argv, opts, NOPT, pos, 1, &code);
  if (npos < 0 || (code = read_flags(opts, npos, &f))) goto out;
  pd_set_threads((int)f.threads);
  if ((code = pd_cli_device("train", opts, O_DEVICE, &place))) goto out;
  code = train(&f, opts, pos[0], place);
out:
  pd_cli_free(opts, NOPT);
  return code;
}
