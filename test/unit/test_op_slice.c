/* test_op_slice.c — slice: Out[q] = X[first + q * step] per sliced axis.
 * Constant bounds against the elements ONNX Slice's rules take (negative
 * bounds from the end, out-of-range bounds clamped, negative steps), in
 * float32 and float64, on a vector (each case's indices written out) and
 * on a 3-D X with two axes sliced (a loop reference); starts read at run
 * time (input Starts) with windows forward and backward, and the error
 * when a window leaves its dim; gradients by finite differences in float64
 * for both forms; NaN reaches Out; the load-time errors. */
#include "optest.h"

#define END "9223372036854775807"

static const char *ints(char *buf, size_t size, const int64_t *v, int n) {
  int at = snprintf(buf, size, "ints: [");
  for (int i = 0; i < n; i++) at += snprintf(buf + at, size - (size_t)at, "%s%lld", i ? ", " : "", (long long)v[i]);
  snprintf(buf + at, size - (size_t)at, "]");
  return buf;
}

static pd_tensor *starts_of(int n, const int64_t *v) {
  pd_tensor *s = ot_tensor(PD_I64, 1, (int64_t[]){n});
  for (int i = 0; i < n; i++) PD_DATA(s, int64_t)[i] = v[i];
  return s;
}

/* X = 0, 1, ..., 9 sliced by one (start, end, step): Out holds the indices
 * taken, as ONNX's rules give them. */
static void test_vector(void **state) {
  (void)state;
  const struct {
    const char *start, *end, *step;
    int n;
    int64_t want[10];
  } cases[] = {
      {"2", "7", "1", 5, {2, 3, 4, 5, 6}},
      {"-3", END, "1", 3, {7, 8, 9}},
      {"8", "1", "-3", 3, {8, 5, 2}},
      {"1000", "2000", "1", 0, {0}},     /* start beyond the end: nothing */
      {"-1000", "3", "1", 3, {0, 1, 2}}, /* start before the first: 0 */
      {"-1", "-1000", "-1", 10, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
      {"-100", "-1000", "-1", 1, {0}}, /* backwards, the start is clamped to 0, the end to -1 */
      {"1000", "5", "-2", 2, {9, 7}},  /* backwards from beyond: from the last */
      {"0", "10", "4", 3, {0, 4, 8}},
      {"3", "3", "1", 0, {0}},
  };
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    pd_tensor *x = ot_tensor(dt, 1, (int64_t[]){10});
    for (int i = 0; i < 10; i++) pd_tensor_set(x, i, i);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      char sb[64], eb[64], pb[64];
      snprintf(sb, sizeof sb, "ints: [%s]", cases[c].start);
      snprintf(eb, sizeof eb, "ints: [%s]", cases[c].end);
      snprintf(pb, sizeof pb, "ints: [%s]", cases[c].step);
      const char *attrs[] = {"starts", sb, "ends", eb, "steps", pb, NULL};
      pd_tensor *y = ot_out();
      ot_run("slice", attrs, (pd_tensor *[]){x, NULL}, NULL, (pd_tensor *[]){y}, NULL);
      if (y->ndim != 1 || y->dims[0] != cases[c].n)
        fail_msg("case %zu (%s:%s:%s): %lld elements, want %d", c, cases[c].start, cases[c].end, cases[c].step,
                 (long long)y->dims[0], cases[c].n);
      for (int i = 0; i < cases[c].n; i++)
        if (pd_tensor_get(y, i) != (double)cases[c].want[i])
          fail_msg("case %zu: Out[%d] = %g, want %lld", c, i, pd_tensor_get(y, i), (long long)cases[c].want[i]);
      ot_free(y);
    }
    ot_free(x);
  }
}

/* X [3, 4, 5]; along dim a, Out's q reads first[a] + q * step[a]. */
static void check_3d(pd_dtype dt, const char *const *attrs, pd_tensor *starts, const int64_t *first,
                     const int64_t *step, const int64_t *out) {
  pd_tensor *x = ot_rand(dt, 3, (int64_t[]){3, 4, 5}, 7, -2, 2, 0), *y = ot_out();
  ot_run("slice", attrs, (pd_tensor *[]){x, starts}, NULL, (pd_tensor *[]){y}, NULL);
  ot_assert_dims(y, out[0], out[1], out[2]);
  int64_t n = out[0] * out[1] * out[2];
  double *r = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t i = 0, o = 0; i < out[0]; i++)
    for (int64_t j = 0; j < out[1]; j++)
      for (int64_t k = 0; k < out[2]; k++, o++)
        r[o] = pd_tensor_get(x, ((first[0] + i * step[0]) * 4 + first[1] + j * step[1]) * 5 + first[2] + k * step[2]);
  ot_assert_close(y, r, n, 0); /* copies: exact */
  free(r);
  ot_free(x), ot_free(y);
}

