/* test_op_dropout.c — inverted dropout with probability p:
 *   training:  Mask_i ~ Bernoulli(1 - p), Out_i = X_i · Mask_i / (1 - p);
 *   inference: Out = X, Mask = 1.
 * Checked: Out against the formula from its own Mask (float32, float64, odd
 * sizes); the fraction kept ≈ 1 - p and the mean preserved over 100k
 * elements; the same mask for the same seed, step and op, another for
 * another step or seed; identity at inference; dX = dOut · Mask / (1 - p)
 * against finite differences (a fixed seed keeps the mask); shapes, errors. */
#include "optest.h"

static pd_status call(const char *type, bool training, uint64_t seed, int64_t step, const char *const *attrs,
                      pd_tensor *const *ins, pd_tensor *const *outs, pd_error *err) {
  pd_opcall c;
  pd_exec exec = {.training = training, .seed = seed, .step = step, .threads = 1};
  pd_status st = pd_opcall_init(&c, type, attrs, ins, NULL, outs, NULL, err);
  if (!st) st = pd_opcall_run(&c, &exec, err);
  pd_opcall_free(&c);
  return st;
}

static void dropout(bool training, uint64_t seed, int64_t step, const char *const *attrs, pd_tensor *x, pd_tensor *out,
                    pd_tensor *mask) {
  pd_error err = {0};
  if (call("dropout", training, seed, step, attrs, (pd_tensor *[]){x}, (pd_tensor *[]){out, mask}, &err))
    fail_msg("dropout: %s", err.msg);
}

/* Out_i = X_i · Mask_i / (1 - p), Mask 0 or 1. */
static void check_forward(pd_dtype dt, int64_t rows, int64_t cols, double p) {
  char pa[32];
  snprintf(pa, sizeof pa, "f: %g", p);
  const char *attrs[] = {"dropout_prob", pa, NULL};
  int64_t n = rows * cols;
  pd_tensor *x = ot_rand(dt, 2, (int64_t[]){rows, cols}, 1, -1, 1, 0), *out = ot_out(), *mask = ot_out();
  dropout(true, 5, 0, attrs, x, out, mask);
  assert_int_equal(mask->dtype, dt);
  assert_true(pd_dims_equal(out->ndim, out->dims, 2, (int64_t[]){rows, cols}));
  assert_true(pd_dims_equal(mask->ndim, mask->dims, 2, (int64_t[]){rows, cols}));
  double *want = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    double m = pd_tensor_get(mask, i);
    if (m != 0 && m != 1) fail_msg("mask[%lld] = %g, expected 0 or 1", (long long)i, m);
    want[i] = pd_tensor_get(x, i) * m / (1 - p);
  }
  ot_assert_close(out, want, n, dt == PD_F32 ? 1e-6 : 1e-15);
  free(want);
  ot_free(x), ot_free(out), ot_free(mask);
}

static void test_forward(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++) {
    check_forward(PD_F32, rows[r], 7, 0.5);
    check_forward(PD_F64, rows[r], 5, 0.3);
    check_forward(PD_F32, rows[r], 3, 0);
  }
}

/* Over 100k elements the fraction kept is 1 - p within 5 standard
 * deviations, and the mean of Out is the mean of X (here X = 1). */
static void test_statistics(void **state) {
  (void)state;
  const double ps[] = {0.1, 0.5, 0.8};
  const int64_t n = 100000;
  for (int k = 0; k < 3; k++) {
    char pa[32];
    snprintf(pa, sizeof pa, "f: %g", ps[k]);
    const char *attrs[] = {"dropout_prob", pa, NULL};
    pd_tensor *x = ot_tensor(PD_F64, 1, &n), *out = ot_out(), *mask = ot_out();
    for (int64_t i = 0; i < n; i++) pd_tensor_set(x, i, 1);
    dropout(true, 11, 3, attrs, x, out, mask);
    double kept = 0, sum = 0;
    for (int64_t i = 0; i < n; i++) kept += pd_tensor_get(mask, i), sum += pd_tensor_get(out, i);
    double q = 1 - ps[k], sd = sqrt(q * (1 - q) / (double)n);
    if (fabs(kept / (double)n - q) > 5 * sd)
      fail_msg("p = %g: kept %.5f of the elements, expected %.5f +- %.5f", ps[k], kept / (double)n, q, 5 * sd);
    if (fabs(sum / (double)n - 1) > 5 * sd / q)
      fail_msg("p = %g: mean of Out %.5f, expected 1 +- %.5f", ps[k], sum / (double)n, 5 * sd / q);
    ot_free(x), ot_free(out), ot_free(mask);
  }
}

/* The mask is a function of (seed, step, op): the same triple gives the same
 * mask; another step or seed another one. */
