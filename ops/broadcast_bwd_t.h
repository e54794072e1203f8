/* broadcast_bwd_t.h — the backward kernel of the broadcast ops for one
 * float type T (base/tmpl.h): broadcast.h includes this file once for float
 * and once for double. dX and dY (kmath.h's pd_bc_dx, pd_bc_dy per element
 * of dOut), each summed over the dims its operand repeats along, in Out's
 * order. */

/* X, Y and Out of one shape (a cell's gates times its states): dX and dY
 * written directly, a loop per kind (inlined with the kind a constant, so
 * the compiler vectorises it), parts of the elements on the pool. */
static inline void PD_T(pd_bc_grad_same)(pd_bc_kind k, T *restrict dx, T *restrict dy, const T *restrict g, const T *x,
                                         const T *y, int64_t n) {
  if (dx)
    for (int64_t j = 0; j < n; j++) dx[j] = PD_T(pd_bc_dx)(k, g[j], y[j]);
  if (dy)
    for (int64_t j = 0; j < n; j++) dy[j] = PD_T(pd_bc_dy)(k, g[j], x[j], y[j]);
}

typedef struct PD_T(pd_bc_grad_job) {
  pd_bc_kind k;
  T *dx, *dy;
  const T *g, *x, *y;
} PD_T(pd_bc_grad_job);

static void PD_T(pd_bc_grad_range)(void *arg, int64_t lo, int64_t hi) {
  const PD_T(pd_bc_grad_job) *j = arg;
  T *dx = j->dx ? j->dx + lo : NULL, *dy = j->dy ? j->dy + lo : NULL;
  const T *g = j->g + lo, *x = j->x + lo, *y = j->y + lo;
  switch (j->k) {
  case PD_BC_ADD:
    PD_T(pd_bc_grad_same)(PD_BC_ADD, dx, dy, g, x, y, hi - lo);
    break;
  case PD_BC_SUB:
    PD_T(pd_bc_grad_same)(PD_BC_SUB, dx, dy, g, x, y, hi - lo);
    break;
  case PD_BC_MUL:
    PD_T(pd_bc_grad_same)(PD_BC_MUL, dx, dy, g, x, y, hi - lo);
    break;
  default:
    PD_T(pd_bc_grad_same)(PD_BC_DIV, dx, dy, g, x, y, hi - lo);
    break;
  }
}

static pd_status PD_T(pd_bc_backward)(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, PD_BC_G_X), *yt = pd_in(c, PD_BC_G_Y), *ot = pd_in(c, PD_BC_G_OUT);
  pd_tensor *gt = pd_in(c, PD_BC_G_DOUT), *dxt = pd_out(c, PD_BC_X), *dyt = pd_out(c, PD_BC_Y);
  T *dx = dxt ? PD_DATA(dxt, T) : NULL, *dy = dyt ? PD_DATA(dyt, T) : NULL;
  const T *x = PD_DATA(xt, T), *y = PD_DATA(yt, T), *g = gt ? PD_DATA(gt, T) : NULL;
  pd_bc_kind k = pd_bc_of(c);
  int64_t n = pd_tensor_numel(ot);
  if (g && pd_tensor_numel(xt) == n && pd_tensor_numel(yt) == n) {
    PD_T(pd_bc_grad_job) j = {k, dx, dy, g, x, y};
    pd_parallel_for(n, PD_ELEMENTWISE_GRAIN, PD_T(pd_bc_grad_range), &j);
    return PD_OK;
  }
  if (dx) memset(dx, 0, (size_t)pd_tensor_numel(xt) * sizeof(T));
  if (dy) memset(dy, 0, (size_t)pd_tensor_numel(yt) * sizeof(T));
  if (!g) return PD_OK;
  pd_bc_walk w;
  pd_bc_walk_init(&w, xt, yt, ot);
  for (int64_t r = 0; r < w.rows; r++, pd_bc_walk_step(&w)) {
    const T *gr = g + r * w.inner;
    for (int64_t j = 0; j < w.inner; j++) {
      int64_t xi = w.xo + j * w.sx, yi = w.yo + j * w.sy;
      if (dx) dx[xi] += PD_T(pd_bc_dx)(k, gr[j], y[yi]);
      if (dy) dy[yi] += PD_T(pd_bc_dy)(k, gr[j], x[xi], y[yi]);
    }
  }
  return PD_OK;
}
