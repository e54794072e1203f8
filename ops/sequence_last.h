/* sequence_last.h — sequence_last's slots and attributes, shared by
 * sequence_last.c (CPU) and sequence_last.cu (GPU) only, and its GPU
 * kernels. */
#ifndef PD_OPS_SEQUENCE_LAST_H
#define PD_OPS_SEQUENCE_LAST_H

#include <stdbool.h>
#include <string.h>

#include "core/op.h"

enum { X, LENGTHS, N_IN };
enum { OUT, N_OUT };
enum { A_DIRECTION };
enum { G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT), G_DX = PD_GRAD_DX(N_IN, N_OUT, X) };

/* Whether the direction attribute is `direction`. */
static inline bool is(pd_ctx *c, const char *direction) { return strcmp(pd_attr_s(c, A_DIRECTION), direction) == 0; }

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_sequence_last_fwd(pd_ctx *c);
pd_status pd_gpu_sequence_last_bwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
