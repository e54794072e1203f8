/* cli.c — option parsing and error reporting shared by the subcommands. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/convalgo.h"
#include "dist/dist.h"
#include "gpu/gpurt.h"
#include "dist/gpunccl.h"

pd_opt *pd_cli_get(pd_opt *opts, int nopts, const char *name) {
  for (int i = 0; i < nopts; i++)
    if (strcmp(opts[i].name, name) == 0) return &opts[i];
  return NULL;
}

static int unknown_flag(const pd_command *cmd, const char *arg, pd_opt *opts, int nopts) {
  const char *names[64];
  int n = 0;
  for (int i = 0; i < nopts && n < 63; i++) names[n++] = opts[i].name;
  names[n++] = "--help";
  char flag[128];
  snprintf(flag, sizeof flag, "%.*s", (int)strcspn(arg, "="), arg);
  const char *sug = pd_suggest(flag, names, (size_t)n);
  if (sug)
    fprintf(stderr, "paddle-run %s: unknown option %s (did you mean %s?)\n", cmd->name, flag, sug);
  else
    fprintf(stderr, "paddle-run %s: unknown option %s; see `paddle-run %s --help`\n", cmd->name, flag, cmd->name);
  return 2;
}

int pd_cli_parse(const pd_command *cmd, int argc, char **argv, pd_opt *opts, int nopts, char **pos, int max_pos,
                 int *exit_code) {
  int npos = 0;
  bool only_pos = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!only_pos && strcmp(a, "--") == 0) {
      only_pos = true;
      continue;
    }
    if (!only_pos && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
      fputs(cmd->usage, stdout);
      *exit_code = 0;
      return -1;
    }
    if (!only_pos && a[0] == '-' && a[1] != '\0') {
      size_t len = strcspn(a, "=");
      pd_opt *o = NULL;
      for (int k = 0; k < nopts; k++)
        if (strlen(opts[k].name) == len && strncmp(opts[k].name, a, len) == 0) o = &opts[k];
      if (!o) {
        *exit_code = unknown_flag(cmd, a, opts, nopts);
        return -1;
      }
      const char *val = "1";
      if (o->has_value) {
        if (a[len] == '=')
          val = a + len + 1;
        else if (i + 1 < argc)
          val = argv[++i];
        else {
          *exit_code = pd_cli_usage_error(cmd->name, "option %s needs a value", o->name);
          return -1;
        }
      } else if (a[len] == '=') {
        *exit_code = pd_cli_usage_error(cmd->name, "option %s takes no value", o->name);
        return -1;
      }
      if (o->value && !o->repeat) {
        *exit_code = pd_cli_usage_error(cmd->name, "option %s is given twice", o->name);
        return -1;
      }
      o->value = val;
      if (o->repeat) {
        const char **vs = realloc(o->values, sizeof *vs * (size_t)(o->n_values + 1));
        if (!vs) {
          *exit_code = pd_cli_usage_error(cmd->name, "out of memory");
          return -1;
        }
        o->values = vs;
        o->values[o->n_values++] = val;
      }
      continue;
    }
    if (npos == max_pos) {
      *exit_code =
          pd_cli_usage_error(cmd->name, "unexpected argument \"%s\"; see `paddle-run %s --help`", a, cmd->name);
      return -1;
    }
    pos[npos++] = argv[i];
  }
  return npos;
}

void pd_cli_free(pd_opt *opts, int nopts) {
  for (int i = 0; i < nopts; i++) {
    free(opts[i].values);
    opts[i].values = NULL;
  }
}

int pd_cli_fail(const pd_error *err) {
  fprintf(stderr, "paddle-run: %s\n", err->msg);
  return pd_exit_code(err->status);
}

int pd_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "paddle-run %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 2;
}

bool pd_cli_int(const char *cmd, const char *flag, const char *s, long long min, long long max, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno || v < min || v > max) {
    pd_cli_usage_error(cmd, "%s must be an integer from %lld to %lld, got \"%s\"", flag, min, max, s);
    return false;
  }
  *out = v;
  return true;
}

bool pd_cli_u64(const char *cmd, const char *flag, const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  /* strtoull takes "-1" as 2^64 - 1: only digits are a number here */
  unsigned long long v = *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
  if (!(*s >= '0' && *s <= '9') || *end || errno) {
    pd_cli_usage_error(cmd, "%s must be an integer from 0 to %llu, got \"%s\"", flag, (unsigned long long)UINT64_MAX,
                       s);
    return false;
  }
  *out = v;
  return true;
}

