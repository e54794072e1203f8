/* gradcheck.c — `paddle-run gradcheck`: check the gradients of a network against finite differences. Not written yet: --help
 * describes it, running it says so and exits 2. */
#include "cli.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_gradcheck = {"gradcheck", "check the gradients of a network against finite differences", "usage: paddle-run gradcheck NET.pbtxt [--data VAR=FILE]...\n", run};

static int run(int argc, char **argv) { return pd_cli_unfinished(&pd_cmd_gradcheck, argc, argv); }
