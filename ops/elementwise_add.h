/* elementwise_add.h — elementwise_add's slots and attribute, shared by
 * elementwise_add.c (CPU) and elementwise_add.cu (GPU), the broadcast both
 * walk, and the GPU kernels that elementwise_add.c registers. Included by
 * elementwise_add's own files only: the short slot names would clash
 * between ops. */
#ifndef PD_OPS_ELEMENTWISE_ADD_H
#define PD_OPS_ELEMENTWISE_ADD_H

#include "core/op.h"
#include "kmath.h"

enum { X, Y, N_IN };
enum { OUT, N_OUT };
enum { A_AXIS, N_ATTRS };

/* Grad op slots (see op.h): inputs X Y Out dOut, outputs dX dY. */
enum { G_X = PD_GRAD_X(N_IN, N_OUT, X), G_Y = PD_GRAD_X(N_IN, N_OUT, Y), G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT) };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_elementwise_add_fwd(pd_ctx *c);
pd_status pd_gpu_elementwise_add_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
