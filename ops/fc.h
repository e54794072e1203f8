/* fc.h — fc's slots and attributes, shared by fc.c (CPU) and fc.cu (GPU),
 * and the GPU kernels that fc.c registers. Included by fc's own files only:
 * the short slot names would clash between ops. */
#ifndef PD_OPS_FC_H
#define PD_OPS_FC_H

#include "base/hostdev.h"
#include "core/op.h"

enum { X, W, B, N_IN };
enum { OUT, N_OUT };
enum { A_SIZE, A_ACT, N_ATTRS };

/* Grad op slots (see op.h): inputs X W B Out dOut, outputs dX dW dB. */
enum {
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_W = PD_GRAD_X(N_IN, N_OUT, W),
  G_OUT = PD_GRAD_Y(N_IN, N_OUT, OUT),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT)
};

/* X [N, d1, d2...] is read as [N, K]; K is -1 when a later dim is unknown. */
PD_HD void pd_fc_flat(const pd_tensor *x, int64_t *n, int64_t *k) {
  *n = x->ndim > 0 ? x->dims[0] : 1;
  *k = 1;
  for (int i = 1; i < x->ndim; i++) *k = (*k < 0 || x->dims[i] < 0) ? -1 : *k * x->dims[i];
}

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_fc_fwd(pd_ctx *c);
pd_status pd_gpu_fc_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
