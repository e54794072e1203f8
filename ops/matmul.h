/* matmul.h — matmul's slots, shared by matmul.c (CPU) and matmul.cu (GPU),
 * and its GPU kernels. The batch layout both read (pd_matmul_layout) is
 * declared in op_helpers.h, where test_kmath finds it too. */
#ifndef PD_OPS_MATMUL_H
#define PD_OPS_MATMUL_H

#include "core/op.h"

enum { X, Y, N_IN };
enum { OUT, N_OUT };

/* Grad op slots (see op.h): inputs X Y Out dOut, outputs dX dY. */
enum {
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_Y = PD_GRAD_X(N_IN, N_OUT, Y),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT),
  G_DX = PD_GRAD_DX(N_IN, N_OUT, X),
  G_DY = PD_GRAD_DX(N_IN, N_OUT, Y)
};

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_matmul_fwd(pd_ctx *c);
pd_status pd_gpu_matmul_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
