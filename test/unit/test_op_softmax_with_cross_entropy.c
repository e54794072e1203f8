/* test_op_softmax_with_cross_entropy.c — from logits Z [N, C]: Softmax = exp(Z) / sum exp(Z),
 * Loss[i] = log sum_j exp(Z[i, j]) - Z[i, label_i] (soft_label: sum_j L[i, j] (lse_i - Z[i, j])),
 * checked against a float64 loop (float32 and float64; 1, 3, 17, 129 rows); logits 1e4 and
 * -1e4 give the exact finite loss (0, 1e4, 2e4); a label outside [0, C) is an error; shapes
 * with the batch -1; dLogits = (Softmax - onehot) dLoss against finite differences (Label
 * unchecked, with and without a gradient reaching the Softmax output). */
#include "optest.h"

static pd_tensor *rand_labels(int64_t n, int64_t k, uint64_t seed) {
  pd_tensor *l = ot_tensor(PD_I64, 2, (int64_t[]){n, 1});
  uint64_t s = seed;
  for (int64_t i = 0; i < n; i++) PD_DATA(l, int64_t)[i] = (int64_t)(pd_rng_next(&s) % (uint64_t)k);
  return l;
}

/* Rows of non-negative numbers that sum to 1. */
static pd_tensor *rand_dist(pd_dtype dt, int64_t n, int64_t k, uint64_t seed) {
  pd_tensor *p = ot_rand(dt, 2, (int64_t[]){n, k}, seed, 0, 1, 0);
  for (int64_t i = 0; i < n; i++) {
    double s = 0;
    for (int64_t j = 0; j < k; j++) s += pd_tensor_get(p, i * k + j);
    for (int64_t j = 0; j < k; j++) pd_tensor_set(p, i * k + j, pd_tensor_get(p, i * k + j) / s);
  }
  return p;
}

/* Reference in float64: lse = m + log sum exp(z - m); softmax = exp(z - lse); loss from lse. */
static void ref_rows(const pd_tensor *z, const pd_tensor *l, bool soft, int64_t n, int64_t k, double *sm,
                     double *loss) {
  for (int64_t i = 0; i < n; i++) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < k; j++) m = fmax(m, pd_tensor_get(z, i * k + j));
    for (int64_t j = 0; j < k; j++) s += exp(pd_tensor_get(z, i * k + j) - m);
    double lse = m + log(s);
    for (int64_t j = 0; j < k; j++) sm[i * k + j] = exp(pd_tensor_get(z, i * k + j) - lse);
    if (soft) {
      loss[i] = 0;
      for (int64_t j = 0; j < k; j++) loss[i] += pd_tensor_get(l, i * k + j) * (lse - pd_tensor_get(z, i * k + j));
    } else {
      loss[i] = lse - pd_tensor_get(z, i * k + PD_DATA(l, int64_t)[i]);
    }
  }
}

static void check_forward(pd_dtype dt, int64_t n, int64_t k, bool soft) {
  pd_tensor *z = ot_rand(dt, 2, (int64_t[]){n, k}, 3 + (uint64_t)n, -5, 5, 0);
  pd_tensor *l = soft ? rand_dist(dt, n, k, 4) : rand_labels(n, k, 4), *sm = ot_out(), *loss = ot_out();
  const char *attrs[] = {"soft_label", soft ? "b: true" : "b: false", NULL};
  ot_run("softmax_with_cross_entropy", attrs, (pd_tensor *[]){z, l}, NULL, (pd_tensor *[]){sm, loss}, NULL);
  ot_assert_dims(sm, n, k);
  ot_assert_dims(loss, n, 1);
  double *rs = malloc(sizeof(double) * (size_t)(n * k)), *rl = malloc(sizeof(double) * (size_t)n);
  ref_rows(z, l, soft, n, k, rs, rl);
  ot_assert_close(sm, rs, n * k, dt == PD_F32 ? 1e-5 : 1e-13);
  ot_assert_close(loss, rl, n, dt == PD_F32 ? 1e-5 : 1e-13);
  free(rs), free(rl);
  ot_free(z), ot_free(l), ot_free(sm), ot_free(loss);
}

static void test_forward_sizes(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++)
    for (int t = 0; t < 2; t++) {
      pd_dtype dt = t ? PD_F64 : PD_F32;
      check_forward(dt, rows[r], 10, false);
      check_forward(dt, rows[r], 1, false);
      check_forward(dt, rows[r], 33, false);
      check_forward(dt, rows[r], 7, true);
    }
}

/* Logits 1e4 and -1e4: exp overflows and log(softmax) would be log(0) = -inf; the fused
 * loss is exact: 0 for the big one, 1e4 for the 0, 2e4 for the small one. */
