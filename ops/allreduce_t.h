/* allreduce_t.h — allreduce's CPU kernels for one element type T (base/tmpl.h)
 * whose pd_dtype is DT: allreduce.c includes this file once for float and
 * once for double. */

/* The MPI way: w X into buf (zeros for a rank without rows), then w and
 * the stop request; returns where they are. */
static int64_t PD_T(pack)(pd_ctx *c, T *buf, T w) {
  int64_t k = 0;
  for (int i = 0; i < pd_in_count(c, X); i++) {
    const pd_tensor *xt = pd_in_at(c, X, i);
    const T *x = PD_DATA(xt, T);
    int64_t m = pd_tensor_numel(xt);
    if (w == 0)
      memset(buf + k, 0, sizeof(T) * (size_t)m);
    else
      for (int64_t j = 0; j < m; j++) buf[k + j] = x[j] * w;
    k += m;
  }
  buf[k] = w, buf[k + 1] = pd_dist_local_stop() ? 1 : 0;
  return k;
}

static pd_status PD_T(mpi_way)(pd_ctx *c, T w) {
  int64_t len = 2;
  for (int i = 0; i < pd_in_count(c, X); i++) len += pd_tensor_numel(pd_in_at(c, X, i));
  pd_status st;
  T *buf = fused(c, DT, len, &st);
  if (!buf) return st;
  int64_t k = PD_T(pack)(c, buf, w);
  st = pd_dist_allreduce_sum(buf, len, DT, "the gradients' allreduce", c->err);
  if (st) return st;
  T total = buf[k];
  pd_dist_set_global_stop(buf[k + 1] > 0);
  if (!(total > 0)) return pd_ctx_fail(c, PD_ERR_RUNTIME, "no rank held a row of the batch");
  k = 0;
  for (int i = 0; i < pd_in_count(c, X); i++) {
    T *out = PD_DATA(pd_out_at(c, OUT, i), T);
    int64_t m = pd_tensor_numel(pd_in_at(c, X, i));
    for (int64_t j = 0; j < m; j++) out[j] = buf[k + j] / total;
    k += m;
  }
  return PD_OK;
}

/* The shared way: this rank's share of each X's elements, for all ranks. */
static pd_status PD_T(shared_way)(pd_ctx *c, char **bases, T w) {
  const int n = pd_dist_size(), me = pd_dist_rank();
  const int64_t hdr = header_off(c);
  T *own = (T *)(bases[me] + hdr);
  own[0] = w, own[1] = pd_dist_local_stop() ? 1 : 0;
  pd_status st = pd_dist_shared_wait("the gradients' allreduce", c->err);
  if (st) return st;
  T ws[PD_DIST_MAX_SHARED], total = 0, stop = 0;
  for (int r = 0; r < n; r++) {
    const T *h = (const T *)(bases[r] + hdr);
    ws[r] = h[0], total += h[0], stop += h[1];
  }
  if (!(total > 0)) return pd_ctx_fail(c, PD_ERR_RUNTIME, "no rank held a row of the batch");
  int64_t off = 0;
  for (int i = 0; i < pd_in_count(c, X); i++) {
    off = align64(off);
    const int64_t m = pd_tensor_numel(pd_in_at(c, X, i));
    /* this rank's share: 16-element (64-byte) blocks, so no two ranks
     * write one cache line */
    int64_t share = ((m + n - 1) / n + 15) / 16 * 16, lo = me * share, hi = lo + share;
    if (lo > m) lo = m;
    if (hi > m) hi = m;
    T *x[PD_DIST_MAX_SHARED];
    for (int r = 0; r < n; r++) x[r] = (T *)(bases[r] + off);
    if (n == 2 && ws[0] != 0 && ws[1] != 0) {
      T *a = x[0], *b = x[1], wa = ws[0], wb = ws[1];
      for (int64_t j = lo; j < hi; j++) {
        T v = (a[j] * wa + b[j] * wb) / total;
        a[j] = v, b[j] = v;
      }
    } else {
      for (int64_t j = lo; j < hi; j++) {
        T s = ws[0] != 0 ? x[0][j] * ws[0] : 0;
        for (int r = 1; r < n; r++) s += ws[r] != 0 ? x[r][j] * ws[r] : 0;
        T v = s / total;
        for (int r = 0; r < n; r++) x[r][j] = v;
      }
    }
    off += m * (int64_t)sizeof(T);
  }
  st = pd_dist_shared_wait("the gradients' allreduce", c->err);
  if (st) return st;
  pd_dist_set_global_stop(stop > 0);
  pd_dist_count_shared_step();
  out_from_x(c);
  return PD_OK;
}

static pd_status PD_T(forward)(pd_ctx *c) {
  if (pd_dist_size() == 1) { /* the mean over one rank: X itself */
    out_from_x(c);
    return PD_OK;
  }
  const T w = (T)pd_dist_local_rows();
  char *bases[PD_DIST_MAX_SHARED];
  return placed(c, bases) ? PD_T(shared_way)(c, bases, w) : PD_T(mpi_way)(c, w);
}
