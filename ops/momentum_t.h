/* momentum_t.h — momentum's CPU kernel for one element type T
 * (base/tmpl.h): momentum.c includes this file once per type. */

static void PD_T(range)(void *arg, int64_t lo, int64_t hi) {
  const job *j = arg;
  const T *p = j->p, *g = j->g, *v = j->v;
  T *p_out = j->p_out, *v_out = j->v_out, lr = (T)j->lr, mu = (T)j->mu, wd = (T)j->wd;
  if (p_out == p && v_out == v) { /* in place, as the optimizer pass makes it: vectorizable */
    T *restrict pp = p_out, *restrict vv = v_out;
    const T *restrict gg = g;
    if (j->nesterov)
      for (int64_t i = lo; i < hi; i++) PD_T(pd_momentum)(pp[i], gg[i], vv[i], lr, mu, wd, true, &pp[i], &vv[i]);
    else
      for (int64_t i = lo; i < hi; i++) PD_T(pd_momentum)(pp[i], gg[i], vv[i], lr, mu, wd, false, &pp[i], &vv[i]);
    return;
  }
  const bool nesterov = j->nesterov;
  for (int64_t i = lo; i < hi; i++) PD_T(pd_momentum)(p[i], g[i], v[i], lr, mu, wd, nesterov, &p_out[i], &v_out[i]);
}

/* Row-sparse: entry i of Grad updates row Rows[i] of Param and Velocity
 * (lazily: other rows' velocities neither decay nor move their rows). */
static void PD_T(rows_range)(void *arg, int64_t lo, int64_t hi) {
  const pd_rows_job *rj = arg;
  const job *j = rj->job;
  for (int64_t i = lo; i < hi; i++) {
    int64_t r = rj->rows[i], d = rj->d;
    if (r < 0) continue;
    job row = *j;
    row.p = (const T *)j->p + r * d, row.g = (const T *)j->g + i * d, row.v = (const T *)j->v + r * d;
    row.p_out = (T *)j->p_out + r * d, row.v_out = (T *)j->v_out + r * d;
    PD_T(range)(&row, 0, d);
  }
}

static pd_status PD_T(update)(pd_ctx *c) {
  job j = {PD_DATA(pd_in(c, PARAM), T),
           PD_DATA(pd_in(c, GRAD), T),
           PD_DATA(pd_in(c, VELOCITY), T),
           PD_DATA(pd_out(c, PARAM_OUT), T),
           PD_DATA(pd_out(c, VELOCITY_OUT), T),
           (T)(pd_tensor_get(pd_in(c, LR), 0) * pd_attr_f(c, A_LR_MULT)),
           pd_attr_f(c, A_MU),
           pd_attr_f(c, A_WD),
           pd_attr_b(c, A_NESTEROV)};
  pd_status st = pd_optim_check_rows(c, ROWS, PARAM);
  if (st || pd_optim_run_rows(c, ROWS, PARAM, &j, PD_T(rows_range))) return st;
  pd_parallel_for(pd_tensor_numel(pd_in(c, PARAM)), PD_UPDATE_GRAIN, PD_T(range), &j);
  return PD_OK;
}
