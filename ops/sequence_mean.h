/* sequence_mean.h — sequence_mean's slots and attributes, shared by
 * sequence_mean.c (CPU) and sequence_mean.cu (GPU) only, and its GPU
 * kernels. */
#ifndef PD_OPS_SEQUENCE_MEAN_H
#define PD_OPS_SEQUENCE_MEAN_H

#include "core/op.h"

enum { X, LENGTHS, N_IN };
enum { OUT, N_OUT };
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X) };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_sequence_mean_fwd(pd_ctx *c);
pd_status pd_gpu_sequence_mean_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
