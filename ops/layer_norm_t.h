/* layer_norm_t.h — layer_norm's CPU kernels for one element type T
 * (base/tmpl.h): layer_norm.c includes this file once for float and once
 * for double. */

/* The mean and 1 / sqrt(var + eps) of one row of d (two passes, in double);
 * the forward and the backward pass both call this, so they agree to the
 * last bit. */
static void PD_T(stats)(const T *p, int64_t d, double eps, double *mean, double *inv) {
  double s = 0, q = 0;
  for (int64_t j = 0; j < d; j++) s += p[j];
  double m = s / (double)d;
  for (int64_t j = 0; j < d; j++) q += (p[j] - m) * (p[j] - m);
  *mean = m;
  *inv = 1 / sqrt(q / (double)d + eps);
}

static void PD_T(fwd_rows)(void *arg, int64_t lo, int64_t hi) {
  const job *j = arg;
  int64_t d = j->n.d;
  const T *scale = j->scale, *bias = j->bias;
  for (int64_t r = lo; r < hi; r++) {
    const T *x = (const T *)j->x + r * d;
    T *y = (T *)j->y + r * d;
    double mean, inv;
    PD_T(stats)(x, d, j->eps, &mean, &inv);
    for (int64_t k = 0; k < d; k++) {
      double v = (x[k] - mean) * inv;
      if (scale) v *= scale[k];
      if (bias) v += bias[k];
      y[k] = (T)v;
    }
  }
}

static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  pd_tensor *s = pd_in(c, SCALE), *b = pd_in(c, BIAS);
  job j = {.n = dims_of(c, x),
           .eps = pd_attr_f(c, A_EPSILON),
           .x = PD_DATA(x, T),
           .scale = s ? PD_DATA(s, T) : NULL,
           .bias = b ? PD_DATA(b, T) : NULL,
           .y = PD_DATA(pd_out(c, Y), T)};
  if (j.n.d == 0) return PD_OK;
  pd_parallel_for(j.n.rows, PD_ROWS_GRAIN / j.n.d + 1, PD_T(fwd_rows), &j);
  return PD_OK;
}

/* Per row: the statistics (kept for the columns' pass) and dX. */
static void PD_T(bwd_rows)(void *arg, int64_t lo, int64_t hi) {
  const job *j = arg;
  int64_t d = j->n.d;
  const T *scale = j->scale;
  for (int64_t r = lo; r < hi; r++) {
    const T *x = (const T *)j->x + r * d, *dy = (const T *)j->dy + r * d;
    double mean, inv;
    PD_T(stats)(x, d, j->eps, &mean, &inv);
    j->stats[2 * r] = mean, j->stats[2 * r + 1] = inv;
    if (!j->y) continue;
    double sg = 0, sgx = 0;
    for (int64_t k = 0; k < d; k++) {
      double g = scale ? (double)dy[k] * scale[k] : dy[k];
      sg += g;
      sgx += g * ((x[k] - mean) * inv);
    }
    T *dx = (T *)j->y + r * d;
    for (int64_t k = 0; k < d; k++) {
      double g = scale ? (double)dy[k] * scale[k] : dy[k];
      dx[k] = (T)pd_ln_grad(g, (x[k] - mean) * inv, inv, sg, sgx, (double)d);
    }
  }
}

/* dScale and dBias of columns [lo, hi): sums over the rows in row order. */
static void PD_T(bwd_cols)(void *arg, int64_t lo, int64_t hi) {
  const job *j = arg;
  int64_t d = j->n.d;
  T *ds = j->dscale, *db = j->dbias;
  for (int64_t k = lo; k < hi; k++) {
    double a = 0, b = 0;
    for (int64_t r = 0; r < j->n.rows; r++) {
      double g = ((const T *)j->dy)[r * d + k], x = ((const T *)j->x)[r * d + k];
      a += g * ((x - j->stats[2 * r]) * j->stats[2 * r + 1]);
      b += g;
    }
    if (ds) ds[k] = (T)a;
    if (db) db[k] = (T)b;
  }
}

static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, G_X), *s = pd_in(c, G_SCALE);
  pd_tensor *dx = pd_out(c, G_DX), *ds = pd_out(c, G_DSCALE), *db = pd_out(c, G_DBIAS);
  job j = {.n = dims_of(c, x),
           .eps = pd_attr_f(c, A_EPSILON),
           .x = PD_DATA(x, T),
           .scale = s ? PD_DATA(s, T) : NULL,
           .dy = PD_DATA(pd_in(c, G_DY), T),
           .y = dx ? PD_DATA(dx, T) : NULL,
           .dscale = ds ? PD_DATA(ds, T) : NULL,
           .dbias = db ? PD_DATA(db, T) : NULL};
  if (j.n.d == 0) return PD_OK;
  pd_status st = PD_OK;
  j.stats = scratch(c, 2 * (j.n.rows > 0 ? j.n.rows : 1), &st);
  if (st) return st;
  pd_parallel_for(j.n.rows, PD_ROWS_GRAIN / j.n.d + 1, PD_T(bwd_rows), &j);
  if (ds || db) pd_parallel_for(j.n.d, PD_ROWS_GRAIN / (j.n.rows + 1) + 1, PD_T(bwd_cols), &j);
  return PD_OK;
}
