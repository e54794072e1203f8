/* test_op_concat.c — concat along axis a: with X_k of dims [..., d_k, ...],
 *   Out[i..., o_k + j, ...] = X_k[i..., j, ...],  o_k = d_0 + ... + d_(k-1),
 * checked against an index-by-index float64 loop for 1 to 3 inputs, axes
 * 0, 1, 2 and negative, float32/float64/int64, odd sizes; the -1 batch at
 * load; errors naming the input and both shapes; dX_k = the slice of dOut,
 * by finite differences for 3 inputs on axes 0 and 1; and in a net whose
 * concat also reads data (no gradient), the whole net's gradients. */
#include "optest.h"

#include "core/backward.h"
#include "core/gradcheck.h"
#include "core/initializer.h"
#include "core/net.h"
#include "core/scope.h"

/* The reference: for each element of Out, find the input and index it came from. */
static double *ref_concat(pd_tensor *const *xs, int n, int axis, int64_t *numel) {
  const pd_tensor *x0 = xs[0];
  int64_t outer = 1, inner = 1, total = 0;
  for (int d = 0; d < axis; d++) outer *= x0->dims[d];
  for (int d = axis + 1; d < x0->ndim; d++) inner *= x0->dims[d];
  for (int k = 0; k < n; k++) total += xs[k]->dims[axis];
  double *ref = malloc(sizeof(double) * (size_t)(outer * total * inner + 1));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t a = 0; a < total; a++)
      for (int64_t i = 0; i < inner; i++) {
        int k = 0;
        int64_t j = a;
        while (j >= xs[k]->dims[axis]) j -= xs[k]->dims[axis], k++;
        ref[(o * total + a) * inner + i] = pd_tensor_get(xs[k], (o * xs[k]->dims[axis] + j) * inner + i);
      }
  *numel = outer * total * inner;
  return ref;
}

static void check_forward(pd_dtype dt, int n, int ndim, const int64_t *base, int64_t axis_attr) {
  int axis = (int)(axis_attr < 0 ? axis_attr + ndim : axis_attr);
  pd_tensor *xs[3], *out = ot_out();
  for (int k = 0; k < n; k++) {
    int64_t dims[4];
    memcpy(dims, base, sizeof(int64_t) * (size_t)ndim);
    dims[axis] = 1 + 2 * k; /* 1, 3, 5 */
    xs[k] = ot_rand(dt, ndim, dims, 1 + (uint64_t)k, -100, 100, 0);
  }
  char a[32];
  snprintf(a, sizeof a, "i: %lld", (long long)axis_attr);
  const char *attrs[] = {"axis", a, NULL};
  ot_run("concat", attrs, xs, (int[]){n}, (pd_tensor *[]){out}, NULL);
  int64_t numel;
  double *ref = ref_concat(xs, n, axis, &numel);
  assert_int_equal(out->dims[axis], n * n); /* 1 + 3 + 5 */
  assert_int_equal(pd_tensor_numel(out), numel);
  ot_assert_close(out, ref, numel, 0); /* copies: exact */
  free(ref);
  for (int k = 0; k < n; k++) ot_free(xs[k]);
  ot_free(out);
}

static void test_forward(void **state) {
  (void)state;
  const pd_dtype dts[] = {PD_F32, PD_F64, PD_I64};
  for (int t = 0; t < 3; t++)
    for (int n = 1; n <= 3; n++) {
      check_forward(dts[t], n, 2, (int64_t[]){17, 3}, 0);
      check_forward(dts[t], n, 2, (int64_t[]){17, 3}, 1);
      check_forward(dts[t], n, 4, (int64_t[]){3, 5, 7, 2}, 1);
      check_forward(dts[t], n, 4, (int64_t[]){3, 5, 7, 2}, 2);
      check_forward(dts[t], n, 4, (int64_t[]){3, 5, 7, 2}, -1);
      check_forward(dts[t], n, 3, (int64_t[]){129, 2, 3}, -3);
    }
}

static void test_infer_with_batch(void **state) {
  (void)state;
  pd_tensor *a = ot_shaped(PD_F32, 2, (int64_t[]){-1, 3}), *b = ot_shaped(PD_F32, 2, (int64_t[]){-1, 4});
  pd_tensor *c = ot_shaped(PD_F32, 2, (int64_t[]){2, 3}), *out = ot_out();
  const char *ax1[] = {"axis", "i: 1", NULL}, *ax0[] = {"axis", "i: 0", NULL};
  assert_int_equal(ot_infer("concat", ax1, (pd_tensor *[]){a, b, a}, (int[]){3}, &out, NULL, NULL), PD_OK);
  ot_assert_dims(out, -1, 10);
  assert_int_equal(ot_infer("concat", ax0, (pd_tensor *[]){a, c}, (int[]){2}, &out, NULL, NULL), PD_OK);
  ot_assert_dims(out, -1, 3);
  assert_int_equal(ot_infer("concat", ax0, (pd_tensor *[]){c, c}, (int[]){2}, &out, NULL, NULL), PD_OK);
  ot_assert_dims(out, 4, 3);
  ot_free(a), ot_free(b), ot_free(c), ot_free(out);
}

