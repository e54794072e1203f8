/* test_op_pad.c — pad in its three modes over a 3-D and a 4-D X: forward
 * against a reference written per mode (NumPy's np.pad rules: constant,
 * reflect, edge) in float32 and float64, the 4-D one large enough to be
 * split among threads; gradients by finite differences in each mode (a
 * reflect pad as wide as it may be, so that elements are read up to three
 * times per dim); a NaN reaches every output that reads it; the load-time
 * errors (pads of the wrong count, negative, on the batch, too wide for
 * reflect). */
#include "optest.h"

static const char *const modes[] = {"s: \"constant\"", "s: \"reflect\"", "s: \"edge\""};

/* Input index of output o along a dim of n with `before` pads, -1: the value. */
static int64_t ref_src(int mode, int64_t o, int64_t n, int64_t before) {
  int64_t i = o - before;
  if (mode == 0) return i >= 0 && i < n ? i : -1;
  if (mode == 2) return i < 0 ? 0 : i >= n ? n - 1 : i;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
  return i;
}

static void ref_pad(int mode, const pd_tensor *x, const int64_t *pads, double value, double *y, int64_t ny) {
  int nd = x->ndim;
  int64_t out[PD_MAX_DIMS];
  for (int d = 0; d < nd; d++) out[d] = x->dims[d] + pads[d] + pads[nd + d];
  for (int64_t o = 0; o < ny; o++) {
    int64_t rest = o, off = 0, mul = 1;
    bool pad = false;
    for (int d = nd - 1; d >= 0; d--) {
      int64_t s = ref_src(mode, rest % out[d], x->dims[d], pads[d]);
      rest /= out[d];
      if (s < 0) pad = true;
      off += s * mul;
      mul *= x->dims[d];
    }
    y[o] = pad ? value : pd_tensor_get(x, off);
  }
}

static const char *ints(char *buf, size_t size, const int64_t *v, int n) {
  int at = snprintf(buf, size, "ints: [");
  for (int i = 0; i < n; i++) at += snprintf(buf + at, size - (size_t)at, "%s%lld", i ? ", " : "", (long long)v[i]);
  snprintf(buf + at, size - (size_t)at, "]");
  return buf;
}

static void check_forward(int mode, pd_dtype dt, int nd, const int64_t *dims, const int64_t *pads) {
  char pb[128];
  pd_tensor *x = ot_rand(dt, nd, dims, 21 + (uint64_t)mode, -3, 3, 0), *y = ot_out();
  const char *attrs[] = {"pads", ints(pb, sizeof pb, pads, 2 * nd), "mode", modes[mode], "value", "f: 1.5", NULL};
  ot_run("pad", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  assert_int_equal(y->ndim, nd);
  for (int d = 0; d < nd; d++) assert_int_equal(y->dims[d], dims[d] + pads[d] + pads[nd + d]);
  int64_t ny = pd_tensor_numel(y);
  double *r = malloc(sizeof(double) * (size_t)ny);
  ref_pad(mode, x, pads, 1.5, r, ny);
  ot_assert_close(y, r, ny, 0); /* copies: exact */
  free(r);
  ot_free(x), ot_free(y);
}

static void test_forward(void **state) {
  (void)state;
  for (int mode = 0; mode < 3; mode++)
    for (int t = 0; t < 2; t++) {
      pd_dtype dt = t ? PD_F64 : PD_F32;
      check_forward(mode, dt, 3, (int64_t[]){2, 3, 4}, (int64_t[]){0, 2, 1, 0, 1, 3});
      check_forward(mode, dt, 4, (int64_t[]){64, 3, 20, 30}, (int64_t[]){0, 0, 2, 3, 0, 1, 4, 1});
      check_forward(mode, dt, 2, (int64_t[]){5, 1}, (int64_t[]){0, 0, 0, 0}); /* no pads */
    }
  check_forward(0, PD_F64, 2, (int64_t[]){3, 1}, (int64_t[]){0, 3, 0, 2});
  check_forward(2, PD_F64, 2, (int64_t[]){3, 1}, (int64_t[]){0, 3, 0, 2});
}

static void test_gradients(void **state) {
  (void)state;
  char pb[128];
  /* reflect pads up to n - 1: dim 1 of 3 read by its mirror on both sides */
  const int64_t pads[] = {0, 2, 1, 0, 2, 3};
  for (int mode = 0; mode < 3; mode++) {
    pd_tensor *x = ot_rand(PD_F64, 3, (int64_t[]){2, 3, 4}, 30 + (uint64_t)mode, -2, 2, 0);
    const char *attrs[] = {"pads", ints(pb, sizeof pb, pads, 6), "mode", modes[mode], NULL};
    ot_gradcheck("pad", attrs, (pd_tensor *[]){x}, 1, 1);
    ot_free(x);
  }
}

static void test_nan(void **state) {
  (void)state;
  char pb[128];
  const int64_t pads[] = {0, 2, 0, 2};
  for (int mode = 0; mode < 3; mode++) {
    pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){2, 3}, 4, -1, 1, 0), *y = ot_out();
    pd_tensor_set(x, 3, NAN); /* row 1, first element */
    const char *attrs[] = {"pads", ints(pb, sizeof pb, pads, 4), "mode", modes[mode], NULL};
    ot_run("pad", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
    double r[14];
    ref_pad(mode, x, pads, 0, r, 14);
    int nans = 0;
    for (int i = 0; i < 14; i++) {
      if (isnan(r[i]) != isnan(pd_tensor_get(y, i))) fail_msg("mode %d: Out[%d] = %g", mode, i, pd_tensor_get(y, i));
      nans += isnan(r[i]);
    }
    assert_int_equal(nans, mode == 0 ? 1 : mode == 1 ? 2 : 3);
    ot_free(x), ot_free(y);
  }
}

static void test_errors(void **state) {
  (void)state;
  pd_tensor *x = ot_shaped(PD_F32, 3, (int64_t[]){-1, 3, 4}), *y = ot_out();
  const char *msg;
  const struct {
    const char *pads, *mode, *want;
  } bad[] = {
      {"ints: [0, 1, 1, 0]", "s: \"constant\"",
       "attribute \"pads\" has 4 values; X of shape [-1, 3, 4] (rank 3) needs 6"},
      {"ints: [1, 0, 0, 0, 0, 0]", "s: \"constant\"", "the batch dim (dim 0) must not be padded, got pads 1 before"},
      {"ints: [0, 3, 0, 0, 0, 0]", "s: \"reflect\"",
       "mode \"reflect\" needs pads smaller than the dim: dim 1 of X (shape [-1, 3, 4]) is 3, pads 3 before"},
  };
  for (int i = 0; i < 3; i++) {
    const char *attrs[] = {"pads", bad[i].pads, "mode", bad[i].mode, NULL};
    assert_int_equal(ot_infer("pad", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL, &msg), PD_ERR_INPUT);
    if (!strstr(msg, bad[i].want)) fail_msg("case %d: %s", i, msg);
  }
  const char *neg[] = {"pads", "ints: [0, -1, 0, 0, 0, 0]", NULL};
  assert_int_not_equal(ot_infer("pad", neg, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL, &msg), PD_OK);
  assert_non_null(strstr(msg, "must be >= 0"));
  const char *ok[] = {"pads", "ints: [0, 2, 3, 0, 2, 3]", "mode", "s: \"reflect\"", NULL};
  assert_int_equal(ot_infer("pad", ok, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL, &msg), PD_OK);
  ot_assert_dims(y, -1, 7, 10);
  ot_free(x), ot_free(y);
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
