/* assert.c — what a failed PD_ASSERT does: the one place lib/ prints and
 * ends the process, since a broken invariant is a bug, not an error to return. */
#include "base/assert.h"

#include <stdio.h>
#include <stdlib.h>

void pd_assert_fail(const char *cond, const char *file, int line, const char *func) {
  fprintf(stderr, "paddle-run: internal error: %s:%d: %s: PD_ASSERT(%s) failed\n", file, line, func, cond);
  fflush(stderr);
  abort();
}