/* An input with 0 along the axis adds nothing (and is not read). */
static void test_empty_input(void **state) {
  (void)state;
  pd_tensor *a = ot_rand(PD_F64, 2, (int64_t[]){2, 3}, 1, -1, 1, 0), *e = ot_tensor(PD_F64, 2, (int64_t[]){2, 0});
  pd_tensor *out = ot_out(), *g = ot_rand(PD_F64, 2, (int64_t[]){2, 3}, 2, -1, 1, 0), *da = ot_out(), *de = ot_out();
  const char *ax1[] = {"axis", "i: 1", NULL};
  ot_run("concat", ax1, (pd_tensor *[]){e, a, e}, (int[]){3}, &out, NULL);
  ot_assert_dims(out, 2, 3);
  assert_memory_equal(pd_tensor_data(out), pd_tensor_data(a), 6 * sizeof(double));
  ot_run("concat_grad", ax1, (pd_tensor *[]){e, a, out, g}, (int[]){2, 1, 1}, (pd_tensor *[]){de, da}, (int[]){2});
  ot_assert_dims(de, 2, 0);
  assert_memory_equal(pd_tensor_data(da), pd_tensor_data(g), 6 * sizeof(double));
  ot_free(a), ot_free(e), ot_free(out), ot_free(g), ot_free(da), ot_free(de);
}

static void test_errors(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *a = ot_shaped(PD_F32, 3, (int64_t[]){-1, 3, 5}), *b = ot_shaped(PD_F32, 3, (int64_t[]){-1, 4, 6});
  pd_tensor *c = ot_shaped(PD_F32, 2, (int64_t[]){2, 3}), *d = ot_shaped(PD_F64, 3, (int64_t[]){-1, 3, 5});
  pd_tensor *out = ot_out();
  const char *ax1[] = {"axis", "i: 1", NULL}, *ax3[] = {"axis", "i: 3", NULL}, *axm4[] = {"axis", "i: -4", NULL};
  assert_int_equal(ot_infer("concat", ax1, (pd_tensor *[]){a, a, b}, (int[]){3}, &out, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "input X[2] (\"\") has shape [-1, 4, 6] but X[0] (\"\") has shape [-1, 3, 5]; all dims "
                              "but axis 1 must be equal"));
  assert_int_equal(ot_infer("concat", ax1, (pd_tensor *[]){a, c}, (int[]){2}, &out, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "input X[1] (\"\") has shape [2, 3] but X[0] (\"\") has shape [-1, 3, 5]"));
  assert_int_equal(ot_infer("concat", ax1, (pd_tensor *[]){a, d}, (int[]){2}, &out, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "input X[1] (\"\") is float64 but X[0] (\"\") is float32"));
  assert_int_equal(ot_infer("concat", ax3, (pd_tensor *[]){a, a}, (int[]){2}, &out, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "axis 3 is out of range for X[0] (\"\") of shape [-1, 3, 5] (rank 3)"));
  assert_int_equal(ot_infer("concat", axm4, (pd_tensor *[]){a, a}, (int[]){2}, &out, NULL, &msg), PD_ERR_INPUT);
  assert_non_null(strstr(msg, "axis -4 is out of range"));
  ot_free(a), ot_free(b), ot_free(c), ot_free(d), ot_free(out);
}

/* ot_gradcheck takes one tensor per slot; X here holds three, so the check
 * is spelled out: L = <Out, G>, dL/dX_k from concat_grad against
 * (L(x + h) - L(x - h)) / 2h for every element of every input. */
static void check_gradient(int64_t axis) {
  int64_t shapes[3][3] = {{2, 3, 2}, {2, 3, 2}, {2, 3, 2}};
  for (int k = 0; k < 3; k++) shapes[k][axis] = 1 + k;
  pd_tensor *xs[3], *dx[3], *out = ot_out();
  for (int k = 0; k < 3; k++) xs[k] = ot_rand(PD_F64, 3, shapes[k], 31 + (uint64_t)k, -1, 1, 0), dx[k] = ot_out();
  char a[32];
  snprintf(a, sizeof a, "i: %lld", (long long)axis);
  const char *attrs[] = {"axis", a, NULL};
  ot_run("concat", attrs, xs, (int[]){3}, (pd_tensor *[]){out}, NULL);
  pd_tensor *g = ot_rand(PD_F64, out->ndim, out->dims, 40, -1, 1, 0);
  /* concat_grad: inputs X... Out dOut, outputs dX... */
  ot_run("concat_grad", attrs, (pd_tensor *[]){xs[0], xs[1], xs[2], out, g}, (int[]){3, 1, 1}, dx, (int[]){3});
  const double h = 1e-5;
  for (int k = 0; k < 3; k++) {
    assert_true(pd_dims_equal(dx[k]->ndim, dx[k]->dims, 3, shapes[k]));
    double *v = PD_DATA(xs[k], double);
    for (int64_t i = 0; i < pd_tensor_numel(xs[k]); i++) {
      double keep = v[i];
      v[i] = keep + h;
      double lp = ot_loss("concat", attrs, xs, (int[]){3}, 1, &g);
      v[i] = keep - h;
      double lm = ot_loss("concat", attrs, xs, (int[]){3}, 1, &g);
      v[i] = keep;
      double num = (lp - lm) / (2 * h), ana = pd_tensor_get(dx[k], i);
      double e = fabs(ana - num) / fmax(fmax(fabs(ana), fabs(num)), 1e-3);
      if (!(e <= 1e-6))
        fail_msg("concat axis %lld: d/dX[%d] [%lld]: analytic %.12g, numeric %.12g", (long long)axis, k, (long long)i,
                 ana, num);
    }
  }
  for (int k = 0; k < 3; k++) ot_free(xs[k]), ot_free(dx[k]);
  ot_free(out), ot_free(g);
}

