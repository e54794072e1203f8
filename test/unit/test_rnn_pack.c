/* test_rnn_pack.c — ops/rnn_core.c's pd_rnn_pack, the copy of a block of
 * rows into a micro-panel of the packed recurrent product (full panels of
 * 4, 6 and 8 rows go through an 8 x 8 transpose on AVX2): every element
 * lands at dst[k * mr + i], the panel's rows past `rows` and everything
 * past its n columns keep what they held, and columns of src past n are not
 * read (NaN there). Widths with and without a tail of fewer than 8. And
 * pd_rnn_panel_product on a panel of 4 rows (its own 4 x 16 kernel, taken
 * where the batch is not a multiple of BLIS's 6 rows): the same bits as
 * BLIS's micro-kernel on those rows padded to a full panel, beta 0 and 1,
 * 1 to 4 rows, values of every magnitude; pd_rnn_products2's 4 x 32 tile
 * likewise. And pd_rnn_panels' layouts. */
#include "optest.h"

#include <math.h>
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

/* pd_rnn_panels: for batches 1..130, mr 4, 6 and 8, 1 to 8 runs, with and
 * without panels of 4: the panels cover the rows once, in order; a run
 * starts at an even row within 2 of batch c / chunks and its panels stay
 * inside it; a panel is mr rows or 4 (4 only with fours, mr 6, and full);
 * only a run's last panel holds empty rows, and only where no cut of the
 * run into mr and 4 leaves none (fours) or its rows are no multiple of mr. */
static void test_panels(void **state) {
  (void)state;
  const int64_t mrs[] = {4, 6, 8};
  for (size_t a = 0; a < 3; a++)
    for (int64_t batch = 1; batch <= 130; batch++)
      for (int chunks = 1; chunks <= PD_RNN_MAX_CHUNKS && chunks <= (batch < 2 ? 1 : batch / 2); chunks++)
        for (int fours = 0; fours < 2; fours++) {
          pd_rnn_packed pk;
          memset(&pk, 0, sizeof pk);
          pk.uk.mr = mrs[a];
          const bool four_ok = fours && pk.uk.mr == 6;
          pd_rnn_panels(&pk, batch, chunks, four_ok);
          assert_int_equal(pk.chunks, chunks);
          assert_int_equal(pk.chunk[0].p0, 0);
          assert_int_equal(pk.chunk[chunks].p0, pk.npan);
          int64_t next = 0;
          for (int c = 0; c < chunks; c++) {
            const int64_t r0 = pk.chunk[c].r0, r1 = pk.chunk[c + 1].r0, even = batch * c / chunks;
            assert_true(r0 % 2 == 0 && r0 <= even && even - r0 <= 1 && r1 > r0);
            for (int64_t p = pk.chunk[c].p0; p < pk.chunk[c + 1].p0; p++) {
              const int64_t pr0 = pd_rnn_panel_r0(&pk, p), ph = pd_rnn_panel_h(&pk, p);
              assert_int_equal(pr0, next);
              assert_true(ph == pk.uk.mr || (four_ok && ph == 4));
              const bool last = p + 1 == pk.chunk[c + 1].p0, four = ph != pk.uk.mr;
              if ((!last || four) && pr0 + ph > r1)
                fail_msg("batch %lld mr %lld chunks %d fours %d: panel %lld rows %lld + %lld past its run's end %lld",
                         (long long)batch, (long long)pk.uk.mr, chunks, fours, (long long)p, (long long)pr0,
                         (long long)ph, (long long)r1);
              if (last) {
                const int64_t n = r1 - r0;
                bool exact = n % pk.uk.mr == 0;
                for (int64_t k = 0; four_ok && k * 6 <= n; k++) exact |= (n - 6 * k) % 4 == 0;
                assert_true(pr0 + ph == r1 || (!exact && pr0 + ph > r1 && pr0 < r1));
              }
              next = pr0 + ph < r1 ? pr0 + ph : r1;
            }
            assert_int_equal(next, r1);
          }
          assert_int_equal(next, batch);
        }
}

