/* reshape.h — reshape's slots and attribute. reshape has no GPU kernels of
 * its own: Out is a view of X on any place. */
#ifndef PD_OPS_RESHAPE_H
#define PD_OPS_RESHAPE_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_SHAPE, N_ATTRS };

/* Grad op slots (see op.h): inputs X Out dOut, output dX (X's dims). */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X) };

#endif
