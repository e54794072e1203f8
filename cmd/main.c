/* main.c — paddle-run's entry point: the table of subcommands, global
 * --help and --version, and a suggestion for a mistyped command. Each
 * subcommand lives in cmd/NAME.c and exports `pd_cmd_NAME`. */
#define _GNU_SOURCE /* fopencookie */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpu/blisarch.h"
#include "cli.h"
#include "base/fileutil.h"
#include "dist/gpunccl.h"
#include "gpu/gpurt.h"

extern const pd_command pd_cmd_train, pd_cmd_infer, pd_cmd_check, pd_cmd_desc, pd_cmd_fmt, pd_cmd_ops, pd_cmd_gradcheck,
    pd_cmd_time, pd_cmd_import, pd_cmd_export, pd_cmd_generate, pd_cmd_test, pd_cmd_plot;

static const pd_command *const commands[] = {
    &pd_cmd_train, &pd_cmd_test,      &pd_cmd_plot, &pd_cmd_infer,  &pd_cmd_check,  &pd_cmd_desc,    &pd_cmd_fmt,
    &pd_cmd_ops,   &pd_cmd_gradcheck, &pd_cmd_time, &pd_cmd_import, &pd_cmd_export, &pd_cmd_generate};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void usage(FILE *out) {
  fputs("paddle-run — train and run neural networks described in protobuf text files\n"
        "\n"
        "usage: paddle-run COMMAND [ARGS...]\n"
        "\n"
        "commands:\n",
        out);
  for (int i = 0; i < N_COMMANDS; i++) fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
  fputs("\n"
        "Run `paddle-run COMMAND --help` for a command's options.\n"
        "Exit codes: 0 success, 1 failure while running, 2 bad usage or bad input.\n",
        out);
}

/* Whatever a command wrote to stdout must have reached it (a full disk, a
 * closed pipe, /dev/full): otherwise a message and exit 1, never a cut
 * output with exit 0. */
static int stdout_errno; /* the first error writing stdout, kept */

/* stdout's writes go through here so that the first error is kept: stdio
 * remembers only that one happened, and a later flush with nothing left to
 * write sets no errno, so the reason (a full disk) would be lost. */
static ssize_t stdout_write(void *cookie, const char *buf, size_t n) {
  (void)cookie;
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(STDOUT_FILENO, buf + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (!stdout_errno) stdout_errno = w < 0 ? errno : EIO;
      return done ? (ssize_t)done : -1;
    }
    done += (size_t)w;
  }
  return (ssize_t)n;
}

static void keep_stdout_errors(void) {
  cookie_io_functions_t io = {.write = stdout_write};
  FILE *f = fopencookie(NULL, "w", io);
  if (!f) return; /* stdio's own stream still reports that a write failed */
  setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
  stdout = f;
}

static int check_stdout(int code) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout) && !stdout_errno) return code;
  int e = stdout_errno ? stdout_errno : errno;
  fprintf(stderr, "paddle-run: cannot write standard output: %s\n", e ? strerror(e) : "write error");
  return code ? code : 1;
}

int main(int argc, char **argv) {
  pd_cli_t_main = pd_cli_now();
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  /* past `ulimit -f`, a write should fail with EFBIG and a message, not kill us */
  signal(SIGXFSZ, SIG_IGN);
  pd_input_tracking(true); /* no output of this run may replace one of its inputs */
  keep_stdout_errors();
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
    usage(stdout);
    return check_stdout(0);
  }
  if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
    printf("paddle-run %s\n", PD_VERSION);
    const char *kernels = pd_blis_arch(); /* first: it makes the choice that _how describes */
    printf("blas: BLIS %s, kernels '%s' (%s)\n", pd_blis_version(), kernels, pd_blis_arch_how());
    if (pd_gpu_built()) /* cuBLAS and NCCL are named, never loaded here (gpurt.h, gpunccl.h) */
      printf("gpu: CUDA %s (sm_90 and PTX), cuBLAS%s loaded when a GPU is used\n", pd_gpu_cuda_version(),
             pd_nccl_built() ? " and NCCL" : "");
    else
      printf("gpu: none (built without CUDA)\n");
    return check_stdout(0);
  }
  for (int i = 0; i < N_COMMANDS; i++)
    if (strcmp(name, commands[i]->name) == 0) return check_stdout(commands[i]->run(argc - 1, argv + 1));
  const char *names[N_COMMANDS];
  for (int i = 0; i < N_COMMANDS; i++) names[i] = commands[i]->name;
  const char *sug = pd_suggest(name, names, N_COMMANDS);
  if (name[0] == '-')
    fprintf(stderr, "paddle-run: unknown option %s; see `paddle-run --help`\n", name);
  else if (sug)
    fprintf(stderr, "paddle-run: unknown command \"%s\" (did you mean \"%s\"?)\n", name, sug);
  else
    fprintf(stderr, "paddle-run: unknown command \"%s\"; see `paddle-run --help`\n", name);
  return 2;
}
