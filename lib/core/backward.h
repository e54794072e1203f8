/* backward.h — AddBackwardOps: the gradient ops of a forward network
 * (seed 001; the update ops are optimizer.h's). */
#ifndef PD_BACKWARD_H
#define PD_BACKWARD_H

#include "core/net.h"

/* Appends the gradient ops for `loss` (a one-element float variable). */
pd_status pd_net_add_backward(pd_net *net, const char *loss, pd_error *err);
/* The same, with row-sparse gradients where an op offers one (embedding's
 * W read by it alone): x@GRAD holds the rows listed in x@GRAD@ROWS, which
 * only the update ops read (AddOptimizerOps wires them). */
pd_status pd_net_add_backward_rows(pd_net *net, const char *loss, pd_error *err);
/* AddBackwardOps for a block's net (core/block.h): the gradient ops from
 * the seeds, whose gradients come from outside (seed_grad[i]: the variable
 * to write seed i's gradient into before the gradient ops run), to the
 * wants (want_grad[i]: the variable holding want i's gradient after them;
 * -1: none flows there, it is zero). Ops [n_forward, nops) are then the
 * gradient ops; no shapes are inferred. */
pd_status pd_net_add_backward_from(pd_net *net, const int *seeds, int nseeds, int *seed_grad, const int *wants,
                                   int nwants, int *want_grad, pd_error *err);
/* For a net loaded from text that already holds backward (and optimizer)
 * ops, as `paddle-run desc --backward --optimizer` writes it: finds where
 * the forward, backward and optimizer parts begin and sets net->loss. A
 * forward-only net is left as it is (net->loss stays -1). */
pd_status pd_net_find_training(pd_net *net, const char *loss, pd_error *err);

/* The (parameter, gradient) pairs after pd_net_add_backward; returns the
 * count (at most max). */
int pd_net_param_grads(const pd_net *net, int *params, int *grads, int max);

#endif
