/* softmax_with_cross_entropy.h — the op's slots and attribute, shared by
 * softmax_with_cross_entropy.c (CPU) and .cu (GPU), and its GPU kernels. */
#ifndef PD_OPS_SOFTMAX_WITH_CROSS_ENTROPY_H
#define PD_OPS_SOFTMAX_WITH_CROSS_ENTROPY_H

#include "core/op.h"

enum { LOGITS, LABEL, N_IN };
enum { SOFTMAX, LOSS, N_OUT };
enum { A_SOFT, N_ATTRS };

/* Grad op slots (see op.h): inputs Logits Label Softmax Loss dSoftmax dLoss,
 * output dLogits. */
enum {
  G_LABEL = PD_GRAD_X(N_IN, N_OUT, LABEL),
  G_SOFTMAX = PD_GRAD_Y(N_IN, N_OUT, SOFTMAX),
  G_DSOFTMAX = PD_GRAD_DY(N_IN, N_OUT, SOFTMAX),
  G_DLOSS = PD_GRAD_DY(N_IN, N_OUT, LOSS),
  G_DLOGITS = PD_GRAD_DX(N_IN, N_OUT, LOGITS)
};

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_softmax_with_cross_entropy_fwd(pd_ctx *c);
pd_status pd_gpu_softmax_with_cross_entropy_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
