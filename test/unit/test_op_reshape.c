/* test_op_reshape.c — reshape: Out has dims `shape` (a 0 copies X's dim at
 * that index, one -1 is numel(X) / the product of the others) and Out[i] =
 * X[i] for every flat index i; Out shares X's storage. Checked for 1, 3, 17
 * and 129 rows in float32, float64, int64 and uint8; load-time shapes with a
 * -1 batch; errors (sizes that cannot match, two -1s, bad attribute);
 * gradient dX = dOut with X's dims by finite differences. */
#include "optest.h"

/* Shape function only, as at load; the message (if any) in *msg. */
static pd_status infer_only(const char *shape, pd_tensor *x, pd_tensor *out, const char **msg) {
  const char *attrs[] = {"shape", shape, NULL};
  return ot_infer("reshape", attrs, &x, NULL, &out, NULL, msg);
}

static void expect_dims(const pd_tensor *t, int ndim, const int64_t *dims) {
  char a[128], b[128];
  if (!pd_dims_equal(t->ndim, t->dims, ndim, dims))
    fail_msg("expected shape %s, got %s", pd_dims_str(ndim, dims, a, sizeof a),
             pd_dims_str(t->ndim, t->dims, b, sizeof b));
}

static void check(pd_dtype dt, int xn, const int64_t *xd, const char *shape, int on, const int64_t *od) {
  pd_tensor *x = ot_rand(dt, xn, xd, 1, -100, 100, 0), *out = ot_out();
  const char *attrs[] = {"shape", shape, NULL};
  ot_run("reshape", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  expect_dims(out, on, od);
  assert_int_equal(out->dtype, dt);
  int64_t n = pd_tensor_numel(x);
  for (int64_t i = 0; i < n; i++)
    if (pd_tensor_get(out, i) != pd_tensor_get(x, i)) fail_msg("element %lld differs", (long long)i);
  assert_ptr_equal(pd_tensor_data(out), pd_tensor_data(x)); /* no copy */
  ot_free(x), ot_free(out);
}

static void test_forward(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  const pd_dtype dts[] = {PD_F32, PD_F64, PD_I64, PD_U8};
  for (int r = 0; r < 4; r++)
    for (int t = 0; t < 4; t++) {
      int64_t n = rows[r];
      check(dts[t], 2, (int64_t[]){n, 6}, "ints: [-1, 2, 3]", 3, (int64_t[]){n, 2, 3});
      check(dts[t], 2, (int64_t[]){n, 6}, "ints: [0, 3, 2]", 3, (int64_t[]){n, 3, 2});
      check(dts[t], 3, (int64_t[]){n, 2, 3}, "ints: [0, -1]", 2, (int64_t[]){n, 6});
      check(dts[t], 3, (int64_t[]){n, 2, 3}, "ints: [-1]", 1, (int64_t[]){n * 6});
      check(dts[t], 2, (int64_t[]){n, 6}, "ints: [6, -1]", 2, (int64_t[]){6, n});
      check(dts[t], 2, (int64_t[]){n, 6}, "ints: [0, 0]", 2, (int64_t[]){n, 6});
    }
  check(PD_F32, 2, (int64_t[]){0, 6}, "ints: [0, 2, 3]", 3, (int64_t[]){0, 2, 3});
  check(PD_F32, 1, (int64_t[]){1}, "ints: []", 0, NULL);
}

/* At load X's batch is -1: a -1 in shape stays -1 (the batch), a 0 copies it,
 * and what can never fit is an error. */
static void test_infer_with_batch(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *x = ot_shaped(PD_U8, 3, (int64_t[]){-1, 28, 28}), *out = ot_out();
  assert_int_equal(infer_only("ints: [-1, 784]", x, out, NULL), PD_OK);
  ot_assert_dims(out, -1, 784);
  assert_int_equal(out->dtype, PD_U8);
  assert_int_equal(infer_only("ints: [0, -1]", x, out, NULL), PD_OK);
  ot_assert_dims(out, -1, 784);
  assert_int_equal(infer_only("ints: [0, 4, -1, 7]", x, out, NULL), PD_OK);
  ot_assert_dims(out, -1, 4, 28, 7);
  assert_int_equal(infer_only("ints: [0, 28, 27]", x, out, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "cannot reshape X of shape [-1, 28, 28] to shape [0, 28, 27]: X's known dims hold "
                              "784 elements, the shape 756"));
  assert_int_equal(infer_only("ints: [0, 5, -1]", x, out, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "X's known dims hold 784 elements, not a multiple of 5"));
  ot_free(x);
  /* a fixed shape works for some batch sizes only: allowed at load if any fits */
  x = ot_shaped(PD_F32, 2, (int64_t[]){-1, 3});
  assert_int_equal(infer_only("ints: [6, 2]", x, out, NULL), PD_OK);
  ot_assert_dims(out, 6, 2);
  assert_int_equal(infer_only("ints: [4, 2]", x, out, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "cannot reshape X of shape [-1, 3] to shape [4, 2]: the shape holds 8 elements, "
                              "not a multiple of the 3 in each batch row of X"));
  ot_free(x), ot_free(out);
}

static void test_errors(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){2, 3}, 1, -1, 1, 0), *out = ot_out();
  pd_tensor *e = ot_rand(PD_F32, 2, (int64_t[]){0, 3}, 1, -1, 1, 0);
  struct {
    pd_tensor *x;
    const char *shape, *msg;
  } cases[] = {
      {x, "ints: [4, 2]", "cannot reshape X of shape [2, 3] to shape [4, 2]: X has 6 elements, the shape 8"},
      {x, "ints: [4, -1]", "cannot reshape X of shape [2, 3] to shape [4, -1]: X has 6 elements, not a multiple of 4"},
      {x, "ints: [-1, -1]", "shape [-1, -1] has more than one -1; only one dim can be inferred"},
      {x, "ints: [0, 0, 0]", "shape [0, 0, 0] copies dim 2 of X (a 0), but X of shape [2, 3] has 2 dims"},
      {x, "ints: [-2, 3]", "attribute \"shape\": every element must be >= -1, got [-2, 3]"},
      {x, "ints: [1, 1, 1, 1, 1, 1, 1, 1, 6]", "shape [1, 1, 1, 1, 1, 1, 1, 1, 6] has 9 dims; at most 8 are supported"},
      {x, "ints: [4294967296, 4294967296, 4]",
       "shape [4294967296, 4294967296, 4] has more elements than fit in 64 bits"},
      {e, "ints: [0, -1]",
       "cannot reshape X of shape [0, 3] to shape [0, -1]: the -1 cannot be inferred when the "
       "other dims multiply to 0"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *attrs[] = {"shape", cases[i].shape, NULL};
    const char *msg = ot_run_fail("reshape", attrs, (pd_tensor *[]){cases[i].x}, NULL, (pd_tensor *[]){out}, NULL);
    if (!strstr(msg, cases[i].msg)) fail_msg("shape %s: expected \"%s\" in \"%s\"", cases[i].shape, cases[i].msg, msg);
  }
  const char *msg = ot_run_fail("reshape", NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  assert_string_equal(msg, "attribute \"shape\" is required");
  ot_free(x), ot_free(e), ot_free(out);
}

static void test_gradients(void **state) {
  (void)state;
  const char *attrs[] = {"shape", "ints: [0, 2, -1]", NULL};
  pd_tensor *x = ot_rand(PD_F64, 3, (int64_t[]){3, 2, 4}, 5, -1, 1, 0);
  ot_gradcheck("reshape", attrs, (pd_tensor *[]){x}, 1, 1);
  const char *flat[] = {"shape", "ints: [-1]", NULL};
  ot_gradcheck("reshape", flat, (pd_tensor *[]){x}, 1, 1);
  ot_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),
      cmocka_unit_test(test_infer_with_batch),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
