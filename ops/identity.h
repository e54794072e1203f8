/* identity.h — identity's slots, shared by identity.c (CPU) and identity.cu
 * (GPU), and the GPU gradient kernel that identity.c registers. Included by
 * identity's own files only: the short slot names would clash between ops. */
#ifndef PD_OPS_IDENTITY_H
#define PD_OPS_IDENTITY_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };

/* Grad op slots (see op.h): inputs X Out dOut, output dX. */
enum { G_X = PD_GRAD_X(N_IN, N_OUT, X), G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT) };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_identity_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
