/* test_assert.c — PD_ASSERT (lib/base/assert.h): a true condition costs
 * nothing and is evaluated once; a false one prints the condition, file,
 * line and function to stderr and aborts (checked in a child process). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/assert.h"

static void test_true_passes_once(void **state) {
  (void)state;
  int n = 0;
  PD_ASSERT(++n == 1);
  assert_int_equal(n, 1);
}

static void failing(void) {
  int two = 2;
  PD_ASSERT(two + two == 5);
}
enum { FAILING_LINE = __LINE__ - 2 }; /* the PD_ASSERT's */

static void test_false_aborts_naming_it(void **state) {
  (void)state;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    signal(SIGABRT, SIG_DFL);
    failing();
    _exit(0); /* not reached */
  }
  close(fds[1]);
  char buf[512];
  ssize_t n = 0, r;
  while ((r = read(fds[0], buf + n, sizeof buf - 1 - (size_t)n)) > 0) n += r;
  buf[n] = '\0';
  close(fds[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGABRT);
  char want[256];
  snprintf(want, sizeof want, "paddle-run: internal error: %s:%d: failing: PD_ASSERT(two + two == 5) failed\n",
           __FILE__, FAILING_LINE);
  assert_string_equal(buf, want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_true_passes_once),
      cmocka_unit_test(test_false_aborts_naming_it),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
