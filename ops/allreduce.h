/* allreduce.h — allreduce's slots, shared by allreduce.c (CPU) and
 * allreduce.cu (GPU), and the GPU kernel that allreduce.c registers.
 * Included by allreduce's own files only: the short slot names would clash
 * between ops. */
#ifndef PD_OPS_ALLREDUCE_H
#define PD_OPS_ALLREDUCE_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_allreduce_fwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