static void test_huge_logits(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    pd_tensor *z = ot_tensor(dt, 2, (int64_t[]){4, 3}), *l = ot_tensor(PD_I64, 2, (int64_t[]){4, 1});
    const double v[] = {1e4, -1e4, 0, 1e4, -1e4, 0, 1e4, -1e4, 0, -1e4, -1e4, -1e4};
    const int64_t lab[] = {0, 1, 2, 1};
    const double want[] = {0, 2e4, 1e4, log(3.0)};
    for (int i = 0; i < 12; i++) pd_tensor_set(z, i, v[i]);
    for (int i = 0; i < 4; i++) PD_DATA(l, int64_t)[i] = lab[i];
    pd_tensor *sm = ot_out(), *loss = ot_out();
    ot_run("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z, l}, NULL, (pd_tensor *[]){sm, loss}, NULL);
    for (int i = 0; i < 12; i++) assert_true(isfinite(pd_tensor_get(sm, i)));
    ot_assert_close(loss, want, 4, 1e-6);
    assert_true(pd_tensor_get(sm, 0) == 1 && pd_tensor_get(sm, 1) == 0);
    /* the gradient is finite too: Softmax - onehot */
    pd_tensor *dl = ot_tensor(dt, 2, (int64_t[]){4, 1}), *dz = ot_out();
    for (int i = 0; i < 4; i++) pd_tensor_set(dl, i, 1);
    ot_run("softmax_with_cross_entropy_grad", NULL, (pd_tensor *[]){z, l, sm, loss, NULL, dl}, NULL,
           (pd_tensor *[]){dz, NULL}, NULL);
    const double want_dz[] = {0, 0, 0, 1, -1, 0, 1, 0, -1, 1 / 3.0, 1 / 3.0 - 1, 1 / 3.0};
    ot_assert_close(dz, want_dz, 12, 1e-6);
    ot_free(z), ot_free(l), ot_free(sm), ot_free(loss), ot_free(dl), ot_free(dz);
  }
}

static void test_label_out_of_range(void **state) {
  (void)state;
  pd_tensor *z = ot_rand(PD_F64, 2, (int64_t[]){6, 10}, 5, -1, 1, 0), *l = rand_labels(6, 10, 6);
  pd_tensor *sm = ot_out(), *loss = ot_out();
  PD_DATA(l, int64_t)[5] = 12;
  const char *msg =
      ot_run_fail("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z, l}, NULL, (pd_tensor *[]){sm, loss}, NULL);
  assert_string_equal(msg, "op #0 \"softmax_with_cross_entropy\": label 12 at row 5 is out of range [0, 10)");
  ot_free(z), ot_free(l), ot_free(sm), ot_free(loss);
}

static void test_shapes(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *z = ot_shaped(PD_F32, 2, (int64_t[]){-1, 10}), *l = ot_shaped(PD_I64, 2, (int64_t[]){-1, 1});
  pd_tensor *sm = ot_out(), *loss = ot_out();
  assert_int_equal(
      ot_infer("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z, l}, NULL, (pd_tensor *[]){sm, loss}, NULL, NULL),
      PD_OK);
  ot_assert_dims(sm, -1, 10);
  ot_assert_dims(loss, -1, 1);
  ot_free(z);
  z = ot_shaped(PD_F32, 1, (int64_t[]){10});
  assert_int_equal(
      ot_infer("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z, l}, NULL, (pd_tensor *[]){sm, loss}, NULL, &msg),
      PD_ERR_INPUT);
  assert_non_null(strstr(msg, "input Logits must be [N, C] or [batch, time, ..., C], got [10]"));
  /* [batch, time, C]: a row per step, labels [batch, time] or [batch, time, 1] */
  ot_free(z);
  z = ot_shaped(PD_F32, 3, (int64_t[]){-1, 2, 5});
  assert_int_equal(
      ot_infer("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z, l}, NULL, (pd_tensor *[]){sm, loss}, NULL, &msg),
      PD_ERR_INPUT);
  assert_non_null(strstr(msg, "int64 classes shaped like Logits without its last dim (or with a last dim of 1)"));
  for (int with_one = 0; with_one < 2; with_one++) {
    ot_free(l);
    l = ot_shaped(PD_I64, 2 + with_one, (int64_t[]){-1, 2, 1});
    assert_int_equal(ot_infer("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z, l}, NULL,
                              (pd_tensor *[]){sm, loss}, NULL, NULL),
                     PD_OK);
    ot_assert_dims(sm, -1, 2, 5);
    ot_assert_dims(loss, -1, 2, 1);
  }
  ot_free(z), ot_free(l), ot_free(sm), ot_free(loss);
}

static void test_gradients(void **state) {
  (void)state;
  const bool check[] = {true, false};
  const int loss_only[] = {0, 1};
  pd_tensor *z = ot_rand(PD_F64, 2, (int64_t[]){4, 5}, 31, -2, 2, 0), *l = rand_labels(4, 5, 32);
  ot_gradcheck_ex("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z, l}, 2, 2, check, loss_only, 1e-6);
  /* a gradient reaching Softmax as well (it feeds another op) */
  ot_gradcheck_ex("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z, l}, 2, 2, check, NULL, 1e-6);
  ot_free(l);
  l = rand_dist(PD_F64, 4, 5, 33);
  const char *soft[] = {"soft_label", "b: true", NULL};
  ot_gradcheck_ex("softmax_with_cross_entropy", soft, (pd_tensor *[]){z, l}, 2, 2, check, loss_only, 1e-6);
  ot_free(z), ot_free(l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward_sizes),      cmocka_unit_test(test_huge_logits),
      cmocka_unit_test(test_label_out_of_range), cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
