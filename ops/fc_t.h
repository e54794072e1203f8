/* fc_t.h — fc's CPU kernels for one element type T (base/tmpl.h): fc.c
 * includes this file once for float and once for double. */

/* Forward: Out = act(X W + b). The bias and the activation are the
 * product's epilogue (cpu/blas.h): each thread applies them to its own
 * block of Out while the block is in its cache. */
typedef struct PD_T(fc_epilogue) {
  const T *bias;
  pd_act act;
} PD_T(fc_epilogue);

static void PD_T(epilogue)(void *arg, void *cv, int64_t ldc, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
  const PD_T(fc_epilogue) *e = arg;
  (void)r0;
  for (int64_t i = 0; i < rows; i++) {
    T *row = (T *)cv + i * ldc;
    if (e->bias) {
      const T *bias = e->bias + c0;
      for (int64_t j = 0; j < cols; j++) row[j] += bias[j];
    }
    PD_T(pd_act_forward)(e->act, row, row, cols);
  }
}

static pd_status PD_T(forward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *w = pd_in(c, W), *b = pd_in(c, B), *y = pd_out(c, OUT);
  int64_t n, k, m = pd_attr_i(c, A_SIZE);
  pd_fc_flat(x, &n, &k);
  PD_T(fc_epilogue) e = {b ? PD_DATA(b, T) : NULL, pd_act_parse(pd_attr_s(c, A_ACT))};
  bool ep = e.bias || e.act != PD_ACT_NONE;
  PD_T(pd_gemm_ep)
  (false, false, n, m, k, 1, PD_DATA(x, T), k, PD_DATA(w, T), m, 0, PD_DATA(y, T), m, ep ? PD_T(epilogue) : NULL, &e);
  return PD_OK;
}

/* dPre = dOut * act'(Out); dW = X^T dPre; dB = column sums of dPre; dX =
 * dPre W^T. dPre and dB in one pass split by columns on the worker pool:
 * each column's sum still runs over the rows in order (the same bits on any
 * thread count). */
typedef struct PD_T(fc_pre) {
  pd_act act;
  int64_t n, m;
  const T *y, *dy;
  T *pre, *db; /* pre NULL: dPre is dOut (no activation) */
} PD_T(fc_pre);

static void PD_T(pre_range)(void *arg, int64_t lo, int64_t hi) { /* columns lo..hi */
  const PD_T(fc_pre) *j = arg;
  if (j->db)
    for (int64_t q = lo; q < hi; q++) j->db[q] = 0;
  for (int64_t i = 0; i < j->n; i++) {
    const T *src = j->dy + i * j->m + lo;
    if (j->pre) {
      T *pre = j->pre + i * j->m + lo;
      PD_T(pd_act_backward)(j->act, j->y + i * j->m + lo, src, pre, hi - lo);
      src = pre;
    }
    if (j->db)
      for (int64_t q = lo; q < hi; q++) j->db[q] += src[q - lo];
  }
}

static pd_status PD_T(backward)(pd_ctx *c) {
  pd_tensor *x = pd_in(c, G_X), *w = pd_in(c, G_W), *y = pd_in(c, G_OUT), *dy = pd_in(c, G_DOUT);
  pd_tensor *dx = pd_out(c, X), *dw = pd_out(c, W), *db = pd_out(c, B);
  int64_t n, k, m = pd_attr_i(c, A_SIZE);
  pd_fc_flat(x, &n, &k);
  PD_T(fc_pre)
  j = {pd_act_parse(pd_attr_s(c, A_ACT)), n, m, PD_DATA(y, T), PD_DATA(dy, T), NULL, db ? PD_DATA(db, T) : NULL};
  if (j.act != PD_ACT_NONE) {
    pd_tensor *tmp = &c->op->work[0];
    tmp->dtype = dy->dtype;
    pd_status st = pd_tensor_set_dims(tmp, 2, (int64_t[]){n, m}, c->err);
    if (!st) st = pd_ctx_alloc(c, tmp);
    if (st) return st;
    j.pre = PD_DATA(tmp, T);
  }
  if (j.pre || j.db) {
    int64_t grain = n > 0 ? (FC_GRAD_GRAIN + n - 1) / n : m;
    pd_parallel_for(m, grain < 16 ? 16 : grain, PD_T(pre_range), &j);
  }
  const T *g = j.pre ? j.pre : j.dy;
  if (dw) PD_T(pd_gemm)(true, false, k, m, n, 1, PD_DATA(x, T), k, g, m, 0, PD_DATA(dw, T), m);
  if (dx) PD_T(pd_gemm)(false, true, n, k, m, 1, g, m, PD_DATA(w, T), m, 0, PD_DATA(dx, T), k);
  return PD_OK;
}
