/* sequence_pool.h — sequence_pool's slots and attributes, shared by
 * sequence_pool.c (CPU) and sequence_pool.cu (GPU) only, and its GPU
 * kernels. */
#ifndef PD_OPS_SEQUENCE_POOL_H
#define PD_OPS_SEQUENCE_POOL_H

#include <string.h>

#include "core/op.h"

enum { X, LENGTHS, N_IN };
enum { OUT, N_OUT };
enum { A_TYPE };
enum {
  G_OUT = PD_GRAD_Y(N_IN, N_OUT, OUT),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT),
  G_DX = PD_GRAD_DX(N_IN, N_OUT, X),
};
enum { POOL_MEAN, POOL_MAX, POOL_SUM };

static const char *const pool_types[] = {"mean", "max", "sum", NULL}; /* in POOL_* order */

/* The pooling_type attribute as a POOL_*. */
static inline int pool_type(pd_ctx *c) {
  int i = 0;
  while (pool_types[i + 1] && strcmp(pool_types[i], pd_attr_s(c, A_TYPE)) != 0) i++;
  return i;
}

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_sequence_pool_fwd(pd_ctx *c);
pd_status pd_gpu_sequence_pool_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
