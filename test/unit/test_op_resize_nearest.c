/* test_op_resize_nearest.c — resize_nearest by 2 and 2, by 1.5 and 3, by 0.5
 * and 1 (down), by 2.5 and 0.75: forward against a reference of ONNX's
 * asymmetric/floor rule in float32 and float64 (exact: copies), a case
 * large enough to be split among threads; gradients by finite differences
 * for each scale pair (every input read by 0, 1, 2 or 3 outputs per dim);
 * a NaN reaches every output that reads it; the load-time errors (3-D X,
 * one scale, a scale <= 0, a scale leaving nothing). */
#include "optest.h"

static const double scale_pairs[][2] = {{2, 2}, {1.5, 3}, {0.5, 1}, {2.5, 0.75}};
static const char *const scale_attrs[] = {"floats: [2, 2]", "floats: [1.5, 3]", "floats: [0.5, 1]",
                                          "floats: [2.5, 0.75]"};

static void ref(const pd_tensor *x, double sh, double sw, double *y) {
  int64_t pl = x->dims[0] * x->dims[1], h = x->dims[2], w = x->dims[3];
  int64_t ho = (int64_t)floor(h * sh), wo = (int64_t)floor(w * sw);
  for (int64_t p = 0; p < pl; p++)
    for (int64_t i = 0; i < ho; i++)
      for (int64_t j = 0; j < wo; j++) {
        int64_t si = (int64_t)(i / sh), sj = (int64_t)(j / sw);
        si = si < h - 1 ? si : h - 1, sj = sj < w - 1 ? sj : w - 1;
        y[(p * ho + i) * wo + j] = pd_tensor_get(x, (p * h + si) * w + sj);
      }
}

static void check_forward(pd_dtype dt, int k, int64_t n, int64_t h, int64_t w) {
  pd_tensor *x = ot_rand(dt, 4, (int64_t[]){n, 3, h, w}, 40 + (uint64_t)k, -3, 3, 0), *y = ot_out();
  const char *attrs[] = {"scales", scale_attrs[k], NULL};
  ot_run("resize_nearest", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  int64_t ho = (int64_t)floor(h * scale_pairs[k][0]), wo = (int64_t)floor(w * scale_pairs[k][1]);
  ot_assert_dims(y, n, 3, ho, wo);
  double *r = malloc(sizeof(double) * (size_t)(n * 3 * ho * wo));
  ref(x, scale_pairs[k][0], scale_pairs[k][1], r);
  ot_assert_close(y, r, n * 3 * ho * wo, 0);
  free(r);
  ot_free(x), ot_free(y);
}

static void test_forward(void **state) {
  (void)state;
  for (int k = 0; k < 4; k++)
    for (int t = 0; t < 2; t++) {
      check_forward(t ? PD_F64 : PD_F32, k, 2, 5, 4);
      check_forward(t ? PD_F64 : PD_F32, k, 40, 17, 23);
    }
}

static void test_gradients(void **state) {
  (void)state;
  for (int k = 0; k < 4; k++) {
    pd_tensor *x = ot_rand(PD_F64, 4, (int64_t[]){2, 2, 5, 4}, 50 + (uint64_t)k, -2, 2, 0);
    const char *attrs[] = {"scales", scale_attrs[k], NULL};
    ot_gradcheck("resize_nearest", attrs, (pd_tensor *[]){x}, 1, 1);
    ot_free(x);
  }
}

static void test_nan(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 4, (int64_t[]){1, 1, 3, 3}, 4, -1, 1, 0), *y = ot_out();
  pd_tensor_set(x, 4, NAN); /* the centre */
  const char *attrs[] = {"scales", "floats: [2, 1.5]", NULL};
  ot_run("resize_nearest", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  ot_assert_dims(y, 1, 1, 6, 4);
  int nans = 0;
  for (int64_t i = 0; i < 24; i++) nans += isnan(pd_tensor_get(y, i));
  assert_int_equal(nans, 2 * 1); /* rows 2, 3; column 2 (floor(2 / 1.5) = 1) */
  ot_free(x), ot_free(y);
}

static void test_errors(void **state) {
  (void)state;
  pd_tensor *x = ot_shaped(PD_F32, 4, (int64_t[]){-1, 3, 4, 5}), *x3 = ot_shaped(PD_F32, 3, (int64_t[]){-1, 4, 5});
  pd_tensor *y = ot_out();
  const char *msg;
  const char *two[] = {"scales", "floats: [2, 2]", NULL};
  assert_int_equal(ot_infer("resize_nearest", two, (pd_tensor *[]){x3}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "input X must be 4-D [N, C, H, W], got shape [-1, 4, 5]"));
  const char *one[] = {"scales", "floats: [2]", NULL};
  assert_int_equal(ot_infer("resize_nearest", one, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "attribute \"scales\" must hold 2 values [sh, sw], got 1"));
  const char *zero[] = {"scales", "floats: [2, 0]", NULL};
  assert_int_not_equal(ot_infer("resize_nearest", zero, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                       PD_OK);
  assert_non_null(strstr(msg, "must be > 0"));
  const char *tiny[] = {"scales", "floats: [0.2, 1]", NULL};
  assert_int_equal(ot_infer("resize_nearest", tiny, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "scale 0.2 leaves nothing of dim 2 of X (shape [-1, 3, 4, 5]): floor(4 * 0.2) = 0"));
  assert_int_equal(ot_infer("resize_nearest", two, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL, &msg), PD_OK);
  ot_assert_dims(y, -1, 3, 8, 10);
  ot_free(x), ot_free(x3), ot_free(y);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),
      cmocka_unit_test(test_gradients),
      cmocka_unit_test(test_nan),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
