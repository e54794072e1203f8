/* feed.h — binds a network's data variables to data files and fills them,
 * one mini-batch of rows at a time, in the dtype and row shape the variable
 * declares. Used by infer, train (and its evaluation) and gradcheck. */
#ifndef PD_FEED_H
#define PD_FEED_H

#include "io/dataset.h"
#include "core/runner.h"

typedef struct pd_feed_bind {
  int var;
  char *file;
  pd_dataset *ds;
} pd_feed_bind;

typedef struct pd_feed {
  pd_feed_bind *b;
  int n;
  int64_t rows; /* rows in every bound file */
  /* text bindings (docs/training.md, "Text data"): the streams (the batch
   * size) they are cut into, set before binding (0: none can be read); and
   * whether one is bound (its rows are read in order, never shuffled) */
  int64_t text_streams;
  bool text;
} pd_feed;

/* Adds or replaces the binding of a data variable ("VAR=FILE" from a flag,
 * or var/file from the NetDesc's train.data); `what` names the source for
 * messages ("--data", "train.data"). Opens the file and checks its header
 * (row shape against the variable's). */
pd_status pd_feed_bind_spec(pd_feed *f, const pd_net *net, const char *spec, const char *what, pd_error *err);
pd_status pd_feed_bind_file(pd_feed *f, const pd_net *net, const char *var, const char *file, const char *what,
                            pd_error *err);
/* The bindings of a run: the NetDesc's own (`file_what`, e.g.
 * "train.data"; relative paths are relative to the NetDesc at net_path),
 * then the flags' "VAR=FILE" (`flag_what`, e.g. "--data"), a flag replacing
 * the file's binding of the same variable before anything is opened. */
pd_status pd_feed_bind_all(pd_feed *f, const pd_net *net, const char *net_path, Paddle__DataBinding *const *file_b,
                           size_t n_file, const char *file_what, const char *const *flags, int n_flags,
                           const char *flag_what, pd_error *err);

/* The evaluation bindings of the held-out parts of train.data's text
 * bindings (held_out > 0), into the evaluation feed f; one of their
 * variables that f binds already is a conflict (exit 2). */
pd_status pd_feed_bind_held_out(pd_feed *f, const pd_net *net, const char *net_path, Paddle__DataBinding *const *file_b,
                                size_t n_file, pd_error *err);

/* Checks that every data variable read by an active op is bound and that
 * all files have the same number of rows. `active` may be NULL (all ops).
 * Binding reads only a gzip file's header; this inflates the files once
 * every check passed, and must come before pd_feed_batch. */
pd_status pd_feed_check(pd_feed *f, const pd_net *net, const bool *active, const char *hint, pd_error *err);
/* Scans every bound float file for NaN and Inf (integer files hold none):
 * PD_ERR_INPUT naming the file, row and element of the first, and the
 * variable; `skip` names the flag that skips the scan, for the message. */
pd_status pd_feed_check_finite(const pd_feed *f, const pd_net *net, const char *skip, pd_error *err);
/* Reads rows[0..n) of every bound file into the runner's data tensors. */
pd_status pd_feed_batch(pd_feed *f, pd_runner *r, const int64_t *rows, int64_t n, pd_error *err);
/* The vocabulary of the first text binding that has one (the byte of each
 * id, *n of them), else NULL: what a checkpoint records for `generate`. */
const uint8_t *pd_feed_vocab(const pd_feed *f, int *n);
void pd_feed_close(pd_feed *f);

#endif
