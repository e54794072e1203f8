/* backward.h — AddBackwardOps: the gradient ops of a forward network
 * (seed 001; the update ops are optimizer.h's). */
#ifndef PD_BACKWARD_H
#define PD_BACKWARD_H

#include "core/net.h"

/* Appends the gradient ops for `loss` (a one-element float variable). */
pd_status pd_net_add_backward(pd_net *net, const char *loss, pd_error *err);
/* For a net loaded from text that already holds backward (and optimizer)
 * ops, as `paddle-run desc --backward --optimizer` writes it: finds where
 * the forward, backward and optimizer parts begin and sets net->loss. A
 * forward-only net is left as it is (net->loss stays -1). */
pd_status pd_net_find_training(pd_net *net, const char *loss, pd_error *err);

/* The (parameter, gradient) pairs after pd_net_add_backward; returns the
 * count (at most max). */
int pd_net_param_grads(const pd_net *net, int *params, int *grads, int max);

#endif
