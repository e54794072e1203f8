/* desc.c — `paddle-run desc`: print the network, optionally with backward and optimizer ops. Not written yet: --help
 * describes it, running it says so and exits 2. */
#include "cli.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_desc = {"desc", "print the network, optionally with backward and optimizer ops", "usage: paddle-run desc NET.pbtxt [--backward] [--optimizer NAME]\n", run};

static int run(int argc, char **argv) { return pd_cli_unfinished(&pd_cmd_desc, argc, argv); }
