/* trainlog.h — what `train` writes for a person and for a script: numbers
 * and durations formatted for reading, JSON pieces for the --log file, and
 * checked writes (a log that cannot be written ends the run). */
#ifndef PD_TRAINLOG_H
#define PD_TRAINLOG_H

#include <stdio.h>

#include "base/error.h"
#include "io/feed.h"
#include "core/net.h"

/* v as a person reads it: %.5g, "nan" (never "-nan"), "inf", "-inf".
 * Returns buf (size >= 32). */
const char *pd_fmt_num(char *buf, size_t size, double v);
/* Seconds as a person reads them, three digits, always in seconds (scripts
 * read "in N s"): "4.2e-05 s", "0.0123 s", "4.56 s", "123 s". */
const char *pd_fmt_secs(char *buf, size_t size, double s);
/* A time left: "42s", "3m07s", "2h05m". */
const char *pd_fmt_eta(char *buf, size_t size, double s);

/* s as a JSON string, quoted and escaped; NULL as null. */
void pd_json_str(FILE *f, const char *s);
/* v as a JSON number (%.9g), or null when not finite. */
void pd_json_num(FILE *f, double v);
/* ,"KEY":{"VAR":"FILE",...} for a feed's bindings. */
void pd_json_feed(FILE *f, const char *key, const pd_net *net, const pd_feed *feed);

/* Ends a record: writes "}\n", flushes, and checks that every write of the
 * record reached the file (a full disk, /dev/full, a closed pipe): an error
 * naming the log and why, PD_ERR_RUNTIME (exit 1). */
pd_status pd_log_end_record(FILE *f, const char *path, pd_error *err);
/* Closes the log; an error when the last writes did not reach the file. */
pd_status pd_log_close(FILE *f, const char *path, pd_error *err);

/* Every class label of the bound data files of `feed` that a loss or metric
 * op reads as a class index (a "Label" input of int dtype, no soft_label),
 * checked against the classes the op's scores have: a label outside [0, C)
 * is an error naming the file, its row and the op (PD_ERR_INPUT), found
 * before the first step rather than when its batch comes. `what` names the
 * data in the message ("training", "evaluation"). */
pd_status pd_check_labels(const pd_net *net, const pd_feed *feed, const char *what, pd_error *err);

#endif
