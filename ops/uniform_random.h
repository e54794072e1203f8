/* uniform_random.h — uniform_random's slots and attributes, shared by uniform_random.c (CPU) and
 * uniform_random.cu (GPU), and its GPU kernel. */
#ifndef PD_OPS_UNIFORM_RANDOM_H
#define PD_OPS_UNIFORM_RANDOM_H

#include "core/op.h"

enum { OUT, N_OUT };
enum { A_SHAPE, A_DTYPE, A_P1, A_P2, A_SEED, N_ATTRS };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_uniform_random_fwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
