/* gradcheck.c — `paddle-run gradcheck`: a user's whole network, loaded in
 * float64, its backward ops checked against central finite differences on
 * the first rows of its data. Prints each parameter's worst error and the
 * worst overall; exit 1 when it is above the tolerance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backward.h"
#include "cli.h"
#include "io/feed.h"
#include "core/gradcheck.h"
#include "core/initializer.h"
#include "io/params.h"
#include "base/util.h"
#include "core/optimizer.h"
#include "cpu/parallel.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_gradcheck = {
    "gradcheck", "check the gradients of a network against finite differences",
    "usage: paddle-run gradcheck NET.pbtxt [--data VAR=FILE]... [--params DIR] [--rows N]\n"
    "                            [--elements N] [--seed N] [--tol F] [--threads N]\n"
    "\n"
    "Loads NET.pbtxt in float64, adds the backward ops for train.loss, and\n"
    "compares each parameter's gradient with central finite differences on the\n"
    "first rows of the data (the file's train.data, or --data).\n"
    "\n"
    "  --rows N       rows of data to use (default 4)\n"
    "  --elements N   elements checked per parameter, chosen with the seed (default 16; 0: all)\n"
    "  --params DIR   parameters to check at (default: initialised from the seed)\n"
    "  --seed N       seed for initialisation and element choice (default: the file's)\n"
    "  --tol F        largest relative error accepted (default 1e-6)\n"
    "  --threads N    threads for the kernels (default: all cores)\n"
    "\n"
    "Exit 0 when every error is within the tolerance, 1 when not, 2 on bad input.\n",
    run};

static int run(int argc, char **argv) {
  enum { DATA, PARAMS, ROWS, ELEMS, SEED, TOL, THREADS, NOPT };
  pd_opt opts[NOPT] = {{.name = "--data", .has_value = true, .repeat = true},
                       {.name = "--params", .has_value = true},
                       {.name = "--rows", .has_value = true},
                       {.name = "--elements", .has_value = true},
                       {.name = "--seed", .has_value = true},
                       {.name = "--tol", .has_value = true},
                       {.name = "--threads", .has_value = true}};
  char *pos[1];
  int code = 0;
  int npos = pd_cli_parse(&pd_cmd_gradcheck, argc, argv, opts, NOPT, pos, 1, &code);
  if (npos < 0) goto out;
  code = 2;
  long long rows = 4, elems = 16, threads = 0;
  uint64_t seed = 0;
  double tol = 1e-6;
  if (npos != 1) {
    pd_cli_usage_error("gradcheck", "expected NET.pbtxt; see `paddle-run gradcheck --help`");
    goto out;
  }
  if ((opts[ROWS].value && !pd_cli_int("gradcheck", "--rows", opts[ROWS].value, 1, PD_MAX_BATCH, &rows)) ||
      (opts[ELEMS].value && !pd_cli_int("gradcheck", "--elements", opts[ELEMS].value, 0, INT64_MAX, &elems)) ||
      (opts[SEED].value && !pd_cli_u64("gradcheck", "--seed", opts[SEED].value, &seed)) ||
      (opts[TOL].value && !pd_cli_double("gradcheck", "--tol", opts[TOL].value, &tol)) ||
      (opts[THREADS].value &&
       !pd_cli_int("gradcheck", "--threads", opts[THREADS].value, 1, PD_MAX_THREADS, &threads)) ||
      !pd_cli_unique_vars("gradcheck", &opts[DATA]))
    goto out;
  pd_set_threads((int)threads);
  pd_error err = {0};
  pd_net_opts nopts = {.float_dtype = PD_F64};
  pd_net *net = NULL;
  pd_scope *scope = NULL;
  pd_feed feed = {0};
  pd_runner r = {0};
  int64_t *idx = NULL;
  pd_status st = pd_net_load(pos[0], &nopts, &net, &err);
  const Paddle__TrainDesc *td = st ? NULL : net->desc->train;
  if (!st && (!td || !td->loss || !*td->loss))
    st = pd_errorf(&err, PD_ERR_INPUT, "%s: no loss: set train { loss: \"VAR\" } in the file", pos[0]);
  if (!st) st = pd_net_make_trainable(net, td->loss, NULL, &err);
  if (!st) st = pd_net_select_kernels(net, PD_CPU, &err);
  if (td) feed.text_streams = td->batch_size; /* a text binding's streams, as train cuts them */
  if (!st)
    st = pd_feed_bind_all(&feed, net, pos[0], td ? td->data : NULL, td ? td->n_data : 0, "train.data",
                          opts[DATA].values, opts[DATA].n_values, "--data", &err);
  if (!st) st = pd_feed_check(&feed, net, NULL, "add train { data { ... } } or give --data VAR=FILE", &err);
  uint64_t s = opts[SEED].value ? seed : td ? td->seed : 1;
  if (!st && !(scope = pd_scope_new(NULL))) st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
  if (!st && opts[PARAMS].value) st = pd_params_load(net, scope, opts[PARAMS].value, NULL, false, NULL, NULL, &err);
  if (!st) st = pd_init_persistables(net, scope, td->default_init, s, &err);
  if (!st) st = pd_runner_init(&r, net, scope, NULL, &err);
  int64_t n = feed.n && feed.rows < rows ? feed.rows : rows;
  if (!st && !(idx = pd_malloc_array((size_t)n, sizeof *idx))) st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
  for (int64_t i = 0; !st && i < n; i++) idx[i] = i;
  if (!st && feed.n) st = pd_feed_batch(&feed, &r, idx, n, &err);
  r.exec.training = true;
  r.exec.seed = s;
  pd_gradcheck_result res;
  if (!st) st = pd_gradcheck_run(&r, elems, s, 1e-6, &res, &err);
  if (st)
    code = pd_cli_fail(&err);
  else {
    printf("checked %d parameters, %lld elements, in float64 on %lld rows\n", res.vars, (long long)res.elems,
           (long long)n);
    printf("worst: %s[%lld]: analytic %.10g, numeric %.10g, relative error %.3g (tolerance %g; differences up to "
           "%.3g, the loss's rounding over 2h, count as 0)\n",
           res.worst_var, (long long)res.worst_index, res.analytic, res.numeric, res.worst_err, tol, res.noise);
    code = res.worst_err <= tol ? 0 : 1;
    if (code) printf("FAILED: the gradient of %s does not match finite differences\n", res.worst_var);
  }
  free(idx);
  pd_runner_free(&r);
  pd_feed_close(&feed);
  pd_scope_free(scope);
  pd_net_free(net);
out:
  pd_cli_free(opts, NOPT);
  return code;
}
