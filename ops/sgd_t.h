/* sgd_t.h — sgd's CPU kernel for one element type T (base/tmpl.h): sgd.c
 * includes this file once for float and once for double. */

static void PD_T(range)(void *arg, int64_t lo, int64_t hi) {
  const job *j = arg;
  const T *p = j->p, *g = j->g;
  T *out = j->out, lr = (T)j->lr, wd = (T)j->wd;
  if (out == p) { /* in place: vectorizable */
    T *restrict pp = out;
    const T *restrict gg = g;
    for (int64_t i = lo; i < hi; i++) pp[i] = PD_T(pd_sgd)(pp[i], gg[i], lr, wd);
    return;
  }
  for (int64_t i = lo; i < hi; i++) out[i] = PD_T(pd_sgd)(p[i], g[i], lr, wd);
}

/* Row-sparse: entry i of Grad updates row Rows[i] of Param (lazy weight decay). */
static void PD_T(rows_range)(void *arg, int64_t lo, int64_t hi) {
  const pd_rows_job *rj = arg;
  const job *j = rj->job;
  for (int64_t i = lo; i < hi; i++) {
    int64_t r = rj->rows[i], d = rj->d;
    if (r < 0) continue;
    job row = {(const T *)j->p + r * d, (const T *)j->g + i * d, (T *)j->out + r * d, j->lr, j->wd};
    PD_T(range)(&row, 0, d);
  }
}

static pd_status PD_T(update)(pd_ctx *c) {
  job j = {PD_DATA(pd_in(c, PARAM), T), PD_DATA(pd_in(c, GRAD), T), PD_DATA(pd_out(c, PARAM_OUT), T),
           (T)(pd_tensor_get(pd_in(c, LR), 0) * pd_attr_f(c, A_LR_MULT)), pd_attr_f(c, A_WD)};
  pd_status st = pd_optim_check_rows(c, ROWS, PARAM);
  if (st || pd_optim_run_rows(c, ROWS, PARAM, &j, PD_T(rows_range))) return st;
  pd_parallel_for(pd_tensor_numel(pd_in(c, PARAM)), PD_UPDATE_GRAIN, PD_T(range), &j);
  return PD_OK;
}