static void test_constant_bounds(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    /* X[1:3, :, 1::2] written as axes [2, 0] */
    const char *a1[] = {"axes",  "ints: [2, 0]", "starts", "ints: [-4, 1]", "ends", "ints: [" END ", 3]",
                        "steps", "ints: [2, 1]", NULL};
    check_3d(dt, a1, NULL, (int64_t[]){1, 0, 1}, (int64_t[]){1, 1, 2}, (int64_t[]){2, 4, 2});
    /* X[::-1, 3:0:-2] (axes left out: 0, 1) */
    const char *a2[] = {"starts", "ints: [-1, 3]",  "ends", "ints: [-9223372036854775807, 0]",
                        "steps",  "ints: [-1, -2]", NULL};
    check_3d(dt, a2, NULL, (int64_t[]){2, 3, 0}, (int64_t[]){-1, -2, 1}, (int64_t[]){3, 2, 5});
    /* an empty slice along dim 1 */
    const char *a3[] = {"axes", "ints: [-2]", "starts", "ints: [2]", "ends", "ints: [1]", NULL};
    check_3d(dt, a3, NULL, (int64_t[]){0, 2, 0}, (int64_t[]){1, 1, 1}, (int64_t[]){3, 0, 5});
  }
}

static void test_run_time_starts(void **state) {
  (void)state;
  const struct {
    int64_t start, size, step, first;
  } cases[] = {
      {2, 3, 1, 2},  /* X[:, :, 2:5] */
      {3, 2, 1, 3},  /* X[:, :, 3:5] */
      {4, 3, -2, 4}, /* X[:, :, 4, 2, 0] */
      {0, 5, 1, 0},  /* the whole dim */
      {5, 0, 1, 5},  /* empty, at the end */
  };
  char zb[64], pb[64];
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    pd_tensor *s = starts_of(1, &cases[c].start);
    const char *attrs[] = {"axes",  "ints: [2]",
                           "sizes", ints(zb, sizeof zb, &cases[c].size, 1),
                           "steps", ints(pb, sizeof pb, &cases[c].step, 1),
                           NULL};
    check_3d(PD_F32, attrs, s, (int64_t[]){0, 0, cases[c].first}, (int64_t[]){1, 1, cases[c].step},
             (int64_t[]){3, 4, cases[c].size});
    ot_free(s);
  }
  /* two axes at once: X[1:3, 2:3, :] */
  pd_tensor *s = starts_of(2, (int64_t[]){1, 2});
  const char *two[] = {"axes", "ints: [0, 1]", "sizes", "ints: [2, 1]", NULL};
  check_3d(PD_F64, two, s, (int64_t[]){1, 2, 0}, (int64_t[]){1, 1, 1}, (int64_t[]){2, 1, 5});
  ot_free(s);
  /* windows that leave the dim (5): the run fails naming the entry */
  const struct {
    int64_t start, size, step;
    const char *want;
  } bad[] = {
      {3, 3, 1, "Starts \"\" entry 0 is 3: a window of 3 along dim 2 of X (of 5) does not fit there"},
      {-6, 1, 1, "entry 0 is -6: a window of 1 along dim 2"},
      {-1, 1, 1, "entry 0 is -1: a window of 1 along dim 2"}, /* no start from the end */
      {5, 1, 1, "entry 0 is 5: a window of 1 along dim 2"},
      {1, 2, -2, "entry 0 is 1: a window of 2 along dim 2"},
      {6, 0, 1, "entry 0 is 6: a window of 0"},
  };
  for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
    pd_tensor *x = ot_rand(PD_F32, 3, (int64_t[]){3, 4, 5}, 7, -2, 2, 0), *y = ot_out(),
              *st = starts_of(1, &bad[c].start);
    const char *attrs[] = {"axes",  "ints: [2]",
                           "sizes", ints(zb, sizeof zb, &bad[c].size, 1),
                           "steps", ints(pb, sizeof pb, &bad[c].step, 1),
                           NULL};
    const char *msg = ot_run_fail("slice", attrs, (pd_tensor *[]){x, st}, NULL, (pd_tensor *[]){y}, NULL);
    if (!strstr(msg, bad[c].want)) fail_msg("case %zu: %s", c, msg);
    ot_free(x), ot_free(y), ot_free(st);
  }
}

static void test_gradients(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F64, 3, (int64_t[]){3, 4, 5}, 11, -2, 2, 0);
  const char *a1[] = {"axes",  "ints: [2, 0]",  "starts", "ints: [-4, 2]", "ends", "ints: [" END ", 0]",
                      "steps", "ints: [2, -1]", NULL};
  ot_gradcheck("slice", a1, (pd_tensor *[]){x, NULL}, 2, 1);
  pd_tensor *s = starts_of(2, (int64_t[]){3, 1});
  const char *a2[] = {"axes", "ints: [1, 2]", "sizes", "ints: [2, 3]", "steps", "ints: [-2, 1]", NULL};
  ot_gradcheck_ex("slice", a2, (pd_tensor *[]){x, s}, 2, 1, (const bool[]){true, false}, NULL, 1e-6);
  ot_free(x), ot_free(s);
}

