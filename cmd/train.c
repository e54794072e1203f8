/* train.c — `paddle-run train`: train a network and save its parameters. Not written yet: --help
 * describes it, running it says so and exits 2. */
#include "cli.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_train = {"train", "train a network and save its parameters", "usage: paddle-run train NET.pbtxt [--data VAR=FILE]... [--eval-data VAR=FILE]...\n       [--batch-size N] [--epochs N | --iterations N] [--optimizer NAME] [--lr F]\n       [--seed N] [--device cpu|gpu[:N]] [--threads N] [--save DIR] [--save-every N]\n       [--resume DIR] [--params DIR] [--log FILE.jsonl] [--set FIELD=VALUE]...\n", run};

static int run(int argc, char **argv) { return pd_cli_unfinished(&pd_cmd_train, argc, argv); }
