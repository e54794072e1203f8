/* clip_by_global_norm.h — clip_by_global_norm's slots and attribute, shared
 * by clip_by_global_norm.c (CPU) and clip_by_global_norm.cu (GPU), and the
 * GPU kernels that clip_by_global_norm.c registers. Included by
 * clip_by_global_norm's own files only: the short slot names would clash
 * between ops. */
#ifndef PD_OPS_CLIP_BY_GLOBAL_NORM_H
#define PD_OPS_CLIP_BY_GLOBAL_NORM_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_MAX_NORM, N_ATTRS };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_clip_by_global_norm_fwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
