/* test_op_sequence.c — the sequence helpers on X [batch, time, ...] with per-row lengths L:
 *   sequence_mask: Mask[r, t] = (t < L_r), time from X or maxlen, in each dtype;
 *   sequence_last: Out[r] = X[r, L_r - 1] (reverse: X[r, 0]; bidirectional: the last dim's first
 *     half from step L_r - 1, its second from step 0), dX = dOut at those steps;
 *   sequence_pool: mean, max, sum over t < L_r; max's gradient to the first maximum (ties, NaN);
 *   sequence_mean: sum over t < L_r of every row / (sum L * inner), dX = dOut / count there;
 *   softmax_with_cross_entropy over Logits [batch, time, C]: each step a row, as the 2-D op on
 *     the rows, a label out of range named by row and position.
 * Each checked against a float64 loop (float32 and float64) and against finite differences;
 * lengths 0 and beyond time are errors naming the row (0 allowed by mask and mean). */
#include "optest.h"

static const pd_dtype dts[] = {PD_F32, PD_F64};

static pd_tensor *lengths(int64_t n, const int64_t *v) {
  pd_tensor *l = ot_tensor(PD_I64, 1, (int64_t[]){n});
  memcpy(PD_DATA(l, int64_t), v, sizeof(int64_t) * (size_t)n);
  return l;
}

/* ---- sequence_mask ---- */

static void test_mask(void **state) {
  (void)state;
  const int64_t lv[] = {3, 0, 5, 1};
  pd_tensor *len = lengths(4, lv), *x = ot_rand(PD_F32, 3, (int64_t[]){4, 5, 2}, 1, -1, 1, 0);
  const char *types[] = {"float32", "float64", "int32", "int64", "uint8"};
  const pd_dtype want_dt[] = {PD_F32, PD_F64, PD_I32, PD_I64, PD_U8};
  double want[20];
  for (int r = 0; r < 4; r++)
    for (int t = 0; t < 5; t++) want[r * 5 + t] = t < lv[r];
  for (int d = 0; d < 5; d++)
    for (int by_x = 0; by_x < 2; by_x++) {
      char dtype[32];
      snprintf(dtype, sizeof dtype, "s: \"%s\"", types[d]);
      const char *attrs[] = {"dtype", dtype, "maxlen", by_x ? "i: 0" : "i: 5", NULL};
      pd_tensor *m = ot_out();
      ot_run("sequence_mask", attrs, (pd_tensor *[]){len, by_x ? x : NULL}, NULL, (pd_tensor *[]){m}, NULL);
      ot_assert_dims(m, 4, 5);
      assert_int_equal(m->dtype, want_dt[d]);
      ot_assert_close(m, want, 20, 0);
      ot_free(m);
    }
  /* a length beyond time */
  PD_DATA(len, int64_t)[2] = 6;
  pd_tensor *m = ot_out();
  const char *msg = ot_run_fail("sequence_mask", NULL, (pd_tensor *[]){len, x}, NULL, (pd_tensor *[]){m}, NULL);
  assert_string_equal(msg, "op #0 \"sequence_mask\": Lengths \"\" row 2 is 6; a length is from 0 to the 5 steps of X");
  ot_free(m), ot_free(len), ot_free(x);
}

static void test_mask_shapes(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *len = ot_shaped(PD_I64, 1, (int64_t[]){-1}), *x = ot_shaped(PD_I64, 2, (int64_t[]){-1, 7});
  pd_tensor *m = ot_out();
  assert_int_equal(ot_infer("sequence_mask", NULL, (pd_tensor *[]){len, x}, NULL, (pd_tensor *[]){m}, NULL, NULL),
                   PD_OK);
  ot_assert_dims(m, -1, 7);
  assert_int_equal(ot_infer("sequence_mask", NULL, (pd_tensor *[]){len, NULL}, NULL, (pd_tensor *[]){m}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "give a reference sequence X or maxlen"));
  const char *six[] = {"maxlen", "i: 6", NULL};
  assert_int_equal(ot_infer("sequence_mask", six, (pd_tensor *[]){len, x}, NULL, (pd_tensor *[]){m}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "maxlen is 6 but X \"\" has 7 steps"));
  ot_free(len);
  len = ot_shaped(PD_I32, 1, (int64_t[]){-1});
  assert_int_equal(ot_infer("sequence_mask", NULL, (pd_tensor *[]){len, x}, NULL, (pd_tensor *[]){m}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "lengths are int64 [batch]"));
  ot_free(len), ot_free(x), ot_free(m);
}