static void test_gradients(void **state) {
  (void)state;
  check_gradient(0);
  check_gradient(1);
  check_gradient(2);
  pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){3, 4}, 50, -1, 1, 0);
  ot_gradcheck("concat", (const char *[]){"axis", "i: 1", NULL}, (pd_tensor *[]){x}, 1, 1);
  ot_free(x);
}

/* In a net, the data input x needs no gradient, so the backward pass gives
 * concat_grad fewer dX than X: each dX must still get its own slice (a is
 * read twice, so it gets two partial gradients, summed). */
static const char *NET =
    "var { name: \"x\" shape: [-1, 3] }\n"
    "op { type: \"fc\" inputs: [\"x\", \"w\", \"b\"] outputs: \"a\" attrs { key: \"size\" value { i: 2 } } "
    "attrs { key: \"act\" value { s: \"tanh\" } } }\n"
    "op { type: \"fc\" inputs: [\"x\", \"v\"] outputs: \"c\" attrs { key: \"size\" value { i: 4 } } }\n"
    "op { type: \"concat\" inputs: [\"x\", \"a\", \"x\", \"c\", \"a\"] outputs: \"cat\" "
    "attrs { key: \"axis\" value { i: -1 } } }\n"
    "op { type: \"fc\" inputs: [\"cat\", \"w2\"] outputs: \"h\" attrs { key: \"size\" value { i: 2 } } "
    "attrs { key: \"act\" value { s: \"sigmoid\" } } }\n"
    "op { type: \"mul\" inputs: [\"h\", \"w3\"] outputs: \"o\" }\n"
    "var { name: \"w3\" shape: [2, 1] kind: PARAM }\n"
    "op { type: \"mean\" inputs: \"o\" outputs: \"avg\" }\n";

static void test_in_a_net(void **state) {
  (void)state;
  pd_net *net = NULL;
  pd_error err = {0};
  pd_net_opts o = {.float_dtype = PD_F64};
  if (pd_net_from_text("t.pbtxt", NET, strlen(NET), &o, &net, &err)) fail_msg("load: %s", err.msg);
  int cat = pd_net_var(net, "cat");
  ot_assert_dims(&net->vars[cat].meta, -1, 14);
  if (pd_net_add_backward(net, "avg", &err) || pd_net_select_kernels(net, PD_CPU, &err)) fail_msg("%s", err.msg);
  assert_int_equal(pd_net_var(net, "x@GRAD"), -1);
  pd_scope *scope = pd_scope_new(NULL);
  pd_runner r;
  assert_int_equal(pd_init_persistables(net, scope, NULL, 3, &err), PD_OK);
  assert_int_equal(pd_runner_init(&r, net, scope, NULL, &err), PD_OK);
  pd_tensor *x = r.t[pd_net_var(net, "x")];
  assert_int_equal(pd_tensor_set_dims(x, 2, (int64_t[]){5, 3}, &err), PD_OK);
  assert_int_equal(pd_tensor_alloc(x, &err), PD_OK);
  uint64_t s = 7;
  for (int i = 0; i < 15; i++) pd_tensor_set(x, i, 2 * pd_rng_uniform(&s) - 1);
  pd_gradcheck_result res;
  if (pd_gradcheck_run(&r, 0, 1, 1e-6, &res, &err)) fail_msg("%s", err.msg);
  if (!(res.worst_err <= 1e-6))
    fail_msg("%s[%lld]: analytic %.12g numeric %.12g error %g", res.worst_var, (long long)res.worst_index, res.analytic,
             res.numeric, res.worst_err);
  assert_int_equal(res.vars, 5); /* w b v w2 w3 */
  pd_runner_free(&r);
  pd_scope_free(scope);
  pd_net_free(net);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward), cmocka_unit_test(test_infer_with_batch), cmocka_unit_test(test_empty_input),
      cmocka_unit_test(test_errors),  cmocka_unit_test(test_gradients),        cmocka_unit_test(test_in_a_net),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
