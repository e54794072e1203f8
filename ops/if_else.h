/* if_else.h — the if_else op's slots and attributes. Included by if_else's
 * own files only: the short slot names would clash between ops. */
#ifndef PD_OPS_IF_ELSE_H
#define PD_OPS_IF_ELSE_H

#include "core/op.h"

enum { COND, X, OUTER, N_IN };
enum { OUT, STEPS, N_OUT };
enum { A_TRUE, A_FALSE, A_OUTPUTS };

/* Grad op slots (see op.h). */
enum {
  G_COND = PD_GRAD_X(N_IN, N_OUT, COND),
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_OUTER = PD_GRAD_X(N_IN, N_OUT, OUTER),
  G_OUT_Y = PD_GRAD_Y(N_IN, N_OUT, OUT),
  G_STEPS = PD_GRAD_Y(N_IN, N_OUT, STEPS),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT),
  G_DX = PD_GRAD_DX(N_IN, N_OUT, X),
  G_DOUTER = PD_GRAD_DX(N_IN, N_OUT, OUTER),
};

#endif
