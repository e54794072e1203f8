/* test_op_identity.c — identity: Out = X exactly (same dims, dtype and
 * bits, -0 and NaN included) for float and integer dtypes; the gradient
 * dX = dOut by finite differences. */
#include "optest.h"

static void test_forward(void **state) {
  (void)state;
  const pd_dtype dts[] = {PD_F32, PD_F64, PD_I32, PD_I64, PD_U8};
  for (int t = 0; t < 5; t++) {
    pd_tensor *x = ot_rand(dts[t], 3, (int64_t[]){2, 3, 4}, 1, 0, 100, 0), *out = ot_out();
    if (pd_dtype_is_float(dts[t])) pd_tensor_set(x, 0, -0.0), pd_tensor_set(x, 1, NAN);
    ot_run("identity", NULL, &x, NULL, &out, NULL);
    assert_int_equal(out->dtype, dts[t]);
    ot_assert_dims(out, 2, 3, 4);
    assert_memory_equal(pd_tensor_data(out), pd_tensor_data(x), pd_tensor_bytes(x));
    ot_free(x), ot_free(out);
  }
}

static void test_gradients(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){3, 4}, 5, -2, 2, 0);
  ot_gradcheck("identity", NULL, &x, 1, 1);
  ot_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_forward), cmocka_unit_test(test_gradients)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
