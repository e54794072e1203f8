/* time.c — `paddle-run time`: time each op forward and backward. Not written yet: --help
 * describes it, running it says so and exits 2. */
#include "cli.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_time = {"time", "time each op forward and backward", "usage: paddle-run time NET.pbtxt [--iterations N] [--device cpu|gpu]\n", run};

static int run(int argc, char **argv) { return pd_cli_unfinished(&pd_cmd_time, argc, argv); }