static void test_nan(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){2, 6}, 4, -1, 1, 0), *y = ot_out();
  pd_tensor_set(x, 9, NAN); /* row 1, column 3 */
  const char *attrs[] = {"axes", "ints: [1]", "starts", "ints: [1]", "ends", "ints: [5]", "steps", "ints: [2]", NULL};
  ot_run("slice", attrs, (pd_tensor *[]){x, NULL}, NULL, (pd_tensor *[]){y}, NULL);
  ot_assert_dims(y, 2, 2);
  for (int i = 0; i < 4; i++)
    if (isnan(pd_tensor_get(y, i)) != (i == 3)) fail_msg("Out[%d] = %g", i, pd_tensor_get(y, i));
  ot_free(x), ot_free(y);
}

static void test_errors(void **state) {
  (void)state;
  pd_tensor *x = ot_shaped(PD_F32, 3, (int64_t[]){-1, 4, 5}), *y = ot_out();
  pd_tensor *s1 = ot_shaped(PD_I64, 1, (int64_t[]){1}), *s32 = ot_shaped(PD_I32, 1, (int64_t[]){1});
  pd_tensor *sb = ot_shaped(PD_I64, 1, (int64_t[]){-1});
  const struct {
    const char *axes, *starts, *ends, *steps, *sizes;
    pd_tensor *s;
    const char *want;
  } bad[] = {
      {"[1]", "[0]", "[]", "[]", "[]", NULL, "attributes \"starts\" and \"ends\" need one entry per axis, got 1 and 0"},
      {"[]", "[]", "[]", "[]", "[]", NULL, "attributes \"starts\" and \"ends\" need one entry per axis, got 0 and 0"},
      {"[1, 2]", "[0]", "[1]", "[]", "[]", NULL, "1 axes sliced, but \"axes\" has 2 entries and \"steps\" 0"},
      {"[3]", "[0]", "[1]", "[]", "[]", NULL, "axis 3 is not a dim of X (shape [-1, 4, 5])"},
      {"[1, -2]", "[0, 0]", "[1, 1]", "[]", "[]", NULL, "axis 1 is sliced twice"},
      {"[1]", "[0]", "[1]", "[0]", "[]", NULL, "step 0 along axis 1: a step is not 0"},
      {"[0]", "[1]", "[" END "]", "[]", "[]", NULL,
       "dim 0 of X (shape [-1, 4, 5]) follows the batch (-1 at load): a slice keeps it whole"},
      {"[1]", "[0]", "[1]", "[]", "[1]", NULL, "attribute \"sizes\" goes with input Starts"},
      {"[1]", "[]", "[]", "[]", "[]", s1, "with input Starts, attribute \"sizes\" (elements per axis) is required"},
      {"[1]", "[0]", "[1]", "[]", "[1]", s1, "with input Starts the window is Starts and sizes"},
      {"[1]", "[]", "[]", "[]", "[1]", s32, "it holds one int64 start per axis sliced"},
      {"[1]", "[]", "[]", "[]", "[1]", sb, "it holds one int64 start per axis sliced"},
      {"[1, 2]", "[]", "[]", "[]", "[1, 1]", s1, "it holds one int64 start per axis sliced"},
      {"[1]", "[]", "[]", "[2]", "[3]", s1, "a window of 3 elements (step 2) along axis 1 does not fit in X"},
      {"[0]", "[]", "[]", "[]", "[1]", s1, "dim 0 of X (shape [-1, 4, 5]) follows the batch"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char a[5][64];
    snprintf(a[0], 64, "ints: %s", bad[i].axes), snprintf(a[1], 64, "ints: %s", bad[i].starts);
    snprintf(a[2], 64, "ints: %s", bad[i].ends), snprintf(a[3], 64, "ints: %s", bad[i].steps);
    snprintf(a[4], 64, "ints: %s", bad[i].sizes);
    const char *attrs[] = {"axes", a[0], "starts", a[1], "ends", a[2], "steps", a[3], "sizes", a[4], NULL};
    const char *msg;
    assert_int_equal(ot_infer("slice", attrs, (pd_tensor *[]){x, bad[i].s}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                     PD_ERR_INPUT);
    if (!strstr(msg, bad[i].want)) fail_msg("case %zu: %s", i, msg);
  }
  /* the batch kept whole (ONNX's 0 to INT_MAX), the others sliced */
  const char *ok[] = {"axes", "ints: [0, 2]", "starts", "ints: [0, 1]", "ends", "ints: [2147483647, -1]", NULL};
  const char *msg;
  assert_int_equal(ot_infer("slice", ok, (pd_tensor *[]){x, NULL}, NULL, (pd_tensor *[]){y}, NULL, &msg), PD_OK);
  ot_assert_dims(y, -1, 4, 3);
  ot_free(x), ot_free(y), ot_free(s1), ot_free(s32), ot_free(sb);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vector),
      cmocka_unit_test(test_constant_bounds),
      cmocka_unit_test(test_run_time_starts),
      cmocka_unit_test(test_gradients),
      cmocka_unit_test(test_nan),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
