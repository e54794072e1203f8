/* recurrent.h — the recurrent op's slots and attributes, shared by its
 * files. Included by recurrent's own files only: the short slot names would
 * clash between ops. */
#ifndef PD_OPS_RECURRENT_H
#define PD_OPS_RECURRENT_H

#include "core/op.h"

enum { X, H0, LENGTHS, OUTER, N_IN };
enum { OUT, HT, STEPS, N_OUT };
enum { A_BLOCK, A_INPUTS, A_PREV, A_STATES, A_OUTPUTS, A_REVERSE };

/* Grad op slots (see op.h). */
enum {
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_H0 = PD_GRAD_X(N_IN, N_OUT, H0),
  G_LENGTHS = PD_GRAD_X(N_IN, N_OUT, LENGTHS),
  G_OUTER = PD_GRAD_X(N_IN, N_OUT, OUTER),
  G_OUT_Y = PD_GRAD_Y(N_IN, N_OUT, OUT),
  G_HT_Y = PD_GRAD_Y(N_IN, N_OUT, HT),
  G_STEPS = PD_GRAD_Y(N_IN, N_OUT, STEPS),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT),
  G_DHT = PD_GRAD_DY(N_IN, N_OUT, HT),
  G_DX = PD_GRAD_DX(N_IN, N_OUT, X),
  G_DH0 = PD_GRAD_DX(N_IN, N_OUT, H0),
  G_DOUTER = PD_GRAD_DX(N_IN, N_OUT, OUTER),
};

#endif