bool pd_cli_double(const char *cmd, const char *flag, const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || *end || errno || !isfinite(v)) {
    pd_cli_usage_error(cmd, "%s must be a number, got \"%s\"", flag, s);
    return false;
  }
  *out = v;
  return true;
}

int pd_cli_unfinished(const pd_command *cmd, int argc, char **argv) {
  pd_opt none[1] = {{.name = "--"}};
  char *pos[64];
  int code = 0;
  if (pd_cli_parse(cmd, argc, argv, none, 0, pos, 64, &code) < 0 && code == 0) return 0;
  fprintf(stderr, "paddle-run %s: not implemented in this version yet\n", cmd->name);
  return 2;
}

int pd_cli_device(const char *cmd, pd_opt *opts, int first, pd_place *place) {
  const char *v = opts[first + PD_OPT_DEVICE].value;
  *place = (pd_place){PD_CPU, 0};
  if (v && !pd_place_parse(v, place))
    return pd_cli_usage_error(cmd, "--device must be cpu, gpu or gpu:N, got \"%s\"", v);
  const char *ca = opts[first + PD_OPT_CONV_ALGO].value;
  pd_conv_algo algo = PD_CONV_AUTO;
  if (ca && !pd_conv_algo_parse(ca, &algo))
    return pd_cli_usage_error(cmd, "--conv-algo must be auto, im2col, winograd2 or winograd4, got \"%s\"", ca);
  if (place->kind != PD_CPU && algo != PD_CONV_AUTO)
    return pd_cli_usage_error(cmd, "--conv-algo %s is for the CPU; GPU convolutions have one algorithm", ca);
  pd_conv_algo_set(algo);
  if (place->kind == PD_CPU) {
    if (opts[first + PD_OPT_TF32].value || opts[first + PD_OPT_NO_GRAPH].value)
      return pd_cli_usage_error(cmd, "%s is for --device gpu",
                                opts[first + PD_OPT_TF32].value ? "--tf32" : "--no-cuda-graph");
    return 0;
  }
  if (pd_dist_size() > 1) { /* data parallel on GPUs: NCCL, one GPU per rank */
    if (!pd_nccl_built())
      return pd_cli_usage_error(cmd,
                                "--device gpu on %d ranks needs NCCL, and this paddle-run was built without it "
                                "(it needs CUDA and MPI when built); run one rank or use --device cpu",
                                pd_dist_size());
    pd_error e = {0};
    if (pd_nccl_load(&e))
      return pd_cli_usage_error(cmd, "--device gpu on %d ranks needs NCCL: %s; run one rank or use --device cpu",
                                pd_dist_size(), e.msg);
    /* plain "gpu": the rank on this node (Open MPI's local rank) modulo the devices */
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int count = pd_gpu_count();
    if (strcmp(v, "gpu") == 0 && lr && count > 0) place->device = atoi(lr) % count;
  }
  pd_gpu_opts go = {.device = place->device,
                    .tf32 = opts[first + PD_OPT_TF32].value != NULL,
                    .no_graph = opts[first + PD_OPT_NO_GRAPH].value != NULL};
  pd_error err = {0};
  if (pd_gpu_open(&go, &err)) return pd_cli_fail(&err);
  return 0;
}

double pd_cli_t_main;

double pd_cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool pd_cli_unique_vars(const char *cmd, const pd_opt *opt) {
  for (int i = 0; i < opt->n_values; i++) {
    const char *a = opt->values[i], *ea = strchr(a, '=');
    size_t la = ea ? (size_t)(ea - a) : strlen(a);
    for (int j = 0; j < i; j++) {
      const char *b = opt->values[j], *eb = strchr(b, '=');
      size_t lb = eb ? (size_t)(eb - b) : strlen(b);
      if (la == lb && memcmp(a, b, la) == 0) {
        pd_cli_usage_error(cmd, "%s binds \"%.*s\" twice (%s and %s); bind each variable once", opt->name, (int)la, a,
                           b, a);
        return false;
      }
    }
  }
  return true;
}

bool pd_cli_empty_dir(const char *path) {
  DIR *d = opendir(path);
  if (!d) return false;
  struct dirent *de;
  bool empty = true;
  while ((de = readdir(d)) != NULL) empty &= strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
  closedir(d);
  return empty;
}
