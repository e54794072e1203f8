/* infer.c — stub until written */
#include "cli.h"
static int run(int argc, char **argv);
const pd_command pd_cmd_infer = {"infer", "run a trained network on data", "usage: paddle-run infer NET.pbtxt --params DIR --data VAR=FILE... --fetch VAR[=OUT.npy]...\n", run};
static int run(int argc, char **argv) { return pd_cli_unfinished(&pd_cmd_infer, argc, argv); }
