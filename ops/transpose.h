/* transpose.h — transpose's slots and attribute, shared by transpose.c
 * (CPU) and transpose.cu (GPU), and its GPU kernels. The permutation both
 * read (pd_transpose_perm) is declared in op_helpers.h, where test_kmath
 * finds it too. */
#ifndef PD_OPS_TRANSPOSE_H
#define PD_OPS_TRANSPOSE_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_PERM, N_ATTRS };

/* Grad op slots (see op.h): inputs X Out dOut, output dX. */
enum { G_X = PD_GRAD_X(N_IN, N_OUT, X), G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X) };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_transpose_fwd(pd_ctx *c); /* every dtype */
pd_status pd_gpu_transpose_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
