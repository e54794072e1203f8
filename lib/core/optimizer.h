/* optimizer.h — AddOptimizerOps (optimizer.c): with backward.h, what turns
 * a forward network into a training one (seeds 001/004). */
#ifndef PD_OPTIMIZER_H
#define PD_OPTIMIZER_H

#include "core/net.h"

/* Appends one update op per (parameter, gradient) — sgd, momentum or adam —
 * after global-norm clipping when opt->clip_norm > 0. Adds the variables
 * "@lr" and "@step" (float64 [1]) that the training loop sets each step,
 * and the optimizer's state per parameter (p@VELOCITY, p@MOMENT1, p@MOMENT2). */
pd_status pd_net_add_optimizer(pd_net *net, const Paddle__OptimizerDesc *opt, pd_error *err);

/* What train, time, desc and gradcheck all need: the backward ops for
 * `loss` and, when opt is given, the update ops — each only if the net does
 * not hold them already (a file printed by `desc --backward --optimizer`). */
pd_status pd_net_make_trainable(pd_net *net, const char *loss, const Paddle__OptimizerDesc *opt, pd_error *err);

#endif
