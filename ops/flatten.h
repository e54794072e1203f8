/* flatten.h — flatten's slots and attribute (flatten.c runs on both places;
 * its GPU zero fill is concat.cu's pd_gpu_copy2d). */
#ifndef PD_OPS_FLATTEN_H
#define PD_OPS_FLATTEN_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_AXIS, N_ATTRS };

/* Grad op slots (see op.h): inputs X Out dOut, output dX (X's dims). */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT) };

#endif
