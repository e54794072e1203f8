/* layer_norm.h — layer_norm's slots and attributes, shared by layer_norm.c
 * (CPU) and layer_norm.cu (GPU), the GPU kernels' declarations, and the
 * per-row math both sides use. Included by layer_norm's own files only. */
#ifndef PD_OPS_LAYER_NORM_H
#define PD_OPS_LAYER_NORM_H

#include "core/op.h"
#include "gpu/gpu.h"

enum { X, SCALE, BIAS, N_IN };
enum { Y, N_OUT };
enum { A_AXIS, A_EPSILON, N_ATTRS };

/* Grad op slots (see op.h): inputs X Scale Bias, Y, dY; outputs dX dScale
 * dBias (Scale and Bias may be absent, and so their gradients). */
enum {
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_SCALE = PD_GRAD_X(N_IN, N_OUT, SCALE),
  G_DY = PD_GRAD_DY(N_IN, N_OUT, Y),
  G_DX = PD_GRAD_DX(N_IN, N_OUT, X),
  G_DSCALE = PD_GRAD_DX(N_IN, N_OUT, SCALE),
  G_DBIAS = PD_GRAD_DX(N_IN, N_OUT, BIAS),
};

/* X read as [rows, d]: rows the product of the dims before the axis, d of
 * the dims from it on (the normalised ones). */
typedef struct pd_ln_dims {
  int64_t rows, d;
} pd_ln_dims;

/* dX of one element from the row's statistics and sums: with g = dY Scale
 * and xhat = (X - mean) inv, dX = inv (g - Σg / d - xhat Σ(g xhat) / d). */
PD_HD double pd_ln_grad(double g, double xhat, double inv, double sg, double sgx, double d) {
  return inv * (g - sg / d - xhat * sgx / d);
}

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_layer_norm_fwd(pd_ctx *c);
pd_status pd_gpu_layer_norm_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