/* ---- sequence_last ---- */

/* X [4, 5, 2, 4]: the step each element of a row comes from. */
static int64_t last_step(const char *dir, int64_t len, int64_t i) {
  if (strcmp(dir, "reverse") == 0) return 0;
  if (strcmp(dir, "bidirectional") == 0 && i % 4 >= 2) return 0;
  return len - 1;
}

static void test_last(void **state) {
  (void)state;
  const char *dirs[] = {"forward", "reverse", "bidirectional"};
  const int64_t lv[] = {5, 2, 1, 3}, full[] = {5, 5, 5, 5};
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < 3; k++)
      for (int given = 0; given < 2; given++) {
        pd_tensor *x = ot_rand(dts[d], 4, (int64_t[]){4, 5, 2, 4}, 3, -1, 1, 0), *len = lengths(4, lv);
        pd_tensor *out = ot_out();
        char dir[32];
        snprintf(dir, sizeof dir, "s: \"%s\"", dirs[k]);
        const char *attrs[] = {"direction", dir, NULL};
        ot_run("sequence_last", attrs, (pd_tensor *[]){x, given ? len : NULL}, NULL, (pd_tensor *[]){out}, NULL);
        ot_assert_dims(out, 4, 2, 4);
        double want[32];
        for (int64_t r = 0; r < 4; r++)
          for (int64_t i = 0; i < 8; i++)
            want[r * 8 + i] = pd_tensor_get(x, (r * 5 + last_step(dirs[k], given ? lv[r] : full[r], i)) * 8 + i);
        ot_assert_close(out, want, 32, 0);
        if (dts[d] == PD_F64) {
          const bool check[] = {true, false};
          ot_gradcheck_ex("sequence_last", attrs, (pd_tensor *[]){x, given ? len : NULL}, 2, 1, check, NULL, 1e-6);
        }
        ot_free(x), ot_free(len), ot_free(out);
      }
}

static void test_last_bad(void **state) {
  (void)state;
  const int64_t lv[] = {5, 0, 1};
  pd_tensor *x = ot_rand(PD_F32, 3, (int64_t[]){3, 5, 2}, 3, -1, 1, 0), *len = lengths(3, lv), *out = ot_out();
  const char *msg = ot_run_fail("sequence_last", NULL, (pd_tensor *[]){x, len}, NULL, (pd_tensor *[]){out}, NULL);
  assert_string_equal(msg, "op #0 \"sequence_last\": Lengths \"\" row 1 is 0; a length is from 1 to the 5 steps of X");
  PD_DATA(len, int64_t)[1] = 6;
  msg = ot_run_fail("sequence_last", NULL, (pd_tensor *[]){x, len}, NULL, (pd_tensor *[]){out}, NULL);
  assert_string_equal(msg, "op #0 \"sequence_last\": Lengths \"\" row 1 is 6; a length is from 1 to the 5 steps of X");
  const char *bidir[] = {"direction", "s: \"bidirectional\"", NULL};
  ot_free(x);
  x = ot_shaped(PD_F32, 3, (int64_t[]){-1, 5, 3});
  assert_int_equal(ot_infer("sequence_last", bidir, (pd_tensor *[]){x, NULL}, NULL, (pd_tensor *[]){out}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "a forward and a reverse half"));
  ot_free(x), ot_free(len), ot_free(out);
}

/* ---- sequence_pool ---- */

