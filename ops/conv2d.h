/* conv2d.h — conv2d's slots and attributes, shared by conv2d.c (CPU) and
 * conv2d.cu (GPU), the geometry helper the GPU kernels call back into, and
 * the GPU kernels that conv2d.c registers. Included by conv2d's own files
 * only: the short slot names would clash between ops. */
#ifndef PD_OPS_CONV2D_H
#define PD_OPS_CONV2D_H

#include "core/op.h"
#include "kmath.h"

enum { INPUT, FILTER, BIAS, N_IN };
enum { OUTPUT, N_OUT };
enum { A_FILTERS, A_KSIZE, A_STRIDES, A_PADS, A_DILS, A_GROUPS, N_ATTRS };

/* Grad op slots (see op.h): inputs Input Filter Bias Output dOutput,
 * outputs dInput dFilter dBias. */
enum {
  G_INPUT = PD_GRAD_X(N_IN, N_OUT, INPUT),
  G_FILTER = PD_GRAD_X(N_IN, N_OUT, FILTER),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUTPUT),
};

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_conv2d_fwd(pd_ctx *c);
pd_status pd_gpu_conv2d_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
