/* cli.h — what the subcommands share: the command table entry, a small
 * option parser that rejects unknown flags with a suggestion, and the one
 * place that turns a pd_error into a message and an exit code. */
#ifndef PD_CLI_H
#define PD_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

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

/* Parses an integer flag value in [min, max]; false (after printing) if bad. */
bool pd_cli_int(const char *cmd, const char *flag, const char *s, long long min, long long max, long long *out);
/* Parses an unsigned 64-bit flag value (a seed), all of 0 .. 2^64 - 1. */
bool pd_cli_u64(const char *cmd, const char *flag, const char *s, uint64_t *out);
/* Seconds on CLOCK_MONOTONIC when main() began (set by main), for the
 * start-up figure in `train --log`. */
extern double pd_cli_t_main;
/* Seconds on CLOCK_MONOTONIC. */
double pd_cli_now(void);

/* A repeatable VAR=FILE option (--data, --eval-data) that names one VAR
 * twice: false after a usage error naming it (which binding was meant is
 * not for us to guess). */
bool pd_cli_unique_vars(const char *cmd, const pd_opt *opt);
/* Whether path is a directory with nothing in it (what `import
 * --params-out` writes for a model without weights). */
bool pd_cli_empty_dir(const char *path);

bool pd_cli_double(const char *cmd, const char *flag, const char *s, double *out);

/* The place options every running command shares: --device cpu|gpu[:N],
 * --tf32, --no-cuda-graph, --conv-algo. The enum indexes them inside a command's table
 * from `first` on (PD_DEVICE_OPTS(first) fills the names in). */
enum { PD_OPT_DEVICE, PD_OPT_TF32, PD_OPT_NO_GRAPH, PD_OPT_CONV_ALGO, PD_N_DEVICE_OPTS };
#define PD_DEVICE_OPTS(first)                                                                                        \
  [(first) + PD_OPT_DEVICE] = {.name = "--device", .has_value = true}, [(first) + PD_OPT_TF32] = {.name = "--tf32"}, \
             [(first) + PD_OPT_NO_GRAPH] = {.name = "--no-cuda-graph"},                                              \
             [(first) + PD_OPT_CONV_ALGO] = {.name = "--conv-algo", .has_value = true}
#define PD_DEVICE_HELP                                                                   \
  "  --device cpu|gpu[:N]  where to run (default cpu); gpu needs a CUDA build and GPU\n" \
  "  --tf32                let cuBLAS use TF32 tensor cores on a GPU (default off)\n"    \
  "  --no-cuda-graph       on a GPU, launch every op each step instead of replaying\n"   \
  "                        the step captured as a CUDA graph\n"                          \
  "  --conv-algo A         CPU convolutions: auto (per layer), im2col, winograd2\n"      \
  "                        (Winograd F(2x2, 3x3) or F(2x2, 5x5)) or winograd4\n"         \
  "                        (F(4x4, 3x3) or F(4x4, 5x5)) for every one; a layer the\n"    \
  "                        forced one cannot do is an error (docs/training.md)\n"
/* Parses the place options at opts[first..] and opens the GPU when one is
 * asked for. Returns 0, or (after printing why) the exit code: 2 for a bad
 * value, a build without CUDA, no driver or no device. */
struct pd_place;
int pd_cli_device(const char *cmd, pd_opt *opts, int first, struct pd_place *place);

/* For a subcommand not written yet: --help works, anything else says so and
 * exits 2. */
int pd_cli_unfinished(const pd_command *cmd, int argc, char **argv);
#endif
