/* test_op_mul.c — mul: with X read as [M, K] (rows: its first x_num_col_dims
 * dims) and Y as [K, N] (rows: its first y_num_col_dims dims),
 * Out[i, j] = sum_k X[i, k] Y[k, j], shape X.dims[:xc] ++ Y.dims[yc:].
 * Checked against a plain float64 loop in float32 and float64, for 1, 3, 17
 * and 129 rows; shapes with -1 at load; errors; gradients by finite differences. */
#include "optest.h"

static void expect_dims(const pd_tensor *t, int ndim, const int64_t *dims) {
  char a[128], b[128];
  if (!pd_dims_equal(t->ndim, t->dims, ndim, dims))
    fail_msg("expected shape %s, got %s", pd_dims_str(ndim, dims, a, sizeof a),
             pd_dims_str(t->ndim, t->dims, b, sizeof b));
}

static int64_t prod(const int64_t *d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= d[i];
  return p;
}

/* Runs mul on random X (xdims) and Y (ydims) and compares with the loop. */
static void check_forward(pd_dtype dt, int xn, const int64_t *xd, int yn, const int64_t *yd, int xc, int yc) {
  pd_tensor *x = ot_rand(dt, xn, xd, 1, -1, 1, 0), *y = ot_rand(dt, yn, yd, 2, -1, 1, 0), *out = ot_out();
  char xa[32], ya[32];
  snprintf(xa, sizeof xa, "i: %d", xc);
  snprintf(ya, sizeof ya, "i: %d", yc);
  const char *attrs[] = {"x_num_col_dims", xa, "y_num_col_dims", ya, NULL};
  ot_run("mul", attrs, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
  int64_t want[PD_MAX_DIMS];
  int nd = 0;
  for (int i = 0; i < xc; i++) want[nd++] = xd[i];
  for (int i = yc; i < yn; i++) want[nd++] = yd[i];
  expect_dims(out, nd, want);
  assert_int_equal(out->dtype, dt);
  int64_t m = prod(xd, 0, xc), k = prod(xd, xc, xn), n = prod(yd, yc, yn);
  double *ref = malloc(sizeof(double) * (size_t)(m * n + 1));
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t q = 0; q < k; q++) s += pd_tensor_get(x, i * k + q) * pd_tensor_get(y, q * n + j);
      ref[i * n + j] = s;
    }
  /* sums of k products may cancel to near 0: entries below 1 compare absolutely */
  double e = ot_max_err(out, ref, m * n, 1.0), tol = dt == PD_F32 ? 1e-5 : 1e-12;
  if (!(e <= tol)) fail_msg("mul %s: max error %g > %g", pd_dtype_name(dt), e, tol);
  free(ref);
  ot_free(x), ot_free(y), ot_free(out);
}

static void test_forward_sizes(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++) {
    for (int t = 0; t < 2; t++) {
      pd_dtype dt = t ? PD_F64 : PD_F32;
      check_forward(dt, 2, (int64_t[]){rows[r], 7}, 2, (int64_t[]){7, 5}, 1, 1);
      check_forward(dt, 2, (int64_t[]){rows[r], 33}, 2, (int64_t[]){33, 1}, 1, 1);
      check_forward(dt, 2, (int64_t[]){3, rows[r]}, 2, (int64_t[]){rows[r], 9}, 1, 1);
    }
  }
}

/* x_num_col_dims / y_num_col_dims pick where the matrices are cut. */
static void test_flattening(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    /* X [5, 2, 3] as [5, 6]; Y [6, 4] */
    check_forward(dt, 3, (int64_t[]){5, 2, 3}, 2, (int64_t[]){6, 4}, 1, 1);
    /* X [2, 3, 4] as [6, 4]; Y [4, 2, 5] as [4, 10]: Out [2, 3, 2, 5] */
    check_forward(dt, 3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){4, 2, 5}, 2, 1);
    /* X [3, 4] ; Y [2, 2, 5] as [4, 5] (y_num_col_dims 2): Out [3, 5] */
    check_forward(dt, 2, (int64_t[]){3, 4}, 3, (int64_t[]){2, 2, 5}, 1, 2);
  }
}

