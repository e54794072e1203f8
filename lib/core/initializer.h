/* initializer.h — the start-up network of seed 001, reduced to what it does:
 * give each parameter its first values, reproducibly from the seed and the
 * parameter's name (so adding a parameter does not change the others). */
#ifndef PD_INITIALIZER_H
#define PD_INITIALIZER_H

#include "core/net.h"

/* Fills tensor t (allocated, float) for variable vi: its own `init`, else
 * `def` (train.default_init), else xavier-uniform for rank >= 2 and zeros
 * for rank 1. Types: constant, uniform, gaussian, xavier|glorot, kaiming|he. */
pd_status pd_init_param(const pd_var_info *vi, const Paddle__Initializer *def, uint64_t seed, pd_tensor *t,
                        pd_error *err);

/* Gives every persistable variable of net that `scope` does not hold yet
 * its storage and first values: parameters by pd_init_param; state by its
 * own `init`, else the value of the op slot reading it (batch_norm's running
 * statistics), else zero for optimizer state. A STATE variable with none of
 * these is an input error naming it (its value must come from --params). */
pd_status pd_init_persistables(const pd_net *net, pd_scope *scope, const Paddle__Initializer *def, uint64_t seed,
                               pd_error *err);

/* The learning rate at `step` (0-based count of updates done) under the
 * optimizer's schedule, with linear warm-up. */
double pd_schedule_lr(const Paddle__OptimizerDesc *opt, int64_t step);
/* A "plateau" schedule's state: the lr in effect, the best evaluation loss
 * (INFINITY before the first), evaluations since it last improved. */
typedef struct pd_plateau {
  double lr, best;
  int64_t bad;
} pd_plateau;
/* One evaluation's loss into the state, by PyTorch's ReduceLROnPlateau
 * (mode min, threshold_mode rel, cooldown 0): better when below
 * best * (1 - threshold); after more than `patience` evaluations that are
 * not, lr becomes max(lr * factor, min_lr) (when that lowers it by more
 * than 1e-8) and the count restarts. True when the lr changed. */
bool pd_plateau_step(const Paddle__LrSchedule *s, pd_plateau *p, double loss);
/* Checks a schedule's fields (type known, needed fields > 0). */
pd_status pd_schedule_check(const Paddle__OptimizerDesc *opt, pd_error *err);

#endif
