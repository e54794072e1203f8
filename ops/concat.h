/* concat.h — concat's slots and attribute. concat.c runs on both places
 * through one strided copy (concat.cu holds the GPU's, pd_gpu_copy2d in
 * gpu_ops.h), so concat.cu needs none of this. */
#ifndef PD_OPS_CONCAT_H
#define PD_OPS_CONCAT_H

#include "core/op.h"

enum { X, N_IN };
enum { OUT, N_OUT };
enum { A_AXIS, N_ATTRS };

/* Grad op slots (see op.h): inputs X... Out dOut, outputs dX... */
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT) };

#endif
