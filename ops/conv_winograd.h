/* conv_winograd.h — Winograd minimal filtering for conv2d's CPU kernels
 * (conv_winograd.c): 3x3 and 5x5 kernels with stride 1, dilation 1 and one
 * group, any padding, in output tiles of 2x2 (F(2x2, 3x3), F(2x2, 5x5)) or
 * 4x4 (F(4x4, 3x3), F(4x4, 5x5)).
 * Private to conv2d's CPU files. */
#ifndef PD_OPS_CONV_WINOGRAD_H
#define PD_OPS_CONV_WINOGRAD_H

#include <stdbool.h>
#include <stdint.h>

#include "core/op.h"
#include "kmath.h"

/* F(m x m, r x r) over tiles of a = m + r - 1: y = AT [(G w G^T) . (BT d BT^T)] AT^T
 * (AT [m, a], G [a, r], BT [a, a], row-major). */
typedef struct pd_wino_form {
  int m, r, a;
  const double *at, *g, *bt;
} pd_wino_form;

/* The form with m x m output tiles for r x r kernels; NULL if there is none. */
const pd_wino_form *pd_wino_form_get(int m, int r);

/* Whether a convolution can go through a Winograd form for r x r kernels. */
static inline bool pd_wino_fits(const pd_conv_geom *g, int r) {
  return g->kh == r && g->kw == r && g->sh == 1 && g->sw == 1 && g->dh == 1 && g->dw == 1 && g->groups == 1;
}

/* Forward (y = conv(x, w) + b) and backward (dx, dw, db, each NULL when not
 * wanted) of a convolution that pd_wino_fits, the batch split into `parts`
 * (each with its own scratch in the op's work[0]; dw and db summed in part
 * order). */
pd_status pd_wino_forward_float(pd_ctx *c, const pd_conv_geom *g, const pd_wino_form *f, int parts, const float *x,
                                const float *w, const float *b, float *y);
pd_status pd_wino_forward_double(pd_ctx *c, const pd_conv_geom *g, const pd_wino_form *f, int parts, const double *x,
                                 const double *w, const double *b, double *y);
pd_status pd_wino_backward_float(pd_ctx *c, const pd_conv_geom *g, const pd_wino_form *f, int parts, const float *x,
                                 const float *w, const float *dy, float *dx, float *dw, float *db);
pd_status pd_wino_backward_double(pd_ctx *c, const pd_conv_geom *g, const pd_wino_form *f, int parts, const double *x,
                                  const double *w, const double *dy, double *dx, double *dw, double *db);

#endif
