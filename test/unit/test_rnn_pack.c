/* test_rnn_pack.c — ops/rnn_core.c's pd_rnn_pack, the copy of a block of
 * rows into a micro-panel of the packed recurrent product (full panels of
 * 4, 6 and 8 rows go through an 8 x 8 transpose on AVX2): every element
 * lands at dst[k * mr + i], the panel's rows past `rows` and everything
 * past its n columns keep what they held, and columns of src past n are not
 * read (NaN there). Widths with and without a tail of fewer than 8. */
#include "optest.h"

#include <string.h>

#include "rnn_core.h"

static void test_pack(void **state) {
  (void)state;
  const int64_t mrs[] = {1, 4, 6, 8, 16}, ns[] = {0, 1, 7, 8, 9, 16, 23, 128, 515};
  for (size_t a = 0; a < sizeof mrs / sizeof mrs[0]; a++)
    for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
      const int64_t mr = mrs[a], n = ns[b], ld = n + 3, room = (n + 2) * mr;
      float *src = malloc(sizeof *src * (size_t)(mr * ld)), *dst = malloc(sizeof *dst * (size_t)room);
      for (int64_t i = 0; i < mr; i++)
        for (int64_t k = 0; k < ld; k++) src[i * ld + k] = k < n ? (float)(i * 1000 + k) + 0.25f : NAN;
      for (int64_t rows = 1; rows <= mr; rows++) {
        for (int64_t e = 0; e < room; e++) dst[e] = -7.5f;
        pd_rnn_pack(dst, mr, src, ld, rows, n);
        for (int64_t k = 0; k < n + 2; k++)
          for (int64_t i = 0; i < mr; i++) {
            const float want = k < n && i < rows ? src[i * ld + k] : -7.5f, got = dst[k * mr + i];
            if (memcmp(&want, &got, sizeof want))
              fail_msg("mr %lld rows %lld n %lld: dst[%lld * mr + %lld] = %g, want %g", (long long)mr, (long long)rows,
                       (long long)n, (long long)k, (long long)i, got, want);
          }
      }
      free(src), free(dst);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pack)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