static void test_pool(void **state) {
  (void)state;
  const char *types[] = {"mean", "max", "sum"};
  const int64_t lv[] = {5, 2, 1, 3, 4}, full[] = {5, 5, 5, 5, 5};
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < 3; k++)
      for (int given = 0; given < 2; given++) {
        pd_tensor *x = ot_rand(dts[d], 3, (int64_t[]){5, 5, 3}, 5, -2, 2, 0), *len = lengths(5, lv);
        pd_tensor *out = ot_out();
        char type[32];
        snprintf(type, sizeof type, "s: \"%s\"", types[k]);
        const char *attrs[] = {"pooling_type", type, NULL};
        ot_run("sequence_pool", attrs, (pd_tensor *[]){x, given ? len : NULL}, NULL, (pd_tensor *[]){out}, NULL);
        ot_assert_dims(out, 5, 3);
        double want[15];
        for (int64_t r = 0; r < 5; r++)
          for (int64_t i = 0; i < 3; i++) {
            int64_t n = given ? lv[r] : full[r];
            double acc = k == 1 ? -INFINITY : 0;
            for (int64_t t = 0; t < n; t++) {
              double v = pd_tensor_get(x, (r * 5 + t) * 3 + i);
              acc = k == 1 ? fmax(acc, v) : acc + v;
            }
            want[r * 3 + i] = k == 0 ? acc / (double)n : acc;
          }
        ot_assert_close(out, want, 15, dts[d] == PD_F32 ? 1e-6 : 1e-15);
        if (dts[d] == PD_F64) {
          const bool check[] = {true, false};
          ot_gradcheck_ex("sequence_pool", attrs, (pd_tensor *[]){x, given ? len : NULL}, 2, 1, check, NULL, 1e-6);
        }
        ot_free(x), ot_free(len), ot_free(out);
      }
}

/* max over one row of 5 steps, length 4: ties go to the first maximum; a NaN among the valid
 * steps gives NaN and takes the gradient (the first NaN); one past the length changes nothing. */
static void test_pool_max_ties_nan(void **state) {
  (void)state;
  const char *attrs[] = {"pooling_type", "s: \"max\"", NULL};
  const double rows[][5] = {
      {1, 3, 2, 3, 9},     /* tie at steps 1 and 3; step 4 is padding */
      {1, NAN, 2, NAN, 0}, /* the first NaN, step 1 */
      {1, 2, 3, 0.5, NAN}, /* NaN in the padding: max 3 at step 2 */
  };
  const double want_out[] = {3, NAN, 3};
  const int want_step[] = {1, 1, 2};
  for (int d = 0; d < 2; d++)
    for (int c = 0; c < 3; c++) {
      pd_tensor *x = ot_tensor(dts[d], 3, (int64_t[]){1, 5, 1}), *len = lengths(1, (int64_t[]){4}), *out = ot_out();
      for (int t = 0; t < 5; t++) pd_tensor_set(x, t, rows[c][t]);
      ot_run("sequence_pool", attrs, (pd_tensor *[]){x, len}, NULL, (pd_tensor *[]){out}, NULL);
      ot_assert_close(out, &want_out[c], 1, 0);
      pd_tensor *dy = ot_tensor(dts[d], 2, (int64_t[]){1, 1}), *dx = ot_out();
      pd_tensor_set(dy, 0, 2.5);
      ot_run("sequence_pool_grad", attrs, (pd_tensor *[]){x, len, out, dy}, NULL, (pd_tensor *[]){dx, NULL}, NULL);
      for (int t = 0; t < 5; t++) assert_true(pd_tensor_get(dx, t) == (t == want_step[c] ? 2.5 : 0));
      ot_free(x), ot_free(len), ot_free(out), ot_free(dy), ot_free(dx);
    }
}

/* ---- sequence_mean ---- */

