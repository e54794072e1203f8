/* cli.h — what the subcommands share: the command table entry, a small
 * option parser that rejects unknown flags with a suggestion, and the one
 * place that turns a pd_error into a message and an exit code. */
#ifndef PD_CLI_H
#define PD_CLI_H

#include <stdbool.h>

#include "error.h"

typedef struct pd_command {
  const char *name;
  const char *summary;
  const char *usage; /* full help text for `paddle-run NAME --help` */
  int (*run)(int argc, char **argv);
} pd_command;

/* An option: "--lr" with a value, or a switch. Repeatable ones collect. */
typedef struct pd_opt {
  const char *name; /* "--lr" */
  bool has_value;
  bool repeat;       /* may be given more than once (values collected) */
  const char *value; /* last value (or "1" for a switch) */
  const char **values;
  int n_values;
} pd_opt;

/* Parses argv[1..] (argv[0] is the command name). Positional arguments go
 * to pos (at most max_pos). --help prints the command's usage and returns
 * -1 with *exit_code 0; an error prints a message and returns -1 with
 * *exit_code 2. Returns the number of positionals otherwise. Accepts
 * --name=value and --name value. */
int pd_cli_parse(const pd_command *cmd, int argc, char **argv, pd_opt *opts, int nopts, char **pos, int max_pos,
                 int *exit_code);
void pd_cli_free(pd_opt *opts, int nopts);
pd_opt *pd_cli_get(pd_opt *opts, int nopts, const char *name);

/* Prints "paddle-run: <message>" to stderr; returns the exit code. */
int pd_cli_fail(const pd_error *err);
/* Prints "paddle-run CMD: <formatted>" and returns 2 (bad usage). */
int pd_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses a non-negative integer flag value; false (after printing) if bad. */
bool pd_cli_int(const char *cmd, const char *flag, const char *s, long long min, long long *out);
bool pd_cli_double(const char *cmd, const char *flag, const char *s, double *out);

/* For a subcommand not written yet: --help works, anything else says so and
 * exits 2. */
int pd_cli_unfinished(const pd_command *cmd, int argc, char **argv);
#endif
