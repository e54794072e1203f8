/* sum.h — sum's slots, shared by sum.c (CPU) and sum.cu (GPU), and its GPU
 * kernels. */
#ifndef PD_OPS_SUM_H
#define PD_OPS_SUM_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };

/* Grad op slots (see op.h): inputs X... Out dOut, outputs dX...; each dX[i]
 * that is wanted is a copy of dOut. */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X) };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_sum_fwd(pd_ctx *c);
pd_status pd_gpu_sum_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
