/* adam_t.h — adam's CPU kernel for one element type T (base/tmpl.h):
 * adam.c includes this file once for float and once for double. */

static void PD_T(range)(void *arg, int64_t lo, int64_t hi) {
  const job *j = arg;
  const T *p = j->p, *g = j->g, *m = j->m, *v = j->v;
  T *p_out = j->p_out, *m_out = j->m_out, *v_out = j->v_out;
  const T lr_t = (T)j->lr_t, eps_t = (T)j->eps_t, wd = (T)j->wd, tb1 = (T)j->b1, tb2 = (T)j->b2;
  if (p_out == p && m_out == m && v_out == v) { /* in place: vectorizable */
    T *restrict pp = p_out, *restrict mm = m_out, *restrict vv = v_out;
    const T *restrict gg = g;
    for (int64_t i = lo; i < hi; i++)
      PD_T(pd_adam)(pp[i], gg[i], mm[i], vv[i], lr_t, eps_t, tb1, tb2, wd, &pp[i], &mm[i], &vv[i]);
    return;
  }
  for (int64_t i = lo; i < hi; i++)
    PD_T(pd_adam)(p[i], g[i], m[i], v[i], lr_t, eps_t, tb1, tb2, wd, &p_out[i], &m_out[i], &v_out[i]);
}

/* Row-sparse (lazy Adam, as torch.optim.SparseAdam): entry i of Grad
 * updates row Rows[i] of Param and of both moments; other rows keep theirs. */
static void PD_T(rows_range)(void *arg, int64_t lo, int64_t hi) {
  const pd_rows_job *rj = arg;
  const job *j = rj->job;
  for (int64_t i = lo; i < hi; i++) {
    int64_t r = rj->rows[i], d = rj->d;
    if (r < 0) continue;
    job row = *j;
    row.p = (const T *)j->p + r * d, row.g = (const T *)j->g + i * d;
    row.m = (const T *)j->m + r * d, row.v = (const T *)j->v + r * d;
    row.p_out = (T *)j->p_out + r * d, row.m_out = (T *)j->m_out + r * d, row.v_out = (T *)j->v_out + r * d;
    PD_T(range)(&row, 0, d);
  }
}

static pd_status PD_T(update)(pd_ctx *c) {
  double t = PD_DATA(pd_in(c, STEP), double)[0];
  if (!(t >= 1))
    return pd_ctx_fail(c, PD_ERR_INPUT, "Step \"%s\" must hold the update count t >= 1, got %g",
                       pd_ctx_in_name(c, STEP, 0), t);
  double b1 = pd_attr_f(c, A_BETA1), b2 = pd_attr_f(c, A_BETA2);
  double lr_d, eps_d;
  pd_adam_coefs((T)(pd_tensor_get(pd_in(c, LR), 0) * pd_attr_f(c, A_LR_MULT)), b1, b2, pd_attr_f(c, A_EPS), t, &lr_d,
                &eps_d);
  job j = {PD_DATA(pd_in(c, PARAM), T),
           PD_DATA(pd_in(c, GRAD), T),
           PD_DATA(pd_in(c, MOMENT1), T),
           PD_DATA(pd_in(c, MOMENT2), T),
           PD_DATA(pd_out(c, PARAM_OUT), T),
           PD_DATA(pd_out(c, MOMENT1_OUT), T),
           PD_DATA(pd_out(c, MOMENT2_OUT), T),
           (T)lr_d,
           (T)eps_d,
           pd_attr_f(c, A_WD),
           b1,
           b2};
  pd_status st = pd_optim_check_rows(c, ROWS, PARAM);
  if (st || pd_optim_run_rows(c, ROWS, PARAM, &j, PD_T(rows_range))) return st;
  pd_parallel_for(pd_tensor_numel(pd_in(c, PARAM)), PD_UPDATE_GRAIN, PD_T(range), &j);
  return PD_OK;
}
