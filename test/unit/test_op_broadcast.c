/* test_op_broadcast.c — broadcast_add/sub/mul/div: Out[i] = X[ix(i)] op
 * Y[iy(i)] with NumPy broadcasting: Out's dims are the pairwise larger of X's
 * and Y's aligned from the last dim, and ix/iy take index 0 along a missing
 * or size-1 dim. Checked against a float64 loop over multi-indices in
 * float32, float64 and the integer dtypes (wrapping, truncating division);
 * shapes at load with -1; errors; gradients (each operand's summed over its
 * repeated dims) by finite differences. */
#include "optest.h"
#include "cpu/parallel.h"

static const char *const ops[] = {"broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div"};

/* Flat index into t (rank tn) for Out's multi-index idx (rank on). */
static int64_t src_index(const int64_t *idx, int on, const pd_tensor *t) {
  int64_t k = 0;
  for (int d = 0; d < t->ndim; d++) k = k * t->dims[d] + (t->dims[d] == 1 ? 0 : idx[on - t->ndim + d]);
  return k;
}

static double apply(int op, double a, double b) {
  switch (op) {
  case 0:
    return a + b;
  case 1:
    return a - b;
  case 2:
    return a * b;
  default:
    return a / b;
  }
}

static void check_forward(pd_dtype dt, int xn, const int64_t *xd, int yn, const int64_t *yd, int on,
                          const int64_t *od) {
  for (int op = 0; op < 4; op++) {
    /* Y away from 0 so division is well conditioned */
    pd_tensor *x = ot_rand(dt, xn, xd, 1, -2, 2, 0), *y = ot_rand(dt, yn, yd, 2, 0.5, 2, 0), *out = ot_out();
    ot_run(ops[op], NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
    char a[128], b[128];
    if (!pd_dims_equal(out->ndim, out->dims, on, od))
      fail_msg("%s: shape %s, expected %s", ops[op], pd_dims_str(out->ndim, out->dims, a, sizeof a),
               pd_dims_str(on, od, b, sizeof b));
    int64_t n = pd_tensor_numel(out), idx[PD_MAX_DIMS];
    double *ref = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) {
      int64_t r = i;
      for (int d = on - 1; d >= 0; d--) idx[d] = r % od[d], r /= od[d];
      ref[i] = apply(op, pd_tensor_get(x, src_index(idx, on, x)), pd_tensor_get(y, src_index(idx, on, y)));
    }
    ot_assert_close(out, ref, n, dt == PD_F32 ? 1e-6 : 1e-15);
    free(ref);
    ot_free(x), ot_free(y), ot_free(out);
  }
}

static void test_shapes(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    check_forward(dt, 2, (int64_t[]){3, 4}, 2, (int64_t[]){3, 4}, 2, (int64_t[]){3, 4});    /* same */
    check_forward(dt, 3, (int64_t[]){2, 3, 4}, 1, (int64_t[]){4}, 3, (int64_t[]){2, 3, 4}); /* row */
    check_forward(dt, 1, (int64_t[]){4}, 3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){2, 3, 4}); /* X repeats */
    check_forward(dt, 2, (int64_t[]){3, 1}, 2, (int64_t[]){1, 5}, 2, (int64_t[]){3, 5});    /* outer */
    check_forward(dt, 4, (int64_t[]){2, 3, 4, 5}, 3, (int64_t[]){3, 1, 1}, 4, (int64_t[]){2, 3, 4, 5});
    check_forward(dt, 2, (int64_t[]){3, 5}, 0, NULL, 2, (int64_t[]){3, 5}); /* rank-0 scalar */
    check_forward(dt, 0, NULL, 0, NULL, 0, NULL);
    check_forward(dt, 2, (int64_t[]){0, 4}, 1, (int64_t[]){4}, 2, (int64_t[]){0, 4}); /* empty */
  }
}

/* uint8 wraps modulo 256 and divides truncating, as NumPy's uint8 does;
 * int32 wraps instead of overflowing; an integer division by 0 gives 0. */
