/* embedding.h — embedding's slots and attributes, shared by embedding.c (CPU)
 * and embedding.cu (GPU) only (the short slot names would clash between
 * ops), and its GPU kernels. */
#ifndef PD_OPS_EMBEDDING_H
#define PD_OPS_EMBEDDING_H

#include "core/op.h"

enum { IDS, W, N_IN };
enum { OUT, N_OUT };
enum { A_VOCAB, A_DIM, A_PADDING, N_ATTRS };

/* Grad op slots (see op.h): inputs Ids W Out dOut, outputs dIds (never
 * made) dW, then dW's row list (registry.c: PD_SLOT_ROWS_GRAD). */
enum {
  G_IDS = PD_GRAD_X(N_IN, N_OUT, IDS),
  G_W = PD_GRAD_X(N_IN, N_OUT, W),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT),
  G_DW = PD_GRAD_DX(N_IN, N_OUT, W),
  G_ROWS = N_IN
};

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_embedding_fwd(pd_ctx *c);
pd_status pd_gpu_embedding_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
