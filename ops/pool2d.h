/* pool2d.h — pool2d's slots and attributes, shared by pool2d.c (CPU) and
 * pool2d.cu (GPU), and its GPU kernels. The window geometry both read
 * (pd_pool2d_geom) is declared in op_helpers.h, where test_kmath finds it too. */
#ifndef PD_OPS_POOL2D_H
#define PD_OPS_POOL2D_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_TYPE, A_KSIZE, A_STRIDES, A_PADS, A_GLOBAL, A_CEIL, A_EXCLUSIVE, N_ATTRS };

/* Grad op slots (see op.h): inputs X Out dOut, output dX. */
enum { G_X = PD_GRAD_X(N_IN, N_OUT, X), G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X) };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_pool2d_fwd(pd_ctx *c);
pd_status pd_gpu_pool2d_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
