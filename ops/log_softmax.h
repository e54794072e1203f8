/* log_softmax.h — log_softmax's slots, shared by log_softmax.c (CPU) and log_softmax.cu (GPU), and
 * its GPU kernels. */
#ifndef PD_OPS_LOG_SOFTMAX_H
#define PD_OPS_LOG_SOFTMAX_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };

/* Grad op slots (see op.h): inputs X Out dOut, output dX. */
enum { G_OUT = PD_GRAD_Y(N_IN, N_OUT, OUT), G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X) };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_log_softmax_fwd(pd_ctx *c);
pd_status pd_gpu_log_softmax_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