static void test_reproducible(void **state) {
  (void)state;
  const int64_t n = 1000;
  pd_tensor *x = ot_rand(PD_F32, 1, &n, 3, -1, 1, 0.01);
  pd_tensor *m[4] = {ot_out(), ot_out(), ot_out(), ot_out()}, *out = ot_out();
  dropout(true, 7, 2, NULL, x, out, m[0]);
  dropout(true, 7, 2, NULL, x, out, m[1]);
  dropout(true, 7, 3, NULL, x, out, m[2]);
  dropout(true, 8, 2, NULL, x, out, m[3]);
  size_t bytes = pd_tensor_bytes(m[0]);
  assert_memory_equal(pd_tensor_data(m[0]), pd_tensor_data(m[1]), bytes);
  assert_memory_not_equal(pd_tensor_data(m[0]), pd_tensor_data(m[2]), bytes);
  assert_memory_not_equal(pd_tensor_data(m[0]), pd_tensor_data(m[3]), bytes);
  ot_free(x), ot_free(out);
  for (int i = 0; i < 4; i++) ot_free(m[i]);
}

/* Inference: Out is X bit for bit, Mask all ones; the backward pass then
 * passes dOut through unchanged. */
static void test_inference_identity(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    pd_dtype dt = d ? PD_F64 : PD_F32;
    pd_tensor *x = ot_rand(dt, 3, (int64_t[]){5, 3, 7}, 9, -1, 1, 0), *out = ot_out(), *mask = ot_out();
    const char *attrs[] = {"dropout_prob", "f: 0.9", NULL};
    dropout(false, 1, 0, attrs, x, out, mask);
    assert_memory_equal(pd_tensor_data(out), pd_tensor_data(x), pd_tensor_bytes(x));
    for (int64_t i = 0; i < 105; i++) assert_true(pd_tensor_get(mask, i) == 1);
    pd_tensor *g = ot_rand(dt, 3, (int64_t[]){5, 3, 7}, 10, -1, 1, 0), *dx = ot_out();
    pd_error err = {0};
    /* dropout_grad: inputs X Out Mask dOut dMask, output dX */
    if (call("dropout_grad", false, 1, 0, attrs, (pd_tensor *[]){x, out, mask, g, NULL}, (pd_tensor *[]){dx}, &err))
      fail_msg("%s", err.msg);
    assert_memory_equal(pd_tensor_data(dx), pd_tensor_data(g), pd_tensor_bytes(g));
    ot_free(x), ot_free(out), ot_free(mask), ot_free(g), ot_free(dx);
  }
}

/* ot_run uses one seed and step, so every perturbed run draws the same mask
 * and the finite differences see a fixed linear map. Out is checked, Mask's
 * weight left out (it does not depend on X). */
static void test_gradient(void **state) {
  (void)state;
  const double ps[] = {0.5, 0.2, 0};
  for (int k = 0; k < 3; k++) {
    char pa[32];
    snprintf(pa, sizeof pa, "f: %g", ps[k]);
    const char *attrs[] = {"dropout_prob", pa, NULL};
    pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){7, 5}, 21 + (uint64_t)k, -1, 1, 0);
    ot_gradcheck_ex("dropout", attrs, (pd_tensor *[]){x}, 1, 2, (bool[]){true}, (int[]){1, 0}, 1e-6);
    ot_free(x);
  }
}

static void test_shapes_and_errors(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *x = ot_shaped(PD_F32, 4, (int64_t[]){-1, 3, 8, 8}), *out = ot_out(), *mask = ot_out();
  assert_int_equal(ot_infer("dropout", NULL, &x, NULL, (pd_tensor *[]){out, mask}, NULL, NULL), PD_OK);
  ot_assert_dims(out, -1, 3, 8, 8);
  ot_assert_dims(mask, -1, 3, 8, 8);
  pd_tensor *xi = ot_shaped(PD_I32, 1, (int64_t[]){4});
  assert_int_equal(ot_infer("dropout", NULL, &xi, NULL, (pd_tensor *[]){out, mask}, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "input X must be float32 or float64, got int32"));
  pd_tensor *xr = ot_rand(PD_F32, 1, (int64_t[]){4}, 1, -1, 1, 0);
  const char *one[] = {"dropout_prob", "f: 1", NULL};
  msg = ot_run_fail("dropout", one, &xr, NULL, (pd_tensor *[]){out, mask}, NULL);
  assert_non_null(strstr(msg, "\"dropout_prob\" must be >= 0 and < 1, got 1"));
  ot_free(x), ot_free(out), ot_free(mask), ot_free(xi), ot_free(xr);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),      cmocka_unit_test(test_statistics),
      cmocka_unit_test(test_reproducible), cmocka_unit_test(test_inference_identity),
      cmocka_unit_test(test_gradient),     cmocka_unit_test(test_shapes_and_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
