/* optim.cuh — what the GPU update kernels share: the learning rate read on
 * the device from its one-element tensor (float32 or float64: the trainer
 * keeps it in float64), as the CPU kernels' (T)pd_tensor_get(lr, 0); and
 * the row-sparse form (input Rows, embedding's gradient): its check and
 * the element of Param each element of Grad updates. */
#ifndef PD_OPTIM_CUH
#define PD_OPTIM_CUH

#include "gpu_common.cuh"

typedef struct pd_gpu_scalar {
  const void *p;
  bool f64;
} pd_gpu_scalar;

static inline pd_gpu_scalar pd_gpu_scalar_of(const pd_tensor *t) {
  pd_gpu_scalar s = {pd_tensor_data(t), t->dtype == PD_F64};
  return s;
}
__device__ static inline double pd_gpu_scalar_get(pd_gpu_scalar s) {
  return s.f64 ? *(const double *)s.p : (double)*(const float *)s.p;
}

/* Rows as the CPU's pd_optim_check_rows wants it (ascending rows of [0, v),
 * then -1 only); the first entry that is not raises PD_GPU_FAULT_ROWS. */
template <int SLOT>
static __global__ void pd_rows_check(const int64_t *rows, int64_t n, int64_t v, pd_gpu_fault *f,
                                     unsigned long long op) {
  int64_t bad = INT64_MAX;
  PD_GPU_FOR(i, n) {
    int64_t r = rows[i];
    bool ok = r == -1 ? i + 1 == n || rows[i + 1] == -1 : r >= 0 && r < v && (i == 0 || r > rows[i - 1]);
    if (!ok && i < bad) bad = i;
  }
  pd_gpu_raise_first(f, op, PD_GPU_FAULT_ROWS, SLOT, rows, bad, v, 0);
}

/* The elements an update kernel walks: Param's (dense), or Grad's [n, d]
 * (row-sparse); and for Grad's element e the element of Param (and of its
 * state) it updates, -1 for an unused entry. A row outside Param (a bad
 * list, which the check above reports) is skipped too: the op fails, but
 * nothing is written out of bounds. */
typedef struct pd_gpu_rows {
  const int64_t *rows; /* NULL: dense */
  int64_t d, v;        /* elements of a row of Param, its rows */
} pd_gpu_rows;

__device__ static inline int64_t pd_gpu_rows_param(pd_gpu_rows r, int64_t e) {
  if (!r.rows) return e;
  int64_t row = r.rows[e / r.d];
  return row >= 0 && row < r.v ? row * r.d + e % r.d : -1;
}

/* Checks Rows (slot SLOT) when given, and fills *r and *n for the update
 * kernel's launch. */
template <int SLOT> static inline pd_status pd_gpu_rows_of(pd_ctx *c, int param, pd_gpu_rows *r, int64_t *n) {
  const pd_tensor *rt = pd_in(c, SLOT), *p = pd_in(c, param);
  r->rows = NULL, r->v = p->dims[0], r->d = p->dims[0] > 0 ? pd_tensor_numel(p) / p->dims[0] : 0;
  *n = pd_tensor_numel(p);
  if (!rt) return PD_OK;
  int64_t k = pd_tensor_numel(rt);
  r->rows = PD_DATA(rt, int64_t), *n = k * r->d;
  return PD_GPU_LAUNCH_N(c, k, pd_rows_check<SLOT>, r->rows, k, r->v, pd_gpu_fault_record(c),
                         (unsigned long long)(uintptr_t)c->op);
}

#endif
