/* test_op_flatten.c — flatten at axis a of X [d0, ..., d(n-1)]:
 *   Out = [d0 · ... · d(a-1), d(a) · ... · d(n-1)], Out[i, j] = X's element
 *   i · (d(a) · ... · d(n-1)) + j (the same order),
 * for every axis 0..n of odd shapes in float32, float64 and uint8; the -1
 * batch carried through at load; errors; dX = dOut with X's dims, by finite
 * differences. */
#include "optest.h"

static void check(pd_dtype dt, int ndim, const int64_t *dims, int axis) {
  pd_tensor *x = ot_rand(dt, ndim, dims, 1 + (uint64_t)axis, 0, 200, 0), *out = ot_out();
  char a[32];
  snprintf(a, sizeof a, "i: %d", axis);
  const char *attrs[] = {"axis", a, NULL};
  ot_run("flatten", attrs, &x, NULL, &out, NULL);
  int64_t rows = 1, cols = 1, n = pd_tensor_numel(x);
  for (int d = 0; d < ndim; d++) *(d < axis ? &rows : &cols) *= dims[d];
  ot_assert_dims(out, rows, cols);
  assert_int_equal(out->dtype, dt);
  double *ref = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) ref[i * cols + j] = pd_tensor_get(x, i * cols + j);
  ot_assert_close(out, ref, n, 0);
  free(ref);
  ot_free(x), ot_free(out);
}

static void test_forward(void **state) {
  (void)state;
  const pd_dtype dts[] = {PD_F32, PD_F64, PD_U8};
  for (int t = 0; t < 3; t++) {
    for (int a = 0; a <= 4; a++) check(dts[t], 4, (int64_t[]){3, 5, 7, 2}, a);
    for (int a = 0; a <= 2; a++) check(dts[t], 2, (int64_t[]){17, 3}, a);
    check(dts[t], 1, (int64_t[]){129}, 1);
  }
}

static void test_infer_with_batch(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *x = ot_shaped(PD_F32, 4, (int64_t[]){-1, 3, 5, 5}), *out = ot_out();
  const char *ax[] = {"axis", "i: 0", NULL};
  const int64_t want[5][2] = {{1, -1}, {-1, 75}, {-1, 25}, {-1, 5}, {-1, 1}};
  for (int a = 0; a <= 4; a++) {
    char v[16];
    snprintf(v, sizeof v, "i: %d", a);
    ax[1] = v;
    assert_int_equal(ot_infer("flatten", ax, &x, NULL, &out, NULL, &msg), PD_OK);
    ot_assert_dims(out, want[a][0], want[a][1]);
  }
  /* the default axis is 1: [N, C*H*W] */
  assert_int_equal(ot_infer("flatten", NULL, &x, NULL, &out, NULL, &msg), PD_OK);
  ot_assert_dims(out, -1, 75);
  ax[1] = "i: 5";
  assert_int_equal(ot_infer("flatten", ax, &x, NULL, &out, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "axis 5 is out of range for X of shape [-1, 3, 5, 5]: at most its rank, 4"));
  pd_tensor *xr = ot_rand(PD_F32, 1, (int64_t[]){4}, 1, -1, 1, 0);
  msg = ot_run_fail("flatten", (const char *[]){"axis", "i: -1", NULL}, &xr, NULL, &out, NULL);
  assert_non_null(strstr(msg, "\"axis\" must be >= 0, got -1"));
  ot_free(x), ot_free(out), ot_free(xr);
}

/* Out is a view of X, so flattening copies nothing. */
static void test_shares_storage(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 3, (int64_t[]){2, 3, 4}, 3, -1, 1, 0), *out = ot_out();
  ot_run("flatten", NULL, &x, NULL, &out, NULL);
  assert_ptr_equal(pd_tensor_data(out), pd_tensor_data(x));
  ot_free(x), ot_free(out);
}

static void test_gradient(void **state) {
  (void)state;
  for (int a = 0; a <= 3; a++) {
    char v[16];
    snprintf(v, sizeof v, "i: %d", a);
    pd_tensor *x = ot_rand(PD_F64, 3, (int64_t[]){3, 2, 5}, 20 + (uint64_t)a, -1, 1, 0);
    ot_gradcheck("flatten", (const char *[]){"axis", v, NULL}, &x, 1, 1);
    ot_free(x);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),
      cmocka_unit_test(test_infer_with_batch),
      cmocka_unit_test(test_shares_storage),
      cmocka_unit_test(test_gradient),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
