/* gaussian_random.h — gaussian_random's slots and attributes, shared by gaussian_random.c (CPU) and
 * gaussian_random.cu (GPU), and its GPU kernel. */
#ifndef PD_OPS_GAUSSIAN_RANDOM_H
#define PD_OPS_GAUSSIAN_RANDOM_H

#include "core/op.h"

enum { OUT, N_OUT };
enum { A_SHAPE, A_DTYPE, A_P1, A_P2, A_SEED, N_ATTRS };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_gaussian_random_fwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