static void test_panel4(void **state) {
  (void)state;
  pd_rnn_packed pk;
  memset(&pk, 0, sizeof pk);
  pd_ukr_float(&pk.uk);
  if (pk.uk.mr != 6 || pk.uk.nr != 16 || !pd_rnn_avx2()) {
    print_message("skipped: BLIS's float tile is %lld x %lld (6 x 16 wanted) or no AVX2\n", (long long)pk.uk.mr,
                  (long long)pk.uk.nr);
    return;
  }
  pd_rnn_panels(&pk, 10, 1, true); /* panel 0: 6 rows, panel 1: 4 */
  assert_int_equal(pk.npan, 2);
  assert_int_equal(pd_rnn_panel_h(&pk, 0), 6);
  assert_int_equal(pd_rnn_panel_h(&pk, 1), 4);
  const int64_t ks[] = {1, 7, 128, 513}, ldc = 21;
  uint64_t seed = 12345;
  for (size_t a = 0; a < sizeof ks / sizeof ks[0]; a++) {
    const int64_t k = ks[a];
    /* aligned_alloc wants a size that is a multiple of the alignment */
    const size_t l4 = (size_t)(4 * k + 31) / 16 * 16, l6 = (size_t)(6 * k + 31) / 16 * 16,
                 lb = (size_t)(16 * k + 31) / 16 * 16;
    float *a4 = aligned_alloc(64, sizeof(float) * l4), *a6 = aligned_alloc(64, sizeof(float) * l6),
          *b = aligned_alloc(64, sizeof(float) * lb), *b2 = aligned_alloc(64, sizeof(float) * lb);
    for (int64_t p = 0; p < k; p++) {
      for (int i = 0; i < 6; i++) { /* magnitudes from 2^-20 to 2^20, both signs */
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        float v = ldexpf((float)((seed >> 40) & 0xffff) / 65536.0f - 0.5f, (int)((seed >> 20) % 41) - 20);
        a6[p * 6 + i] = i < 4 ? v : 0;
        if (i < 4) a4[p * 4 + i] = v;
      }
      for (int j = 0; j < 32; j++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        (j < 16 ? b : b2)[p * 16 + j % 16] =
            ldexpf((float)((seed >> 40) & 0xffff) / 65536.0f - 0.5f, (int)((seed >> 20) % 41) - 20);
      }
    }
    for (int beta = 0; beta <= 1; beta++)
      for (int64_t m = 1; m <= 4; m++) {
        float want[6 * 21], got[6 * 21];
        for (int e = 0; e < 6 * 21; e++) want[e] = got[e] = (float)(e % 13) * 0.37f - 2.0f;
        pd_rnn_panel_product(&pk, 0, m, 16, k, a6, b, (float)beta, want, ldc);
        pd_rnn_panel_product(&pk, 1, m, 16, k, a4, b, (float)beta, got, ldc);
        if (memcmp(want, got, sizeof want))
          fail_msg("k %lld, beta %d, %lld rows: the 4-row kernel differs from BLIS's micro-kernel", (long long)k, beta,
                   (long long)m);
        /* pd_rnn_products2 on the panel of 4 (rows 6..9, the 4 x 32 tile on
         * AVX-512): each B as BLIS's kernel on the padded panel of 6 */
        float want2[10 * 21], got2[10 * 21], want3[10 * 21], got3[10 * 21];
        for (int e = 0; e < 10 * 21; e++) want2[e] = got2[e] = want3[e] = got3[e] = (float)(e % 11) * 0.41f - 1.5f;
        pd_rnn_panel_product(&pk, 0, m, 16, k, a6, b, (float)beta, want2 + 6 * ldc, ldc);
        pd_rnn_panel_product(&pk, 0, m, 16, k, a6, b2, (float)beta, want3 + 6 * ldc, ldc);
        float *pan = aligned_alloc(64, sizeof(float) * (l6 + l4)); /* panel 0 unused, panel 1 = a4 */
        memcpy(pan + l6, a4, sizeof(float) * (size_t)(4 * k));
        pd_rnn_packed two = pk;
        two.as = (int64_t)l6;
        pd_rnn_products2(&two, 1, 2, 6 + m, 16, k, pan + l6 - two.as, b, got2, b2, got3, (float)beta, ldc);
        if (memcmp(want2, got2, sizeof want2) || memcmp(want3, got3, sizeof want3))
          fail_msg("k %lld, beta %d, %lld rows: pd_rnn_products2 differs from BLIS's micro-kernel", (long long)k, beta,
                   (long long)m);
        free(pan);
      }
    free(a4), free(a6), free(b), free(b2);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pack), cmocka_unit_test(test_panels),
                                     cmocka_unit_test(test_panel4)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
