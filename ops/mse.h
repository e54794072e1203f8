/* mse.h — mse's slots, shared by mse.c (CPU) and mse.cu (GPU), and its
 * GPU kernels. */
#ifndef PD_OPS_MSE_H
#define PD_OPS_MSE_H

#include "core/op.h"

enum { X, Y, N_IN };
enum { OUT, N_OUT };

/* Grad op slots (see op.h): inputs X Y Out dOut, outputs dX dY. */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X), G_DY = PD_GRAD_DX(N_IN, N_OUT, Y) };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_mse_fwd(pd_ctx *c);
pd_status pd_gpu_mse_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
