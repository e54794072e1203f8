/* fill_constant.h — fill_constant's slots and attributes, shared by
 * fill_constant.c (CPU) and fill_constant.cu (GPU), and its GPU kernel. */
#ifndef PD_OPS_FILL_CONSTANT_H
#define PD_OPS_FILL_CONSTANT_H

#include "core/op.h"

enum { OUT, N_OUT };
enum { A_SHAPE, A_DTYPE, A_VALUE, N_ATTRS };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_fill_constant_fwd(pd_ctx *c); /* every dtype */
#ifdef __cplusplus
}
#endif

#endif
