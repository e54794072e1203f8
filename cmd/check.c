/* check.c — stub until written */
#include "cli.h"
static int run(int argc, char **argv);
const pd_command pd_cmd_check = {"check", "validate a network and print every variable's shape", "usage: paddle-run check NET.pbtxt\n", run};
static int run(int argc, char **argv) { return pd_cli_unfinished(&pd_cmd_check, argc, argv); }
