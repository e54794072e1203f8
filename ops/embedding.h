/* embedding.h — embedding's slots and attributes, shared by its own files
 * only (the short slot names would clash between ops). */
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

#endif
