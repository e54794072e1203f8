/* evaluate.h — the evaluation `train` runs after an epoch (or every
 * --eval-every steps) and `test` runs on a checkpoint: the metrics averaged
 * over the rows of an evaluation feed, printed and logged the same way by
 * both commands, so their figures agree to the last bit. */
#ifndef PD_EVALUATE_H
#define PD_EVALUATE_H

#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "core/net.h"
#include "core/runner.h"
#include "io/feed.h"

/* What an evaluation reads: the forward-only runner and its feed, the
 * variables reported (the loss first), the batch, and a row buffer of at
 * least `batch` entries. */
typedef struct pd_eval {
  pd_runner *er;
  pd_feed *feed;
  const pd_net *net;
  const int *metrics;
  int nmetrics;
  int64_t batch;
  int64_t *rows;
} pd_eval;

/* values[0..nmetrics): each metric averaged over the feed's rows, weighted
 * by each batch's rows; under mpirun each rank runs its slice and the sums
 * are reduced. */
pd_status pd_eval_run(const pd_eval *e, double *values, pd_error *err);
/* " PREFIXNAME VALUE" for each metric, as a person reads it. */
void pd_eval_print(const pd_eval *e, FILE *out, const double *values, const char *prefix);
/* ,"PREFIXNAME":VALUE for each metric, into a JSON record. */
void pd_eval_log(const pd_eval *e, FILE *log, const double *values, const char *prefix);
/* The log's evaluation record: {"type":"eval","step":S,"epoch":E,
 * "rows":N,"eval_NAME":V...}; ended and checked. */
pd_status pd_eval_record(const pd_eval *e, FILE *log, const char *log_path, int64_t step, int64_t epoch,
                         const double *values, pd_error *err);

#endif
