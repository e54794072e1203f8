/* dist_cli.h — what `train` does around MPI so that N ranks speak as one:
 * ranks other than 0 hold their messages back until the setup is agreed,
 * then report only what fails on them, with the rank. */
#ifndef PD_DIST_CLI_H
#define PD_DIST_CLI_H

#include <stdbool.h>

#include "base/error.h"
#include "io/feed.h"
#include "core/runner.h"

/* Joins MPI when launched by mpirun; on ranks other than 0, stderr goes to
 * a temporary file until pd_cli_dist_agree. Returns 0 or an exit code. */
int pd_cli_dist_begin(void);
/* Every rank, once, after its setup (code: 0 ready, else its exit code).
 * Returns 0 when every rank is ready; otherwise the lowest failing rank's
 * exit code, that rank having shown its messages ("[rank R] ..." when it is
 * not rank 0) and every other rank staying quiet. From then on ranks other
 * than 0 print only errors. */
int pd_cli_dist_agree(int code);
/* An error while training. On a single rank, prints it and returns its exit
 * code. On several: a collective error (every rank found it) is printed by
 * rank 0 and the code returned; any other is printed with the rank and
 * ends the whole job (MPI_Abort) with its code. */
int pd_cli_dist_fail(const pd_error *err, bool collective);
/* The end of the command on every rank: agrees first if the command ended
 * before its setup was done (a usage error), then leaves MPI. */
int pd_cli_dist_end(int code);

/* Rank 0's parameters and optimizer state to every rank (before training). */
pd_status pd_cli_dist_share(pd_runner *r, pd_error *err);
/* Every rank, before training: whether all ranks were given the same
 * numbers that decide when they meet in collectives (an error when not; then
 * *differ: every rank has it). */
pd_status pd_cli_dist_same_plan(const int64_t *plan, int n, bool *differ, pd_error *err);
/* Every rank, before training: whether every rank's data files (the
 * training feed f, then the evaluation feed ef, which may be NULL) hold the
 * same bytes, one checksum per data variable of the net (an error naming
 * the first that differs when not; then *differ: every rank has it). */
pd_status pd_cli_dist_same_data(const pd_net *net, const pd_feed *f, const pd_feed *ef, bool *differ, pd_error *err);
/* Every rank: a checksum of the parameters and optimizer state, compared
 * across ranks; an error when they differ (then *differ: every rank has it). */
pd_status pd_cli_dist_check(pd_runner *r, int64_t step, bool *differ, pd_error *err);

#endif
