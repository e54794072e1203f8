/* test_op_elementwise_add.c — elementwise_add: Out[i] = X[i] + Y[j(i)], Out
 * shaped like X, where Y's dim d lines up with X's dim axis + d (axis -1:
 * axis = rank(X) - rank(Y)) and j(i) takes index 0 along Y's size-1 dims.
 * Checked against a float64 loop over multi-indices in float32 and float64:
 * bias rows of 1, 3, 17, 129, axis 0, axis 1, trailing dims, size-1 dims;
 * load-time shapes with -1; error messages; gradients (dY sums over the
 * repeated dims) by finite differences. */
#include "optest.h"

static void expect_dims(const pd_tensor *t, int ndim, const int64_t *dims) {
  char a[128], b[128];
  if (!pd_dims_equal(t->ndim, t->dims, ndim, dims))
    fail_msg("expected shape %s, got %s", pd_dims_str(ndim, dims, a, sizeof a),
             pd_dims_str(t->ndim, t->dims, b, sizeof b));
}

/* The reference: for each flat index of X, its multi-index, then Y's flat
 * index from the dims Y covers (0 where Y's dim is 1). */
static int64_t y_index(int64_t i, const pd_tensor *x, const pd_tensor *y, int axis) {
  int64_t idx[PD_MAX_DIMS], yi = 0;
  for (int d = x->ndim - 1; d >= 0; d--) {
    idx[d] = i % x->dims[d];
    i /= x->dims[d];
  }
  for (int d = 0; d < y->ndim; d++) yi = yi * y->dims[d] + (y->dims[d] == 1 ? 0 : idx[axis + d]);
  return yi;
}

static void check_forward(pd_dtype dt, int xn, const int64_t *xd, int yn, const int64_t *yd, int axis) {
  pd_tensor *x = ot_rand(dt, xn, xd, 1, -1, 1, 0), *y = ot_rand(dt, yn, yd, 2, -1, 1, 0), *out = ot_out();
  char a[32];
  snprintf(a, sizeof a, "i: %d", axis);
  const char *attrs[] = {"axis", a, NULL};
  ot_run("elementwise_add", attrs, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
  expect_dims(out, xn, xd);
  int start = axis == -1 ? xn - yn : axis;
  int64_t n = pd_tensor_numel(x);
  double *ref = malloc(sizeof(double) * (size_t)(n + 1));
  for (int64_t i = 0; i < n; i++) ref[i] = pd_tensor_get(x, i) + pd_tensor_get(y, y_index(i, x, y, start));
  ot_assert_close(out, ref, n, dt == PD_F32 ? 1e-6 : 1e-15);
  free(ref);
  ot_free(x), ot_free(y), ot_free(out);
}

static void test_bias_rows(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++)
    for (int t = 0; t < 2; t++) {
      pd_dtype dt = t ? PD_F64 : PD_F32;
      check_forward(dt, 2, (int64_t[]){rows[r], 7}, 1, (int64_t[]){7}, -1);
      check_forward(dt, 2, (int64_t[]){rows[r], 7}, 1, (int64_t[]){7}, 1);
      check_forward(dt, 2, (int64_t[]){rows[r], 33}, 2, (int64_t[]){rows[r], 33}, -1); /* same shape */
    }
}

static void test_axis_0_and_1(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    check_forward(dt, 3, (int64_t[]){17, 4, 5}, 1, (int64_t[]){17}, 0);        /* one value per row */
    check_forward(dt, 3, (int64_t[]){3, 4, 5}, 2, (int64_t[]){3, 4}, 0);       /* leading dims */
    check_forward(dt, 4, (int64_t[]){2, 3, 4, 5}, 1, (int64_t[]){3}, 1);       /* channel bias on NCHW */
    check_forward(dt, 4, (int64_t[]){2, 3, 4, 5}, 2, (int64_t[]){3, 4}, 1);    /* a middle run */
    check_forward(dt, 4, (int64_t[]){2, 3, 4, 5}, 3, (int64_t[]){3, 4, 5}, 1); /* = trailing */
  }
}

static void test_trailing(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    check_forward(dt, 3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){3, 4}, -1);
    check_forward(dt, 3, (int64_t[]){2, 3, 4}, 1, (int64_t[]){4}, -1);
    check_forward(dt, 3, (int64_t[]){2, 3, 4}, 1, (int64_t[]){4}, 2);
    check_forward(dt, 4, (int64_t[]){129, 3, 1, 2}, 3, (int64_t[]){3, 1, 2}, -1);
  }
}

/* Y dims of 1 repeat along X's, as in NumPy. */
static void test_size_one_dims(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    check_forward(dt, 3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){3, 1}, 1);      /* per (n, c) on [.., 4] */
    check_forward(dt, 3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){1, 4}, -1);     /* a row for every c */
    check_forward(dt, 3, (int64_t[]){17, 3, 4}, 3, (int64_t[]){1, 3, 1}, -1); /* middle only */
    check_forward(dt, 3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){2, 1, 4}, 0);   /* outer and inner */
    check_forward(dt, 2, (int64_t[]){3, 5}, 1, (int64_t[]){1}, -1);           /* a scalar in a [1] */
    check_forward(dt, 2, (int64_t[]){3, 5}, 0, NULL, -1);                     /* a rank-0 scalar */
    check_forward(dt, 3, (int64_t[]){2, 1, 4}, 2, (int64_t[]){1, 4}, -1);     /* X has a 1 too */
    check_forward(dt, 2, (int64_t[]){1, 1}, 2, (int64_t[]){1, 1}, -1);
    check_forward(dt, 2, (int64_t[]){0, 4}, 1, (int64_t[]){4}, -1); /* empty X */
  }
}

