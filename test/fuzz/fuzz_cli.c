/* fuzz_cli.c — libFuzzer target for the command-line argument parser
 * (cmd/cli.c): the input is an argument vector, arguments separated by NUL
 * bytes, the first byte choosing one of the option tables below (modelled on
 * the commands': valued, switch and repeatable options, with or without
 * positionals). pd_cli_parse must either refuse with exit code 2 or accept
 * (--help: -1 and exit code 0); on acceptance every positional and every
 * option value points into the argument vector (or is "1" for a switch), a
 * non-repeatable option is given at most once, and a repeatable one has as
 * many values as it was given. Accepted numbers go through pd_cli_int,
 * pd_cli_u64 and pd_cli_double as the commands read them, and --device
 * through pd_place_parse. Its messages go to stderr (run with -close_fd_mask=3 to
 * quiet them).
 *   make build-fuzz/fuzz_cli
 *   build-fuzz/fuzz_cli -close_fd_mask=3 build-fuzz/corpus/fuzz_cli test/fuzz/corpus/fuzz_cli */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/util.h"
#include "gpu/gpurt.h"

static const pd_command cmd = {"fuzz", "fuzzing", "usage: paddle-run fuzz\n", NULL};

enum { MAX_ARGS = 4096 };

static bool inside(const char *p, char **argv, int argc) {
  for (int i = 0; i < argc; i++)
    if (p >= argv[i] && p <= argv[i] + strlen(argv[i])) return true;
  return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int table = data[0] % 3;
  /* the arguments: a copy, NUL-terminated, split at NULs */
  char *buf = malloc(size + 1);
  char **argv = malloc(sizeof *argv * (MAX_ARGS + 1));
  if (!buf || !argv) abort();
  memcpy(buf, data + 1, size - 1);
  buf[size - 1] = '\0';
  int argc = 0;
  argv[argc++] = (char *)"fuzz";
  for (size_t i = 0; i < size - 1 && argc < MAX_ARGS;) {
    argv[argc++] = buf + i;
    i += strlen(buf + i) + 1;
  }
  argv[argc] = NULL;
  pd_opt opts[8];
  int nopts = 0, max_pos = 0;
  memset(opts, 0, sizeof opts);
  switch (table) {
  case 0: /* like train */
    opts[nopts++] = (pd_opt){.name = "--batch-size", .has_value = true};
    opts[nopts++] = (pd_opt){.name = "--lr", .has_value = true};
    opts[nopts++] = (pd_opt){.name = "--set", .has_value = true, .repeat = true};
    opts[nopts++] = (pd_opt){.name = "--data", .has_value = true, .repeat = true};
    opts[nopts++] = (pd_opt){.name = "--device", .has_value = true};
    opts[nopts++] = (pd_opt){.name = "--tf32"};
    max_pos = 1;
    break;
  case 1: /* like fmt */
    opts[nopts++] = (pd_opt){.name = "--type", .has_value = true};
    opts[nopts++] = (pd_opt){.name = "--binary"};
    opts[nopts++] = (pd_opt){.name = "--from-binary"};
    max_pos = 1;
    break;
  default: /* positionals only, as ops */
    max_pos = 64;
    break;
  }
  char *pos[64];
  int code = -7;
  int n = pd_cli_parse(&cmd, argc, argv, opts, nopts, pos, max_pos, &code);
  if (n < 0) {
    if (code != 0 && code != 2) abort();
  } else {
    if (code != -7 || n > max_pos) abort();
    for (int i = 0; i < n; i++)
      if (!inside(pos[i], argv, argc)) abort();
    for (int k = 0; k < nopts; k++) {
      const pd_opt *o = &opts[k];
      if (!o->value) {
        if (o->n_values) abort();
        continue;
      }
      if (!o->has_value ? strcmp(o->value, "1") != 0 : !inside(o->value, argv, argc)) abort();
      if (o->repeat ? o->n_values < 1 || o->values[o->n_values - 1] != o->value : o->n_values != 0) abort();
      for (int i = 0; i < o->n_values; i++)
        if (!inside(o->values[i], argv, argc)) abort();
    }
    long long ll;
    double d;
    if (table == 0) {
      if (opts[0].value && pd_cli_int("fuzz", "--batch-size", opts[0].value, 1, PD_MAX_BATCH, &ll) &&
          (ll < 1 || ll > PD_MAX_BATCH))
        abort();
      uint64_t u;
      if (opts[0].value) (void)pd_cli_u64("fuzz", "--seed", opts[0].value, &u); /* the same text as a seed */
      if (opts[1].value && pd_cli_double("fuzz", "--lr", opts[1].value, &d) && !(d == d)) abort();
      pd_place place;
      if (opts[4].value) (void)pd_place_parse(opts[4].value, &place);
    }
  }
  pd_cli_free(opts, nopts);
  free(argv);
  free(buf);
  return 0;
}
