/* broadcast_fwd_t.h — the forward kernel of the broadcast ops for one
 * element type T (base/tmpl.h): broadcast.h includes this file once for each
 * of float, double, int32_t, int64_t and uint8_t. */

/* One row with the kind a constant where it is inlined below, so that the
 * compiler makes a loop per kind (a choice per element keeps a loop from
 * being vectorised); the unit and zero strides of the common shapes are
 * their own loops for the same reason. */
static inline void PD_T(pd_bc_row)(pd_bc_kind k, T *restrict o, const T *x, int64_t sx, const T *y, int64_t sy,
                                   int64_t n) {
  if (sx == 1 && sy == 0) {
    const T b = y[0];
    for (int64_t j = 0; j < n; j++) o[j] = PD_T(pd_bc_op)(k, x[j], b);
  } else if (sx == 1 && sy == 1) {
    for (int64_t j = 0; j < n; j++) o[j] = PD_T(pd_bc_op)(k, x[j], y[j]);
  } else if (sx == 0 && sy == 1) {
    const T a = x[0];
    for (int64_t j = 0; j < n; j++) o[j] = PD_T(pd_bc_op)(k, a, y[j]);
  } else
    for (int64_t j = 0; j < n; j++) o[j] = PD_T(pd_bc_op)(k, x[j * sx], y[j * sy]);
}

/* pd_bc_row with the kind a constant in each branch (so each inlined copy
 * is a loop of its own kind). */
static inline void PD_T(pd_bc_row_of)(pd_bc_kind k, T *restrict o, const T *x, int64_t sx, const T *y, int64_t sy,
                                      int64_t n) {
  switch (k) {
  case PD_BC_ADD:
    PD_T(pd_bc_row)(PD_BC_ADD, o, x, sx, y, sy, n);
    break;
  case PD_BC_SUB:
    PD_T(pd_bc_row)(PD_BC_SUB, o, x, sx, y, sy, n);
    break;
  case PD_BC_MUL:
    PD_T(pd_bc_row)(PD_BC_MUL, o, x, sx, y, sy, n);
    break;
  default:
    PD_T(pd_bc_row)(PD_BC_DIV, o, x, sx, y, sy, n);
    break;
  }
}

/* X, Y and Out of one shape: parts of the elements on the pool. */
typedef struct PD_T(pd_bc_same_job) {
  pd_bc_kind k;
  T *o;
  const T *x, *y;
} PD_T(pd_bc_same_job);

static void PD_T(pd_bc_same_range)(void *arg, int64_t lo, int64_t hi) {
  const PD_T(pd_bc_same_job) *j = arg;
  PD_T(pd_bc_row_of)(j->k, j->o + lo, j->x + lo, 1, j->y + lo, 1, hi - lo);
}

static pd_status PD_T(pd_bc_forward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, PD_BC_X), *yt = pd_in(c, PD_BC_Y), *ot = pd_out(c, PD_BC_OUT);
  const T *x = PD_DATA(xt, T), *y = PD_DATA(yt, T);
  T *o = PD_DATA(ot, T);
  pd_bc_kind k = pd_bc_of(c);
  int64_t n = pd_tensor_numel(ot);
  if (pd_tensor_numel(xt) == n && pd_tensor_numel(yt) == n) {
    PD_T(pd_bc_same_job) j = {k, o, x, y};
    pd_parallel_for(n, PD_ELEMENTWISE_GRAIN, PD_T(pd_bc_same_range), &j);
    return PD_OK;
  }
  pd_bc_walk w;
  pd_bc_walk_init(&w, xt, yt, ot);
  for (int64_t r = 0; r < w.rows; r++, pd_bc_walk_step(&w))
    PD_T(pd_bc_row_of)(k, o + r * w.inner, x + w.xo, w.sx, y + w.yo, w.sy, w.inner);
  return PD_OK;
}
