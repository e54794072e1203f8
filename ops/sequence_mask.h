/* sequence_mask.h — sequence_mask's slots and attributes, shared by
 * sequence_mask.c (CPU) and sequence_mask.cu (GPU) only, and its GPU
 * kernels. */
#ifndef PD_OPS_SEQUENCE_MASK_H
#define PD_OPS_SEQUENCE_MASK_H

#include "core/op.h"

enum { LENGTHS, X };
enum { MASK };
enum { A_MAXLEN, A_DTYPE };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_sequence_mask_fwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
