/* adam.h — adam's slots and attributes, shared by adam.c (CPU) and adam.cu
 * (GPU), and its GPU kernel. */
#ifndef PD_OPS_ADAM_H
#define PD_OPS_ADAM_H

#include "core/op.h"

enum { PARAM, GRAD, MOMENT1, MOMENT2, LR, STEP, ROWS, N_IN };
enum { PARAM_OUT, MOMENT1_OUT, MOMENT2_OUT, N_OUT };
enum { A_BETA1, A_BETA2, A_EPS, A_WD, A_LR_MULT, N_ATTRS };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_adam_fwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
