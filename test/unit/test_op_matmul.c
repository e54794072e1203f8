/* test_op_matmul.c — matmul as NumPy's: Out[b..., i, j] = sum_k X[bx..., i,
 * k] Y[by..., k, j], the batch dims broadcast (bx, by take index 0 along a
 * missing or size-1 dim), a 1-D X one row and a 1-D Y one column with that
 * dim dropped. Checked against a float64 triple loop in float32 and float64;
 * shapes with -1; errors; gradients by finite differences. */
#include "optest.h"

/* The reference for X [bx..., m, k], Y [by..., k, n] (both at least 2-D),
 * Out [b..., m, n] of rank on. */
static void reference(const pd_tensor *x, const pd_tensor *y, int on, const int64_t *od, int64_t m, int64_t k,
                      int64_t n, double *ref) {
  int nb = on - 2;
  int64_t nbatch = 1;
  for (int d = 0; d < nb; d++) nbatch *= od[d];
  for (int64_t b = 0; b < nbatch; b++) {
    int64_t idx[PD_MAX_DIMS], r = b, xo = 0, yo = 0;
    for (int d = nb - 1; d >= 0; d--) idx[d] = r % od[d], r /= od[d];
    int xb = x->ndim - 2, yb = y->ndim - 2;
    for (int d = 0; d < xb; d++) xo = xo * x->dims[d] + (x->dims[d] == 1 ? 0 : idx[nb - xb + d]);
    for (int d = 0; d < yb; d++) yo = yo * y->dims[d] + (y->dims[d] == 1 ? 0 : idx[nb - yb + d]);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t q = 0; q < k; q++)
          s += pd_tensor_get(x, xo * m * k + i * k + q) * pd_tensor_get(y, yo * k * n + q * n + j);
        ref[(b * m + i) * n + j] = s;
      }
  }
}

static void check(pd_dtype dt, int xn, const int64_t *xd, int yn, const int64_t *yd, int on, const int64_t *od) {
  pd_tensor *x = ot_rand(dt, xn, xd, 1, -1, 1, 0), *y = ot_rand(dt, yn, yd, 2, -1, 1, 0), *out = ot_out();
  ot_run("matmul", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
  char a[128], b[128];
  if (!pd_dims_equal(out->ndim, out->dims, on, od))
    fail_msg("shape %s, expected %s", pd_dims_str(out->ndim, out->dims, a, sizeof a), pd_dims_str(on, od, b, sizeof b));
  /* 1-D operands as [1, K] and [K, 1] for the reference */
  pd_tensor xv = *x, yv = *y;
  if (xn == 1) xv.ndim = 2, xv.dims[0] = 1, xv.dims[1] = xd[0];
  if (yn == 1) yv.ndim = 2, yv.dims[0] = yd[0], yv.dims[1] = 1;
  int64_t m = xv.dims[xv.ndim - 2], k = xv.dims[xv.ndim - 1], n = yv.dims[yv.ndim - 1];
  int64_t full[PD_MAX_DIMS];
  int nb = (xv.ndim > yv.ndim ? xv.ndim : yv.ndim) - 2;
  if (nb > 0) memcpy(full, od, sizeof(int64_t) * (size_t)nb); /* od is NULL for a scalar Out */
  full[nb] = m, full[nb + 1] = n;
  int64_t total = pd_tensor_numel(out);
  double *ref = malloc(sizeof(double) * (size_t)(total + 1));
  reference(&xv, &yv, nb + 2, full, m, k, n, ref);
  ot_assert_close(out, ref, total, dt == PD_F32 ? 1e-5 : 1e-13);
  free(ref);
  ot_free(x), ot_free(y), ot_free(out);
}

static void test_products(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    check(dt, 2, (int64_t[]){3, 4}, 2, (int64_t[]){4, 5}, 2, (int64_t[]){3, 5});
    check(dt, 3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){2, 4, 5}, 3, (int64_t[]){2, 3, 5});
    check(dt, 4, (int64_t[]){1, 2, 3, 4}, 4, (int64_t[]){3, 1, 4, 2}, 4, (int64_t[]){3, 2, 3, 2}); /* broadcast */
    check(dt, 3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){4, 5}, 3, (int64_t[]){2, 3, 5});             /* shared Y */
    check(dt, 1, (int64_t[]){4}, 2, (int64_t[]){4, 5}, 1, (int64_t[]){5});                         /* 1-D X */
    check(dt, 3, (int64_t[]){2, 3, 4}, 1, (int64_t[]){4}, 2, (int64_t[]){2, 3});                   /* 1-D Y */
    check(dt, 1, (int64_t[]){4}, 1, (int64_t[]){4}, 0, NULL);                                      /* dot */
  }
}

static void test_infer_and_errors(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *x = ot_shaped(PD_F32, 2, (int64_t[]){-1, 4}), *y = ot_shaped(PD_F32, 2, (int64_t[]){4, 6});
  pd_tensor *bad = ot_shaped(PD_F32, 2, (int64_t[]){5, 6}), *out = ot_out();
  assert_int_equal(ot_infer("matmul", NULL, (pd_tensor *[]){x, y}, NULL, &out, NULL, NULL), PD_OK);
  ot_assert_dims(out, -1, 6);
  assert_int_equal(ot_infer("matmul", NULL, (pd_tensor *[]){x, bad}, NULL, &out, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "X of shape [-1, 4] and Y of shape [5, 6] cannot be multiplied: X's last dim differs"));
  pd_tensor *x3 = ot_shaped(PD_F32, 3, (int64_t[]){2, 3, 4}), *y3 = ot_shaped(PD_F32, 3, (int64_t[]){3, 4, 6});
  assert_int_equal(ot_infer("matmul", NULL, (pd_tensor *[]){x3, y3}, NULL, &out, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "their batch dims do not broadcast"));
  ot_free(x), ot_free(y), ot_free(bad), ot_free(x3), ot_free(y3), ot_free(out);
}

static void gradcheck(int xn, const int64_t *xd, int yn, const int64_t *yd) {
  pd_tensor *x = ot_rand(PD_F64, xn, xd, 21, -1, 1, 0), *y = ot_rand(PD_F64, yn, yd, 22, -1, 1, 0);
  ot_gradcheck("matmul", NULL, (pd_tensor *[]){x, y}, 2, 1);
  ot_free(x), ot_free(y);
}

static void test_gradients(void **state) {
  (void)state;
  gradcheck(2, (int64_t[]){3, 4}, 2, (int64_t[]){4, 2});
  gradcheck(3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){4, 2});
  gradcheck(4, (int64_t[]){1, 2, 3, 2}, 4, (int64_t[]){3, 1, 2, 2});
  gradcheck(1, (int64_t[]){4}, 3, (int64_t[]){2, 4, 3});
  gradcheck(2, (int64_t[]){3, 4}, 1, (int64_t[]){4});
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_products),
      cmocka_unit_test(test_infer_and_errors),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
