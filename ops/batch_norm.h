/* batch_norm.h — batch_norm's slots and attributes, shared by batch_norm.c
 * (CPU) and batch_norm.cu (GPU), and the GPU kernels that batch_norm.c
 * registers. Included by batch_norm's own files only: the short slot names
 * would clash between ops. */
#ifndef PD_OPS_BATCH_NORM_H
#define PD_OPS_BATCH_NORM_H

#include "core/op.h"

enum { X, SCALE, BIAS, MEAN, VAR, N_IN };
enum { Y, MEAN_OUT, VAR_OUT, N_OUT };
enum { A_MOMENTUM, A_EPSILON, N_ATTRS };

/* Grad op slots (see op.h): inputs X Scale Bias Mean Variance, Y MeanOut
 * VarianceOut, dY dMeanOut dVarianceOut; outputs dX dScale dBias (dMean and
 * dVariance: none, no-grad slots). */
enum {
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_SCALE = PD_GRAD_X(N_IN, N_OUT, SCALE),
  G_DY = PD_GRAD_DY(N_IN, N_OUT, Y),
};

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_batch_norm_fwd(pd_ctx *c);
pd_status pd_gpu_batch_norm_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
