/* dropout.h — dropout's slots and attribute, shared by dropout.c (CPU) and
 * dropout.cu (GPU), and the GPU kernels that dropout.c registers. Included
 * by dropout's own files only: the short slot names would clash between ops. */
#ifndef PD_OPS_DROPOUT_H
#define PD_OPS_DROPOUT_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, MASK, N_OUT };
enum { A_PROB, N_ATTRS };

/* Grad op slots (see op.h): inputs X Out Mask dOut dMask, output dX. */
enum { G_MASK = PD_GRAD_Y(N_IN, N_OUT, MASK), G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT) };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_dropout_fwd(pd_ctx *c);
pd_status pd_gpu_dropout_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
