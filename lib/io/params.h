/* params.h — loading a network's parameters (and other persistable state)
 * by variable name from a checkpoint or a plain directory of NAME.npy files:
 * for infer, fine-tuning and resuming. */
#ifndef PD_PARAMS_H
#define PD_PARAMS_H

#include "core/net.h"
#include "text/textformat.h" /* pd_buf */

/* Loads every persistable variable of `net` found in `dir` into `scope`.
 * A shape mismatch names the variable and both shapes and fails. With
 * `required`, a persistable variable read by an active op (active may be
 * NULL: all) that is missing fails; otherwise it is listed in `report` as
 * missed (optimizer state is not listed: fine-tuning starts it afresh). Files matching no variable are listed as
 * skipped (files of optimizer state, @lr, @step, p@VELOCITY, p@MOMENT1,
 * p@MOMENT2, are not). `mismatched` (may be NULL) receives the count of
 * missed and skipped entries: 0 when the directory holds exactly this
 * net's parameters and state. */
pd_status pd_params_load(const pd_net *net, pd_scope *scope, const char *dir, const bool *active, bool required,
                         pd_buf *report, int *mismatched, pd_error *err);

#endif
