/* sgd.h — sgd's slots and attributes, shared by sgd.c (CPU) and sgd.cu
 * (GPU), and its GPU kernel. */
#ifndef PD_OPS_SGD_H
#define PD_OPS_SGD_H

#include "core/op.h"

enum { PARAM, GRAD, LR, ROWS, N_IN };
enum { PARAM_OUT, N_OUT };
enum { A_WD, A_LR_MULT, N_ATTRS };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_sgd_fwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