/* At load the batch is -1: it propagates; the inner dims are still checked. */
static void test_infer_with_batch(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *x = ot_shaped(PD_F32, 3, (int64_t[]){-1, 2, 3}), *y = ot_shaped(PD_F32, 2, (int64_t[]){6, 4});
  pd_tensor *x2 = ot_shaped(PD_F32, 3, (int64_t[]){-1, 5, 6}), *bad = ot_shaped(PD_F32, 3, (int64_t[]){-1, 2, 4});
  pd_tensor *out = ot_out();
  assert_int_equal(ot_infer("mul", NULL, (pd_tensor *[]){x, y}, NULL, &out, NULL, NULL), PD_OK);
  ot_assert_dims(out, -1, 4);
  const char *two[] = {"x_num_col_dims", "i: 2", NULL};
  assert_int_equal(ot_infer("mul", two, (pd_tensor *[]){x2, y}, NULL, &out, NULL, NULL), PD_OK);
  ot_assert_dims(out, -1, 5, 4);
  assert_int_equal(ot_infer("mul", NULL, (pd_tensor *[]){bad, y}, NULL, &out, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "X of shape [-1, 2, 4] has 8 columns (dims after the first 1) but Y of shape "
                              "[6, 4] has 6 rows (its first 1 dims); they must be equal"));
  ot_free(x), ot_free(y), ot_free(x2), ot_free(bad), ot_free(out);
}

static void test_errors(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){2, 5}, 1, -1, 1, 0);
  pd_tensor *y = ot_rand(PD_F32, 2, (int64_t[]){4, 3}, 2, -1, 1, 0);
  pd_tensor *yd = ot_rand(PD_F64, 2, (int64_t[]){5, 3}, 2, -1, 1, 0);
  pd_tensor *xi = ot_rand(PD_I32, 2, (int64_t[]){2, 5}, 1, -1, 1, 0);
  pd_tensor *out = ot_out();
  const char *msg = ot_run_fail("mul", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "X of shape [2, 5] has 5 columns (dims after the first 1) but Y of shape [4, 3] has 4 "
                              "rows (its first 1 dims); they must be equal"));
  const char *xc2[] = {"x_num_col_dims", "i: 2", NULL};
  msg = ot_run_fail("mul", xc2, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "x_num_col_dims is 2, so X needs more than 2 dims; X has shape [2, 5]"));
  const char *yc2[] = {"y_num_col_dims", "i: 2", NULL};
  msg = ot_run_fail("mul", yc2, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "y_num_col_dims is 2, so Y needs more than 2 dims; Y has shape [4, 3]"));
  const char *xc0[] = {"x_num_col_dims", "i: 0", NULL};
  msg = ot_run_fail("mul", xc0, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
  assert_string_equal(msg, "attribute \"x_num_col_dims\" must be >= 1, got 0");
  msg = ot_run_fail("mul", NULL, (pd_tensor *[]){x, yd}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "X and Y must both be float32 or both float64, got float32 and float64"));
  msg = ot_run_fail("mul", NULL, (pd_tensor *[]){xi, yd}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "got int32 and float64"));
  ot_free(x), ot_free(y), ot_free(yd), ot_free(xi), ot_free(out);
}

static void test_gradients(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){3, 5}, 11, -1, 1, 0);
  pd_tensor *y = ot_rand(PD_F64, 2, (int64_t[]){5, 4}, 12, -1, 1, 0);
  ot_gradcheck("mul", NULL, (pd_tensor *[]){x, y}, 2, 1);
  ot_free(x), ot_free(y);
  /* flattened on both sides: X [2, 3, 2] as [6, 2], Y [2, 2, 3] as [2, 6] */
  const char *attrs[] = {"x_num_col_dims", "i: 2", NULL};
  x = ot_rand(PD_F64, 3, (int64_t[]){2, 3, 2}, 13, -1, 1, 0);
  y = ot_rand(PD_F64, 3, (int64_t[]){2, 2, 3}, 14, -1, 1, 0);
  ot_gradcheck("mul", attrs, (pd_tensor *[]){x, y}, 2, 1);
  ot_free(x), ot_free(y);
  /* one row */
  x = ot_rand(PD_F64, 2, (int64_t[]){1, 7}, 15, -1, 1, 0);
  y = ot_rand(PD_F64, 2, (int64_t[]){7, 3}, 16, -1, 1, 0);
  ot_gradcheck("mul", NULL, (pd_tensor *[]){x, y}, 2, 1);
  ot_free(x), ot_free(y);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward_sizes), cmocka_unit_test(test_flattening), cmocka_unit_test(test_infer_with_batch),
      cmocka_unit_test(test_errors),        cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
