/* evaluate.c — the metrics of an evaluation feed (evaluate.h), shared by
 * `train` and `test`. */
#include "evaluate.h"

#include <math.h>

#include "dist/dist.h"
#include "trainlog.h"

static double scalar(const pd_tensor *t) { return pd_tensor_numel(t) >= 1 ? pd_tensor_get(t, 0) : NAN; }

pd_status pd_eval_run(const pd_eval *e, double *values, pd_error *err) {
  int64_t rows = e->feed->rows;
  int r = pd_dist_rank(), size = pd_dist_size();
  int64_t done = rows * r / size, end = rows * (r + 1) / size; /* this rank's slice */
  for (int m = 0; m < e->nmetrics; m++) values[m] = 0;
  while (done < end) {
    int64_t n = end - done < e->batch ? end - done : e->batch;
    for (int64_t i = 0; i < n; i++) e->rows[i] = done + i;
    pd_status st = pd_feed_batch(e->feed, e->er, e->rows, n, err);
    if (!st) st = pd_runner_run(e->er, 0, e->net->n_forward, err);
    for (int m = 0; m < e->nmetrics && !st; m++) st = pd_runner_fetch(e->er, e->metrics[m], err);
    if (st) return st;
    for (int m = 0; m < e->nmetrics; m++) values[m] += scalar(e->er->t[e->metrics[m]]) * (double)n;
    done += n;
  }
  pd_status st = size > 1 ? pd_dist_allreduce_sum(values, e->nmetrics, PD_F64, "the metrics' allreduce", err) : PD_OK;
  if (st) return st;
  for (int m = 0; m < e->nmetrics; m++) values[m] /= (double)rows;
  return PD_OK;
}

void pd_eval_print(const pd_eval *e, FILE *out, const double *values, const char *prefix) {
  char b[32];
  for (int m = 0; m < e->nmetrics; m++)
    fprintf(out, " %s%s %s", prefix, e->net->vars[e->metrics[m]].name, pd_fmt_num(b, sizeof b, values[m]));
}

void pd_eval_log(const pd_eval *e, FILE *log, const double *values, const char *prefix) {
  for (int m = 0; m < e->nmetrics; m++) {
    fprintf(log, ",\"%s%s\":", prefix, e->net->vars[e->metrics[m]].name);
    pd_json_num(log, values[m]);
  }
}

pd_status pd_eval_record(const pd_eval *e, FILE *log, const char *log_path, int64_t step, int64_t epoch,
                         const double *values, pd_error *err) {
  fprintf(log, "{\"type\":\"eval\",\"step\":%lld,\"epoch\":%lld,\"rows\":%lld", (long long)step, (long long)epoch,
          (long long)e->feed->rows);
  pd_eval_log(e, log, values, "eval_");
  return pd_log_end_record(log, log_path, err);
}