static void test_mean(void **state) {
  (void)state;
  const int64_t lv[] = {4, 0, 1, 3};
  for (int d = 0; d < 2; d++)
    for (int given = 0; given < 2; given++)
      for (int inner = 1; inner <= 2; inner++) {
        pd_tensor *x = ot_rand(dts[d], 3, (int64_t[]){4, 4, inner}, 9, -3, 3, 0), *len = lengths(4, lv);
        pd_tensor *out = ot_out();
        ot_run("sequence_mean", NULL, (pd_tensor *[]){x, given ? len : NULL}, NULL, (pd_tensor *[]){out}, NULL);
        ot_assert_dims(out, 1);
        double s = 0, n = 0;
        for (int64_t r = 0; r < 4; r++)
          for (int64_t t = 0; t < (given ? lv[r] : 4); t++)
            for (int64_t i = 0; i < inner; i++) s += pd_tensor_get(x, (r * 4 + t) * inner + i), n++;
        double want = s / n;
        ot_assert_close(out, &want, 1, dts[d] == PD_F32 ? 1e-6 : 1e-15);
        if (dts[d] == PD_F64) {
          const bool check[] = {true, false};
          ot_gradcheck_ex("sequence_mean", NULL, (pd_tensor *[]){x, given ? len : NULL}, 2, 1, check, NULL, 1e-6);
        }
        ot_free(x), ot_free(len), ot_free(out);
      }
  /* padding may hold anything, NaN included */
  pd_tensor *x = ot_tensor(PD_F64, 2, (int64_t[]){2, 3}), *len = lengths(2, (int64_t[]){2, 1}), *out = ot_out();
  const double v[] = {1, 2, NAN, 6, INFINITY, NAN};
  for (int i = 0; i < 6; i++) pd_tensor_set(x, i, v[i]);
  ot_run("sequence_mean", NULL, (pd_tensor *[]){x, len}, NULL, (pd_tensor *[]){out}, NULL);
  assert_true(pd_tensor_get(out, 0) == 3);
  /* no valid step at all */
  memset(PD_DATA(len, int64_t), 0, 2 * sizeof(int64_t));
  const char *msg = ot_run_fail("sequence_mean", NULL, (pd_tensor *[]){x, len}, NULL, (pd_tensor *[]){out}, NULL);
  assert_string_equal(msg, "op #0 \"sequence_mean\": no valid step to average: every length is 0");
  ot_free(x), ot_free(len), ot_free(out);
}

/* ---- softmax_with_cross_entropy over [batch, time, C] ---- */

static void test_swce_steps(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++)
    for (int with_one = 0; with_one < 2; with_one++) {
      pd_tensor *z = ot_rand(dts[d], 3, (int64_t[]){3, 4, 6}, 13, -4, 4, 0);
      pd_tensor *l = ot_tensor(PD_I64, 2 + with_one, (int64_t[]){3, 4, 1}),
                *l2 = ot_tensor(PD_I64, 2, (int64_t[]){12, 1});
      for (int i = 0; i < 12; i++) PD_DATA(l, int64_t)[i] = PD_DATA(l2, int64_t)[i] = (i * 7) % 6;
      pd_tensor *z2 = ot_tensor(dts[d], 2, (int64_t[]){12, 6});
      memcpy(pd_tensor_data(z2), pd_tensor_data(z), pd_tensor_bytes(z));
      pd_tensor *sm = ot_out(), *loss = ot_out(), *sm2 = ot_out(), *loss2 = ot_out();
      ot_run("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z, l}, NULL, (pd_tensor *[]){sm, loss}, NULL);
      ot_run("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z2, l2}, NULL, (pd_tensor *[]){sm2, loss2}, NULL);
      ot_assert_dims(sm, 3, 4, 6);
      ot_assert_dims(loss, 3, 4, 1);
      assert_memory_equal(pd_tensor_data(sm), pd_tensor_data(sm2), pd_tensor_bytes(sm2));
      assert_memory_equal(pd_tensor_data(loss), pd_tensor_data(loss2), pd_tensor_bytes(loss2));
      if (dts[d] == PD_F64) {
        const bool check[] = {true, false};
        const int loss_only[] = {0, 1};
        ot_gradcheck_ex("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z, l}, 2, 2, check, loss_only, 1e-6);
      }
      /* out of range: row 2, step 1 of the batch */
      PD_DATA(l, int64_t)[9] = 6;
      const char *msg =
          ot_run_fail("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z, l}, NULL, (pd_tensor *[]){sm, loss}, NULL);
      assert_string_equal(msg,
                          "op #0 \"softmax_with_cross_entropy\": label 6 at row 2, position 1 is out of range [0, 6)");
      ot_free(z), ot_free(l), ot_free(z2), ot_free(l2), ot_free(sm), ot_free(loss), ot_free(sm2), ot_free(loss2);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mask),     cmocka_unit_test(test_mask_shapes), cmocka_unit_test(test_last),
      cmocka_unit_test(test_last_bad), cmocka_unit_test(test_pool),        cmocka_unit_test(test_pool_max_ties_nan),
      cmocka_unit_test(test_mean),     cmocka_unit_test(test_swce_steps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
