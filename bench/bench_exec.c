/* bench_exec.c — runs a command N times and prints, one line per run, its
 * wall time in seconds and its peak RSS in KiB (ru_maxrss from wait4), so
 * start-up and process-level figures need no shell timing and no GNU time.
 *   bench_exec N STDIN_FILE|- STDOUT_FILE|- -- CMD [ARGS...]
 * A run that exits non-zero stops the benchmark with its status. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 6 || strcmp(argv[4], "--") != 0) {
    fprintf(stderr, "usage: bench_exec N STDIN|- STDOUT|- -- CMD [ARGS...]\n");
    return 2;
  }
  int n = atoi(argv[1]);
  const char *in = argv[2], *out = argv[3];
  for (int i = 0; i < n; i++) {
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      return 1;
    }
    if (pid == 0) {
      if (strcmp(in, "-") != 0) {
        int fd = open(in, O_RDONLY);
        if (fd < 0 || dup2(fd, 0) < 0) _exit(126);
        close(fd);
      }
      if (strcmp(out, "-") != 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0) _exit(126);
        close(fd);
      }
      execvp(argv[5], argv + 5);
      _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
      perror("wait4");
      return 1;
    }
    double t = now() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "bench_exec: %s exited with status %d\n", argv[5],
              WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
      return 1;
    }
    printf("%.6f %ld\n", t, ru.ru_maxrss);
    fflush(stdout);
  }
  return 0;
}
