/* cross_entropy.h — cross_entropy's slots and attribute, shared by
 * cross_entropy.c (CPU) and cross_entropy.cu (GPU), and the GPU kernels that
 * cross_entropy.c registers. Included by cross_entropy's own files only: the
 * short slot names would clash between ops. */
#ifndef PD_OPS_CROSS_ENTROPY_H
#define PD_OPS_CROSS_ENTROPY_H

#include "core/op.h"

enum { X, LABEL, N_IN };
enum { OUT, N_OUT };
enum { A_SOFT, N_ATTRS };

/* Grad op slots (see op.h): inputs X Label Out dOut, outputs dX (dLabel never). */
enum {
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_LABEL = PD_GRAD_X(N_IN, N_OUT, LABEL),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT),
  G_DX = PD_GRAD_DX(N_IN, N_OUT, X)
};

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_cross_entropy_fwd(pd_ctx *c);
pd_status pd_gpu_cross_entropy_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
