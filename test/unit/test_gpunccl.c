/* test_gpunccl.c — what of the NCCL path needs no GPU and no NCCL: the
 * deadline poll every NCCL call waits in (a dead peer must end in an error,
 * never a hang), and the loader's search for a library that is not linked
 * (dlsearch.h: the message names what is missing and where it looked). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/dlsearch.h"
#include "dist/gpunccl.h"

typedef struct {
  int calls, done_after; /* done on that call; never when 0 */
  bool fail;
} fake;

static pd_poll_state poll_fake(void *arg, char *why, size_t size) {
  fake *f = arg;
  f->calls++;
  if (f->fail && f->calls == 2) {
    snprintf(why, size, "remote process exited or there was a network error");
    return PD_POLL_FAILED;
  }
  return f->done_after && f->calls >= f->done_after ? PD_POLL_DONE : PD_POLL_PENDING;
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_wait_done(void **state) {
  (void)state;
  fake f = {.done_after = 5};
  pd_error err = {0};
  assert_int_equal(pd_nccl_wait(poll_fake, &f, "the allreduce", 10, &err), PD_OK);
  assert_int_equal(f.calls, 5);
}

static void test_wait_failed(void **state) {
  (void)state;
  fake f = {.fail = true};
  pd_error err = {0};
  assert_int_equal(pd_nccl_wait(poll_fake, &f, "the allreduce", 10, &err), PD_ERR_RUNTIME);
  assert_string_equal(err.msg,
                      "rank 0 of 1: NCCL: the allreduce failed: remote process exited or there was a network error");
}

/* a peer that never answers: the wait ends at the deadline, not later */
static void test_wait_timeout(void **state) {
  (void)state;
  fake f = {0};
  pd_error err = {0};
  double t0 = seconds();
  assert_int_equal(pd_nccl_wait(poll_fake, &f, "the allreduce", 0.7, &err), PD_ERR_RUNTIME);
  double took = seconds() - t0;
  assert_true(took >= 0.7 && took < 5);
  assert_true(f.calls > 10);
  assert_string_equal(err.msg, "rank 0 of 1: NCCL: the allreduce did not complete within 0.7 s: another rank has "
                               "died or hangs (--comm-timeout sets the limit)");
}

static void test_dl_search(void **state) {
  (void)state;
  char why[2048] = "";
  assert_null(pd_dl_search("libpaddle-run-absent.so.7", why, sizeof why));
  assert_non_null(strstr(why, "libpaddle-run-absent.so.7 is not in the library search path (LD_LIBRARY_PATH"));
  assert_non_null(strstr(why, "/usr/local/cuda/lib64"));
  assert_non_null(pd_dl_search("libz.so.1", why, sizeof why)); /* found by the loader's own search */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wait_done),
      cmocka_unit_test(test_wait_failed),
      cmocka_unit_test(test_wait_timeout),
      cmocka_unit_test(test_dl_search),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
