/* op_helpers.h — the C helpers of op files that their GPU kernels (and
 * test/unit/test_kmath.c) call back into. Declared here, once, rather than
 * in each op's header, because the op headers cannot be included together
 * (their short slot names clash). */
#ifndef PD_OP_HELPERS_H
#define PD_OP_HELPERS_H

#include "core/op.h"
#include "kmath.h"

#ifdef __cplusplus
extern "C" {
#endif
/* elementwise_add's broadcast of Y over X (axis, pre, n, post). */
void pd_elementwise_add_bcast(pd_ctx *c, const pd_tensor *x, const pd_tensor *y, pd_bcast *b);
/* conv2d's and pool2d's sizes, checked, from the attributes and X. */
pd_status pd_conv2d_geom(pd_ctx *c, const pd_tensor *x, pd_conv_geom *g);
pd_status pd_pool2d_geom(pd_ctx *c, const pd_tensor *x, pd_pool_geom *g);
/* transpose's permutation for X's rank (perm, or the dims reversed). */
void pd_transpose_perm(pd_ctx *c, int ndim, int *perm);
/* matmul's batch layout of X and Y; 0, the 1-based batch dim that does not
 * broadcast, or -1 when X's K differs from Y's. */
int pd_matmul_layout(const pd_tensor *x, const pd_tensor *y, pd_mm_layout *p);
#ifdef __cplusplus
}
#endif

#endif
