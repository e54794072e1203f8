/* scale.h — scale's slots and attributes, shared by scale.c (CPU) and
 * scale.cu (GPU), and its GPU kernels. */
#ifndef PD_OPS_SCALE_H
#define PD_OPS_SCALE_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_SCALE, A_BIAS, A_AFTER, N_ATTRS };

/* Grad op slots (see op.h): inputs X Out dOut, output dX = scale dOut. */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X) };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_scale_fwd(pd_ctx *c);
pd_status pd_gpu_scale_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