static void test_integers(void **state) {
  (void)state;
  pd_tensor *x = ot_tensor(PD_U8, 1, (int64_t[]){3}), *y = ot_tensor(PD_U8, 1, (int64_t[]){3}), *out = ot_out();
  const double xv[] = {250, 7, 9}, yv[] = {10, 2, 0};
  const double want[4][3] = {{4, 9, 9}, {240, 5, 9}, {196, 14, 0}, {25, 3, 0}};
  for (int i = 0; i < 3; i++) pd_tensor_set(x, i, xv[i]), pd_tensor_set(y, i, yv[i]);
  for (int op = 0; op < 4; op++) {
    ot_run(ops[op], NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
    assert_int_equal(out->dtype, PD_U8);
    for (int i = 0; i < 3; i++) assert_true(pd_tensor_get(out, i) == want[op][i]);
  }
  pd_tensor *a = ot_tensor(PD_I32, 1, (int64_t[]){2}), *b = ot_tensor(PD_I32, 1, (int64_t[]){1});
  pd_tensor_set(a, 0, 2147483647), pd_tensor_set(a, 1, -7), pd_tensor_set(b, 0, 2);
  ot_run("broadcast_add", NULL, (pd_tensor *[]){a, b}, NULL, (pd_tensor *[]){out}, NULL);
  assert_true(pd_tensor_get(out, 0) == -2147483647.0 && pd_tensor_get(out, 1) == -5);
  ot_run("broadcast_div", NULL, (pd_tensor *[]){a, b}, NULL, (pd_tensor *[]){out}, NULL);
  assert_true(pd_tensor_get(out, 0) == 1073741823 && pd_tensor_get(out, 1) == -3); /* toward zero */
  ot_free(x), ot_free(y), ot_free(out), ot_free(a), ot_free(b);
}

static void test_infer_and_errors(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *x = ot_shaped(PD_F32, 2, (int64_t[]){-1, 4}), *out = ot_out();
  pd_tensor *y = ot_shaped(PD_F32, 3, (int64_t[]){2, 1, 4}), *bad = ot_shaped(PD_F32, 1, (int64_t[]){3});
  pd_tensor *yd = ot_shaped(PD_F64, 1, (int64_t[]){4});
  assert_int_equal(ot_infer("broadcast_mul", NULL, (pd_tensor *[]){x, y}, NULL, &out, NULL, NULL), PD_OK);
  ot_assert_dims(out, 2, -1, 4);
  assert_int_equal(ot_infer("broadcast_mul", NULL, (pd_tensor *[]){x, bad}, NULL, &out, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "X of shape [-1, 4] and Y of shape [3] do not broadcast: dim 1 is 4 against 3"));
  assert_int_equal(ot_infer("broadcast_sub", NULL, (pd_tensor *[]){x, yd}, NULL, &out, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "X and Y must have one dtype, got float32 and float64"));
  ot_free(x), ot_free(y), ot_free(bad), ot_free(yd), ot_free(out);
}

static void gradcheck(int xn, const int64_t *xd, int yn, const int64_t *yd) {
  for (int op = 0; op < 4; op++) {
    pd_tensor *x = ot_rand(PD_F64, xn, xd, 21, -1, 1, 0), *y = ot_rand(PD_F64, yn, yd, 22, 0.5, 1.5, 0);
    ot_gradcheck(ops[op], NULL, (pd_tensor *[]){x, y}, 2, 1);
    ot_free(x), ot_free(y);
  }
}

static void test_gradients(void **state) {
  (void)state;
  gradcheck(2, (int64_t[]){3, 4}, 2, (int64_t[]){3, 4});
  gradcheck(3, (int64_t[]){2, 3, 4}, 1, (int64_t[]){4});
  gradcheck(1, (int64_t[]){4}, 3, (int64_t[]){2, 3, 4});
  gradcheck(2, (int64_t[]){3, 1}, 2, (int64_t[]){1, 5});
  gradcheck(3, (int64_t[]){2, 3, 4}, 0, NULL);
}

/* Same shapes long enough to be split on the pool (parts of
 * PD_ELEMENTWISE_GRAIN elements): Out and both gradients are the elementwise
 * formulas exactly, on 1, 2 and 3 threads. */
static void test_same_shape_parts(void **state) {
  (void)state;
  const int64_t d[2] = {7, 4099};
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = t ? PD_F64 : PD_F32;
    for (int op = 0; op < 4; op++)
      for (int threads = 1; threads <= 3; threads++) {
        pd_set_threads(threads);
        pd_tensor *x = ot_rand(dt, 2, d, 3, -2, 2, 0), *y = ot_rand(dt, 2, d, 4, 0.5, 2, 0);
        pd_tensor *g = ot_rand(dt, 2, d, 5, -1, 1, 0), *out = ot_out(), *dx = ot_out(), *dy = ot_out();
        ot_run(ops[op], NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
        char grad[32];
        snprintf(grad, sizeof grad, "%s_grad", ops[op]);
        ot_run(grad, NULL, (pd_tensor *[]){x, y, out, g}, NULL, (pd_tensor *[]){dx, dy}, NULL);
        for (int64_t i = 0; i < d[0] * d[1]; i++) {
          double a = pd_tensor_get(x, i), b = pd_tensor_get(y, i), e = pd_tensor_get(g, i), o, ga, gb;
          if (dt == PD_F32) { /* each result rounded to float as the kernel computes it */
            float af = (float)a, bf = (float)b, ef = (float)e;
            o = op == 0 ? af + bf : op == 1 ? af - bf : op == 2 ? af * bf : af / bf;
            ga = op == 0 || op == 1 ? ef : op == 2 ? ef * bf : ef / bf;
            gb = op == 0 ? ef : op == 1 ? -ef : op == 2 ? ef * af : -ef * af / (bf * bf);
          } else {
            o = apply(op, a, b);
            ga = op == 0 || op == 1 ? e : op == 2 ? e * b : e / b;
            gb = op == 0 ? e : op == 1 ? -e : op == 2 ? e * a : -e * a / (b * b);
          }
          if (pd_tensor_get(out, i) != o || pd_tensor_get(dx, i) != ga || pd_tensor_get(dy, i) != gb)
            fail_msg("%s, %d threads, element %lld: out %.17g dx %.17g dy %.17g, want %.17g %.17g %.17g", ops[op],
                     threads, (long long)i, pd_tensor_get(out, i), pd_tensor_get(dx, i), pd_tensor_get(dy, i), o, ga,
                     gb);
        }
        ot_free(x), ot_free(y), ot_free(g), ot_free(out), ot_free(dx), ot_free(dy);
      }
  }
  pd_set_threads(0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shapes),           cmocka_unit_test(test_integers),
      cmocka_unit_test(test_infer_and_errors), cmocka_unit_test(test_gradients),
      cmocka_unit_test(test_same_shape_parts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
