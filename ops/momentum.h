/* momentum.h — momentum's slots and attributes, shared by momentum.c (CPU)
 * and momentum.cu (GPU), and its GPU kernel. */
#ifndef PD_OPS_MOMENTUM_H
#define PD_OPS_MOMENTUM_H

#include "core/op.h"

enum { PARAM, GRAD, VELOCITY, LR, ROWS, N_IN };
enum { PARAM_OUT, VELOCITY_OUT, N_OUT };
enum { A_MU, A_NESTEROV, A_WD, A_LR_MULT, N_ATTRS };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_momentum_fwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
