/* embedding_t.h — embedding's CPU kernels for one element type T
 * (base/tmpl.h): embedding.c includes this file once per type. */

static pd_status PD_T(forward)(pd_ctx *c) {
  const pd_tensor *ids = pd_in(c, IDS), *w = pd_in(c, W);
  int64_t v = w->dims[0], d = w->dims[1], n = pd_tensor_numel(ids), pad = pd_attr_i(c, A_PADDING);
  pd_status st = check_ids(c, ids, v);
  if (st) return st;
  const int64_t *id = PD_DATA(ids, int64_t);
  const T *table = PD_DATA(w, T);
  T *out = PD_DATA(pd_out(c, OUT), T);
  for (int64_t i = 0; i < n; i++) {
    if (id[i] == pad)
      memset(out + i * d, 0, sizeof(T) * (size_t)d);
    else
      memcpy(out + i * d, table + id[i] * d, sizeof(T) * (size_t)d);
  }
  return PD_OK;
}

/* dW dense: zero, then each dOut row added to its id's row in order. */
static void PD_T(backward_dense)(const int64_t *id, int64_t n, int64_t pad, const T *dout, int64_t d, T *dw,
                                 int64_t v) {
  memset(dw, 0, sizeof(T) * (size_t)(v * d));
  for (int64_t i = 0; i < n; i++) {
    if (id[i] == pad) continue;
    T *row = dw + id[i] * d;
    const T *g = dout + i * d;
    for (int64_t j = 0; j < d; j++) row[j] += g[j];
  }
}

/* dW row-sparse: the distinct ids but padding_idx, ascending, in rows[0..u),
 * each with the sum of its dOut rows (in position order) in dw[k]; entries
 * u..n-1 are row -1 with zero values, so a norm over dw is the norm over
 * the rows used. */
static pd_status PD_T(backward_rows)(pd_ctx *c, const int64_t *id, int64_t n, int64_t pad, const T *dout, int64_t d,
                                     int64_t v, T *dw, int64_t *rows) {
  pd_status st = PD_OK;
  int64_t m = 0;
  pos_id *s = sort_ids(c, id, n, pad, v, &m, &st);
  if (st) return st;
  memset(dw, 0, sizeof(T) * (size_t)(n * d));
  int64_t u = 0;
  for (int64_t i = 0; i < m; i++) {
    if (i == 0 || s[i].id != s[i - 1].id) rows[u++] = s[i].id;
    T *row = dw + (u - 1) * d;
    const T *g = dout + s[i].pos * d;
    for (int64_t j = 0; j < d; j++) row[j] += g[j];
  }
  for (int64_t k = u; k < n; k++) rows[k] = -1;
  return PD_OK;
}

static pd_status PD_T(backward)(pd_ctx *c) {
  const pd_tensor *ids = pd_in(c, G_IDS), *w = pd_in(c, G_W), *dout = pd_in(c, G_DOUT);
  pd_tensor *dw = pd_out(c, G_DW), *rows = pd_out(c, G_ROWS);
  if (!dw) return PD_OK;
  int64_t v = w->dims[0], d = w->dims[1], n = pd_tensor_numel(ids), pad = pd_attr_i(c, A_PADDING);
  pd_status st = check_ids(c, ids, v);
  if (st) return st;
  const int64_t *id = PD_DATA(ids, int64_t);
  if (!rows) {
    PD_T(backward_dense)(id, n, pad, PD_DATA(dout, T), d, PD_DATA(dw, T), v);
    return PD_OK;
  }
  return PD_T(backward_rows)(c, id, n, pad, PD_DATA(dout, T), d, v, PD_DATA(dw, T), PD_DATA(rows, int64_t));
}
