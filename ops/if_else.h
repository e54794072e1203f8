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

#ifdef __cplusplus
extern "C" {
#endif
/* The GPU side of if_else.c's moves of rows (if_else.cu): for q < n, dst
 * row (scatter ? idx[q] : q) gets src row (scatter ? q : idx[q]), zeros
 * where src is NULL, or adds it (add: float32); idx NULL: row q on both
 * sides. Rows are `row` bytes; idx is in device memory. */
pd_status pd_gpu_if_else_rows(pd_ctx *c, void *dst, const void *src, const int64_t *idx, int64_t n, size_t row,
                              bool scatter, bool add);
/* Copies between the host and the device on the op's stream; read waits
 * for it (the condition, whose row counts set the blocks' shapes). */
pd_status pd_gpu_if_else_read(pd_ctx *c, void *host, const void *dev, size_t bytes);
pd_status pd_gpu_if_else_write(pd_ctx *c, void *dev, const void *host, size_t bytes);
#ifdef __cplusplus
}
#endif

#endif
