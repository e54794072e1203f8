/* mean.h — mean's slots, shared by mean.c (CPU) and mean.cu (GPU), and its
 * GPU kernels. */
#ifndef PD_OPS_MEAN_H
#define PD_OPS_MEAN_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };

/* Grad op slots (see op.h): inputs X Out dOut, output dX. */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X) };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_mean_fwd(pd_ctx *c);
pd_status pd_gpu_mean_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