/* At load the batch is -1: it passes through; known dims are still checked. */
static void test_infer_with_batch(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *x = ot_shaped(PD_F32, 2, (int64_t[]){-1, 4}), *out = ot_out();
  pd_tensor *y = ot_shaped(PD_F32, 1, (int64_t[]){4}), *yb = ot_shaped(PD_F32, 2, (int64_t[]){-1, 4});
  pd_tensor *bad = ot_shaped(PD_F32, 1, (int64_t[]){3});
  assert_int_equal(ot_infer("elementwise_add", NULL, (pd_tensor *[]){x, y}, NULL, &out, NULL, NULL), PD_OK);
  ot_assert_dims(out, -1, 4);
  assert_int_equal(ot_infer("elementwise_add", NULL, (pd_tensor *[]){x, yb}, NULL, &out, NULL, NULL), PD_OK);
  ot_assert_dims(out, -1, 4);
  assert_int_equal(ot_infer("elementwise_add", NULL, (pd_tensor *[]){x, bad}, NULL, &out, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "Y of shape [3] cannot be added to X of shape [-1, 4] at axis 1"));
  ot_free(x), ot_free(y), ot_free(yb), ot_free(bad), ot_free(out);
}

static void test_errors(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){2, 5}, 1, -1, 1, 0);
  pd_tensor *y = ot_rand(PD_F32, 2, (int64_t[]){3, 4}, 2, -1, 1, 0);
  pd_tensor *y3 = ot_rand(PD_F32, 3, (int64_t[]){1, 2, 5}, 2, -1, 1, 0);
  pd_tensor *y5 = ot_rand(PD_F32, 1, (int64_t[]){5}, 2, -1, 1, 0);
  pd_tensor *yd = ot_rand(PD_F64, 1, (int64_t[]){5}, 2, -1, 1, 0);
  pd_tensor *out = ot_out();
  const char *msg = ot_run_fail("elementwise_add", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "Y of shape [3, 4] cannot be added to X of shape [2, 5] at axis 0: Y's dim 0 is 3, "
                              "X's dim 0 is 2 (each dim of Y must equal X's or be 1)"));
  const char *ax0[] = {"axis", "i: 0", NULL};
  msg = ot_run_fail("elementwise_add", ax0, (pd_tensor *[]){x, y5}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "Y of shape [5] cannot be added to X of shape [2, 5] at axis 0"));
  msg = ot_run_fail("elementwise_add", NULL, (pd_tensor *[]){x, y3}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "Y of shape [1, 2, 5] does not fit inside X of shape [2, 5] at axis -1"));
  const char *ax2[] = {"axis", "i: 2", NULL};
  msg = ot_run_fail("elementwise_add", ax2, (pd_tensor *[]){x, y5}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "Y of shape [5] does not fit inside X of shape [2, 5] at axis 2"));
  const char *axbad[] = {"axis", "i: -2", NULL};
  msg = ot_run_fail("elementwise_add", axbad, (pd_tensor *[]){x, y5}, NULL, (pd_tensor *[]){out}, NULL);
  assert_string_equal(msg, "attribute \"axis\" must be >= -1, got -2");
  msg = ot_run_fail("elementwise_add", NULL, (pd_tensor *[]){x, yd}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "X and Y must both be float32 or both float64, got float32 and float64"));
  ot_free(x), ot_free(y), ot_free(y3), ot_free(y5), ot_free(yd), ot_free(out);
}

static void gradcheck(int xn, const int64_t *xd, int yn, const int64_t *yd, int axis) {
  char a[32];
  snprintf(a, sizeof a, "i: %d", axis);
  const char *attrs[] = {"axis", a, NULL};
  pd_tensor *x = ot_rand(PD_F64, xn, xd, 21, -1, 1, 0), *y = ot_rand(PD_F64, yn, yd, 22, -1, 1, 0);
  ot_gradcheck("elementwise_add", attrs, (pd_tensor *[]){x, y}, 2, 1);
  ot_free(x), ot_free(y);
}

static void test_gradients(void **state) {
  (void)state;
  gradcheck(2, (int64_t[]){3, 4}, 1, (int64_t[]){4}, -1);          /* bias row */
  gradcheck(2, (int64_t[]){3, 4}, 2, (int64_t[]){3, 4}, -1);       /* same shape */
  gradcheck(3, (int64_t[]){3, 2, 4}, 1, (int64_t[]){3}, 0);        /* axis 0 */
  gradcheck(4, (int64_t[]){2, 3, 2, 2}, 1, (int64_t[]){3}, 1);     /* channel bias */
  gradcheck(3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){3, 1}, 1);     /* size-1 dim */
  gradcheck(3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){2, 1, 4}, -1); /* outer and inner */
  gradcheck(2, (int64_t[]){3, 5}, 1, (int64_t[]){1}, -1);          /* scalar */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bias_rows),     cmocka_unit_test(test_axis_0_and_1),     cmocka_unit_test(test_trailing),
      cmocka_unit_test(test_size_one_dims), cmocka_unit_test(test_infer_with_batch), cmocka_unit_test(test_errors),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
