/* cos_sim.h — cos_sim's slots and attribute, shared by cos_sim.c (CPU) and
 * cos_sim.cu (GPU), and the GPU kernels that cos_sim.c registers. Included
 * by cos_sim's own files only: the short slot names would clash between ops. */
#ifndef PD_OPS_COS_SIM_H
#define PD_OPS_COS_SIM_H

#include "core/op.h"

enum { X, Y, N_IN };
enum { OUT, XNORM, YNORM, N_OUT };
enum { A_SCALE, N_ATTRS };

/* Grad op slots (see op.h): inputs X Y Out XNorm YNorm dOut dXNorm dYNorm, outputs dX dY. */
enum {
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_Y = PD_GRAD_X(N_IN, N_OUT, Y),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT),
  G_DXNORM = PD_GRAD_DY(N_IN, N_OUT, XNORM),
  G_DYNORM = PD_GRAD_DY(N_IN, N_OUT, YNORM),
  G_DX = PD_GRAD_DX(N_IN, N_OUT, X),
  G_DY = PD_GRAD_DX(N_IN, N_OUT, Y)
};

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_cos_sim_fwd(pd_ctx *c);
pd_status pd_gpu_cos_sim_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
