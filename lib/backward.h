/* backward.h — AddBackwardOps and AddOptimizerOps: what turns a forward
 * network into a training one (seeds 001/004). */
#ifndef PD_BACKWARD_H
#define PD_BACKWARD_H

#include "net.h"

/* Appends the gradient ops for `loss` (a one-element float variable). */
pd_status pd_net_add_backward(pd_net *net, const char *loss, pd_error *err);
/* For a net loaded from text that already holds backward (and optimizer)
 * ops, as `paddle-run desc --backward --optimizer` writes it: finds where
 * the forward, backward and optimizer parts begin and sets net->loss. A
 * forward-only net is left as it is (net->loss stays -1). */
pd_status pd_net_find_training(pd_net *net, const char *loss, pd_error *err);

/* What train, time, desc and gradcheck all need: the backward ops for
 * `loss` and, when opt is given, the update ops — each only if the net does
 * not hold them already (a file printed by `desc --backward --optimizer`). */
pd_status pd_net_make_trainable(pd_net *net, const char *loss, const Paddle__OptimizerDesc *opt, pd_error *err);

/* The (parameter, gradient) pairs after pd_net_add_backward; returns the
 * count (at most max). */
int pd_net_param_grads(const pd_net *net, int *params, int *grads, int max);
/* Appends one update op per (parameter, gradient) — sgd, momentum or adam —
 * after global-norm clipping when opt->clip_norm > 0. Adds the variables
 * "@lr" and "@step" (float64 [1]) that the training loop sets each step,
 * and the optimizer's state per parameter (p@VELOCITY, p@MOMENT1, p@MOMENT2). */
pd_status pd_net_add_optimizer(pd_net *net, const Paddle__OptimizerDesc *opt, pd_error *err);

#endif
