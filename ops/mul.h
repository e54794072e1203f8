/* mul.h — mul's slots and attributes, shared by mul.c (CPU) and mul.cu
 * (GPU), the matrix sizes both read from the shapes, and mul's GPU kernels. */
#ifndef PD_OPS_MUL_H
#define PD_OPS_MUL_H

#include "base/hostdev.h"
#include "core/op.h"

enum { X, Y, N_IN };
enum { OUT, N_OUT };
enum { A_XCOLS, A_YCOLS, N_ATTRS };

/* Grad op slots (see op.h): inputs X Y Out dOut, outputs dX dY. */
enum {
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_Y = PD_GRAD_X(N_IN, N_OUT, Y),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT),
  G_DX = PD_GRAD_DX(N_IN, N_OUT, X),
  G_DY = PD_GRAD_DX(N_IN, N_OUT, Y)
};

/* Product of dims[from, to); -1 when any of them is unknown. */
PD_HD int64_t pd_mul_span(const int64_t *dims, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p = (p < 0 || dims[i] < 0) ? -1 : p * dims[i];
  return p;
}

/* The matrix sizes M, K, N for the current shapes. */
static inline void pd_mul_sizes(pd_ctx *c, const pd_tensor *x, const pd_tensor *y, int64_t *m, int64_t *k, int64_t *n) {
  int xc = (int)pd_attr_i(c, A_XCOLS), yc = (int)pd_attr_i(c, A_YCOLS);
  *m = pd_mul_span(x->dims, 0, xc);
  *k = pd_mul_span(x->dims, xc, x->ndim);
  *n = pd_mul_span(y->dims, yc, y->ndim);
}

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_mul_fwd(pd_ctx *c);
pd_status pd_gpu_mul_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
