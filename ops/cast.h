/* cast.h — cast's slots and attribute, shared by cast.c (CPU) and cast.cu
 * (GPU), and the GPU kernels that cast.c registers. Included by cast's own
 * files only: the short slot names would clash between ops. */
#ifndef PD_OPS_CAST_H
#define PD_OPS_CAST_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_DTYPE, N_ATTRS };

/* Grad op slots (see op.h): inputs X Out dOut, output dX (X's dtype). */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT) };

#ifdef __cplusplus
extern "C" {
#endif
/* For every source and target dtype. */
pd_status pd_gpu_cast_fwd(pd_ctx *c);
pd_status pd_gpu_cast_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
