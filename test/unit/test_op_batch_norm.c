/* test_op_batch_norm.c — batch_norm over X [N, C, S...] per channel k:
 *   training:  mean_k, var_k = the batch's mean and biased variance over the
 *              M = N·S values of channel k;
 *              Y = (X - mean_k) / sqrt(var_k + eps) · Scale_k + Bias_k;
 *              Mean_k <- momentum · Mean_k + (1 - momentum) · mean_k,
 *              Variance_k <- momentum · Variance_k + (1 - momentum) · var_k · M / (M - 1)
 *              (in place: MeanOut is the Mean tensor);
 *   inference: the same Y with the running Mean and Variance, which stay.
 * Checked against float64 loops for odd sizes in float32 and float64, over
 * several steps; gradients of X, Scale and Bias against finite differences
 * (float64, 1e-6) in both modes; shapes, errors; and inside a net: kinds,
 * initial values (Scale 1, Bias 0, Mean 0, Variance 1), no gradient into the
 * running statistics, the whole net's gradients. */
#include "optest.h"

#include "core/backward.h"
#include "core/gradcheck.h"
#include "core/initializer.h"
#include "core/net.h"
#include "core/scope.h"

/* Runs batch_norm once with MeanOut/VarianceOut = Mean/Variance (in place). */
static pd_status bn_call(bool training, const char *const *attrs, pd_tensor *x, pd_tensor *scale, pd_tensor *bias,
                         pd_tensor *mean, pd_tensor *var, pd_tensor *y, pd_error *err) {
  pd_opcall call;
  pd_exec exec = {.training = training, .seed = 1, .threads = 1};
  pd_status st = pd_opcall_init(&call, "batch_norm", attrs, (pd_tensor *[]){x, scale, bias, mean, var}, NULL,
                                (pd_tensor *[]){y, mean, var}, NULL, err);
  if (!st) st = pd_opcall_run(&call, &exec, err);
  pd_opcall_free(&call);
  return st;
}

static void bn_run(bool training, const char *const *attrs, pd_tensor *x, pd_tensor *scale, pd_tensor *bias,
                   pd_tensor *mean, pd_tensor *var, pd_tensor *y) {
  pd_error err = {0};
  if (bn_call(training, attrs, x, scale, bias, mean, var, y, &err)) fail_msg("batch_norm: %s", err.msg);
}

/* Channel statistics of X [N, C, S...] in float64: mean and biased variance. */
static void ref_stats(const pd_tensor *x, double *mean, double *var) {
  int64_t n = x->dims[0], ch = x->dims[1], sp = pd_tensor_numel(x) / (n * ch);
  for (int64_t k = 0; k < ch; k++) {
    double s = 0, q = 0;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < sp; j++) s += pd_tensor_get(x, (i * ch + k) * sp + j);
    mean[k] = s / (double)(n * sp);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < sp; j++) {
        double d = pd_tensor_get(x, (i * ch + k) * sp + j) - mean[k];
        q += d * d;
      }
    var[k] = q / (double)(n * sp);
  }
}

/* Y for given per-channel statistics. */
static double *ref_y(const pd_tensor *x, const pd_tensor *scale, const pd_tensor *bias, const double *mean,
                     const double *var, double eps) {
  int64_t n = x->dims[0], ch = x->dims[1], sp = pd_tensor_numel(x) / (n * ch);
  double *y = malloc(sizeof(double) * (size_t)pd_tensor_numel(x));
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = 0; k < ch; k++)
      for (int64_t j = 0; j < sp; j++) {
        int64_t e = (i * ch + k) * sp + j;
        y[e] = (pd_tensor_get(x, e) - mean[k]) / sqrt(var[k] + eps) * pd_tensor_get(scale, k) + pd_tensor_get(bias, k);
      }
  return y;
}

static pd_tensor *copy_of(const pd_tensor *t) {
  pd_tensor *c = ot_tensor(t->dtype, t->ndim, t->dims);
  memcpy(pd_tensor_data(c), pd_tensor_data(t), pd_tensor_bytes(t));
  return c;
}

/* Training: Y from the batch statistics, running statistics moved toward
 * them (momentum 0.9 by default), for [N, C] and [N, C, H, W]. */
static void check_training(pd_dtype dt, int ndim, const int64_t *dims) {
  int64_t ch = dims[1], numel = 1;
  for (int d = 0; d < ndim; d++) numel *= dims[d];
  int64_t m = numel / ch;
  pd_tensor *x = ot_rand(dt, ndim, dims, 1, -2, 3, 0), *y = ot_out();
  pd_tensor *scale = ot_rand(dt, 1, &ch, 2, 0.5, 1.5, 0), *bias = ot_rand(dt, 1, &ch, 3, -1, 1, 0);
  pd_tensor *mean = ot_rand(dt, 1, &ch, 4, -1, 1, 0), *var = ot_rand(dt, 1, &ch, 5, 0.5, 2, 0);
  double bm[64], bv[64], want_mean[64], want_var[64], tol = dt == PD_F32 ? 2e-6 : 1e-12;
  ref_stats(x, bm, bv);
  for (int64_t k = 0; k < ch; k++) {
    want_mean[k] = 0.9 * pd_tensor_get(mean, k) + 0.1 * bm[k];
    want_var[k] = 0.9 * pd_tensor_get(var, k) + 0.1 * bv[k] * (double)m / (double)(m - 1);
  }
  double *want_y = ref_y(x, scale, bias, bm, bv, 1e-5);
  bn_run(true, NULL, x, scale, bias, mean, var, y);
  assert_true(pd_dims_equal(y->ndim, y->dims, ndim, dims));
  ot_assert_close(y, want_y, numel, tol);
  ot_assert_close(mean, want_mean, ch, tol);
  ot_assert_close(var, want_var, ch, tol);
  free(want_y);
  ot_free(x), ot_free(y), ot_free(scale), ot_free(bias), ot_free(mean), ot_free(var);
}

static void test_training_forward(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    pd_dtype dt = d ? PD_F64 : PD_F32;
    check_training(dt, 4, (int64_t[]){3, 5, 3, 7});
    check_training(dt, 4, (int64_t[]){1, 3, 1, 2}); /* one image: M = 2 */
    check_training(dt, 2, (int64_t[]){7, 4});
    check_training(dt, 2, (int64_t[]){129, 3});
    check_training(dt, 3, (int64_t[]){5, 2, 11});
  }
}

/* Inference: Y from the running statistics, which are left bit for bit as
 * they were; epsilon and momentum attributes honoured. */
static void test_inference(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    pd_dtype dt = d ? PD_F64 : PD_F32;
    int64_t dims[4] = {4, 3, 5, 3}, ch = 3;
    pd_tensor *x = ot_rand(dt, 4, dims, 11, -2, 2, 0), *y = ot_out();
    pd_tensor *scale = ot_rand(dt, 1, &ch, 12, 0.5, 1.5, 0), *bias = ot_rand(dt, 1, &ch, 13, -1, 1, 0);
    pd_tensor *mean = ot_rand(dt, 1, &ch, 14, -1, 1, 0), *var = ot_rand(dt, 1, &ch, 15, 0.01, 2, 0);
    pd_tensor *mean0 = copy_of(mean), *var0 = copy_of(var);
    double rm[3], rv[3];
    for (int k = 0; k < 3; k++) rm[k] = pd_tensor_get(mean, k), rv[k] = pd_tensor_get(var, k);
    double *want = ref_y(x, scale, bias, rm, rv, 0.25);
    const char *attrs[] = {"epsilon", "f: 0.25", "momentum", "f: 0.5", NULL};
    bn_run(false, attrs, x, scale, bias, mean, var, y);
    ot_assert_close(y, want, 180, dt == PD_F32 ? 2e-6 : 1e-12);
    assert_memory_equal(pd_tensor_data(mean), pd_tensor_data(mean0), pd_tensor_bytes(mean));
    assert_memory_equal(pd_tensor_data(var), pd_tensor_data(var0), pd_tensor_bytes(var));
    /* the same X in training mode normalises with the batch's statistics instead */
    bn_run(true, attrs, x, scale, bias, mean, var, y);
    assert_true(ot_max_err(y, want, 180, 1e-6) > 1e-3);
    free(want);
    ot_free(x), ot_free(y), ot_free(scale), ot_free(bias), ot_free(mean), ot_free(var), ot_free(mean0), ot_free(var0);
  }
}

/* Five training steps on different batches, momentum 0.7: the running
 * statistics follow the recurrence; then inference uses where they ended. */
static void test_running_stats_over_steps(void **state) {
  (void)state;
  int64_t dims[4] = {6, 4, 3, 3}, ch = 4, m = 54;
  pd_tensor *scale = ot_rand(PD_F64, 1, &ch, 21, 0.5, 1.5, 0), *bias = ot_rand(PD_F64, 1, &ch, 22, -1, 1, 0);
  pd_tensor *mean = ot_tensor(PD_F64, 1, &ch), *var = ot_tensor(PD_F64, 1, &ch), *y = ot_out();
  double rm[4] = {0, 0, 0, 0}, rv[4] = {1, 1, 1, 1};
  for (int k = 0; k < 4; k++) pd_tensor_set(mean, k, 0), pd_tensor_set(var, k, 1);
  const char *attrs[] = {"momentum", "f: 0.7", NULL};
  for (int step = 0; step < 5; step++) {
    pd_tensor *x = ot_rand(PD_F64, 4, dims, 100 + (uint64_t)step, -1 + step, 2 + 2 * step, 0);
    double bm[4], bv[4];
    ref_stats(x, bm, bv);
    for (int k = 0; k < 4; k++) {
      rm[k] = 0.7 * rm[k] + 0.3 * bm[k];
      rv[k] = 0.7 * rv[k] + 0.3 * bv[k] * (double)m / (double)(m - 1);
    }
    bn_run(true, attrs, x, scale, bias, mean, var, y);
    ot_assert_close(mean, rm, 4, 1e-12);
    ot_assert_close(var, rv, 4, 1e-12);
    ot_free(x);
  }
  pd_tensor *x = ot_rand(PD_F64, 4, dims, 200, -1, 1, 0);
  double *want = ref_y(x, scale, bias, rm, rv, 1e-5);
  bn_run(false, attrs, x, scale, bias, mean, var, y);
  ot_assert_close(y, want, 216, 1e-12);
  free(want);
  ot_free(x), ot_free(y), ot_free(scale), ot_free(bias), ot_free(mean), ot_free(var);
}

/* One value per channel (M = 1): Y = Bias, the running mean moves, the
 * running variance (unbiased: undefined) stays. */
static void test_single_value_per_channel(void **state) {
  (void)state;
  int64_t ch = 3;
  pd_tensor *x = ot_rand(PD_F64, 2, (int64_t[]){1, 3}, 31, -1, 1, 0), *y = ot_out();
  pd_tensor *scale = ot_rand(PD_F64, 1, &ch, 32, 0.5, 1.5, 0), *bias = ot_rand(PD_F64, 1, &ch, 33, -1, 1, 0);
  pd_tensor *mean = ot_tensor(PD_F64, 1, &ch), *var = ot_tensor(PD_F64, 1, &ch);
  for (int k = 0; k < 3; k++) pd_tensor_set(mean, k, 0), pd_tensor_set(var, k, 1);
  bn_run(true, NULL, x, scale, bias, mean, var, y);
  double want_y[3], want_mean[3], want_var[3] = {1, 1, 1};
  for (int k = 0; k < 3; k++) want_y[k] = pd_tensor_get(bias, k), want_mean[k] = 0.1 * pd_tensor_get(x, k);
  ot_assert_close(y, want_y, 3, 1e-12);
  ot_assert_close(mean, want_mean, 3, 1e-12);
  ot_assert_close(var, want_var, 3, 0);
  ot_free(x), ot_free(y), ot_free(scale), ot_free(bias), ot_free(mean), ot_free(var);
}

/* L = <Y, G>; dL/dX, dL/dScale, dL/dBias from batch_norm_grad against
 * (L(v + h) - L(v - h)) / 2h for every element, in the given mode. */
static void gradcheck_mode(bool training, int ndim, const int64_t *dims) {
  int64_t ch = dims[1];
  pd_tensor *x = ot_rand(PD_F64, ndim, dims, 41, -1, 2, 0), *y = ot_out();
  pd_tensor *scale = ot_rand(PD_F64, 1, &ch, 42, 0.5, 1.5, 0), *bias = ot_rand(PD_F64, 1, &ch, 43, -1, 1, 0);
  pd_tensor *mean = ot_rand(PD_F64, 1, &ch, 44, -0.5, 0.5, 0), *var = ot_rand(PD_F64, 1, &ch, 45, 0.5, 1.5, 0);
  const char *attrs[] = {"epsilon", "f: 0.001", NULL};
  bn_run(training, attrs, x, scale, bias, mean, var, y);
  pd_tensor *g = ot_rand(PD_F64, y->ndim, y->dims, 46, -1, 1, 0);
  pd_tensor *dx = ot_out(), *dscale = ot_out(), *dbias = ot_out();
  pd_opcall call;
  pd_error err = {0};
  pd_exec exec = {.training = training, .seed = 1, .threads = 1};
  /* grad op: inputs X Scale Bias Mean Variance, Y MeanOut VarianceOut, dY (dMeanOut, dVarianceOut absent) */
  pd_status st = pd_opcall_init(&call, "batch_norm_grad", attrs,
                                (pd_tensor *[]){x, scale, bias, mean, var, y, mean, var, g, NULL, NULL}, NULL,
                                (pd_tensor *[]){dx, dscale, dbias, NULL, NULL}, NULL, &err);
  if (!st) st = pd_opcall_run(&call, &exec, &err);
  pd_opcall_free(&call);
  if (st) fail_msg("batch_norm_grad: %s", err.msg);
  pd_tensor *vs[3] = {x, scale, bias}, *grads[3] = {dx, dscale, dbias};
  const char *names[3] = {"X", "Scale", "Bias"};
  const double h = 1e-5;
  for (int s = 0; s < 3; s++) {
    assert_true(pd_dims_equal(grads[s]->ndim, grads[s]->dims, vs[s]->ndim, vs[s]->dims));
    double *v = PD_DATA(vs[s], double);
    for (int64_t i = 0; i < pd_tensor_numel(vs[s]); i++) {
      double keep = v[i], l[2];
      for (int side = 0; side < 2; side++) {
        v[i] = keep + (side ? -h : h);
        bn_run(training, attrs, x, scale, bias, mean, var, y);
        l[side] = 0;
        for (int64_t e = 0; e < pd_tensor_numel(y); e++) l[side] += pd_tensor_get(y, e) * pd_tensor_get(g, e);
      }
      v[i] = keep;
      double num = (l[0] - l[1]) / (2 * h), ana = pd_tensor_get(grads[s], i);
      double e = fabs(ana - num) / fmax(fmax(fabs(ana), fabs(num)), 1e-3);
      if (!(e <= 1e-6))
        fail_msg("batch_norm (%s): d/d%s[%lld]: analytic %.12g, numeric %.12g, error %g",
                 training ? "training" : "inference", names[s], (long long)i, ana, num, e);
    }
  }
  ot_free(x), ot_free(y), ot_free(scale), ot_free(bias), ot_free(mean), ot_free(var);
  ot_free(g), ot_free(dx), ot_free(dscale), ot_free(dbias);
}

static void test_gradients(void **state) {
  (void)state;
  gradcheck_mode(true, 4, (int64_t[]){3, 2, 3, 2});
  gradcheck_mode(true, 2, (int64_t[]){5, 3});
  gradcheck_mode(false, 4, (int64_t[]){2, 3, 2, 3});
  gradcheck_mode(false, 2, (int64_t[]){4, 2});
}

/* Load-time shapes: the batch -1 carries through, Scale/Bias/Mean/Variance
 * take [C]; bad inputs are named. */
static void test_shapes_and_errors(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *x = ot_shaped(PD_F32, 4, (int64_t[]){-1, 6, 5, 5}), *y = ot_out();
  pd_tensor *p[4] = {ot_out(), ot_out(), ot_out(), ot_out()};
  for (int i = 0; i < 4; i++) p[i]->ndim = -1;
  assert_int_equal(ot_infer("batch_norm", NULL, (pd_tensor *[]){x, p[0], p[1], p[2], p[3]}, NULL,
                            (pd_tensor *[]){y, p[2], p[3]}, NULL, &msg),
                   PD_OK);
  ot_assert_dims(y, -1, 6, 5, 5);
  for (int i = 0; i < 4; i++) ot_assert_dims(p[i], 6);
  /* a declared parameter of the wrong size */
  pd_tensor *bad = ot_shaped(PD_F32, 1, (int64_t[]){5});
  assert_int_equal(ot_infer("batch_norm", NULL, (pd_tensor *[]){x, bad, p[1], p[2], p[3]}, NULL,
                            (pd_tensor *[]){y, p[2], p[3]}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "(Scale) has shape [5], but the op needs [6]"));
  /* MeanOut must be Mean itself */
  pd_tensor *other = ot_out();
  assert_int_equal(ot_infer("batch_norm", NULL, (pd_tensor *[]){x, p[0], p[1], p[2], p[3]}, NULL,
                            (pd_tensor *[]){y, other, p[3]}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "output MeanOut must be the variable of input Mean"));
  /* rank, channel, dtype */
  pd_tensor *x1 = ot_shaped(PD_F32, 1, (int64_t[]){6}), *xc = ot_shaped(PD_F32, 2, (int64_t[]){4, -1});
  pd_tensor *xi = ot_shaped(PD_I64, 2, (int64_t[]){4, 6});
  assert_int_equal(ot_infer("batch_norm", NULL, (pd_tensor *[]){x1, p[0], p[1], p[2], p[3]}, NULL,
                            (pd_tensor *[]){y, p[2], p[3]}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "input X must have at least 2 dims [N, C, ...], got [6]"));
  assert_int_equal(ot_infer("batch_norm", NULL, (pd_tensor *[]){xc, p[0], p[1], p[2], p[3]}, NULL,
                            (pd_tensor *[]){y, p[2], p[3]}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "the channel dim of X (dim 1) must be known, got shape [4, -1]"));
  assert_int_equal(ot_infer("batch_norm", NULL, (pd_tensor *[]){xi, p[0], p[1], p[2], p[3]}, NULL,
                            (pd_tensor *[]){y, p[2], p[3]}, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "input X must be float32 or float64, got int64"));
  /* attribute ranges */
  pd_tensor *xr = ot_rand(PD_F32, 2, (int64_t[]){4, 6}, 1, -1, 1, 0), *sc = ot_tensor(PD_F32, 1, (int64_t[]){6});
  pd_error err = {0};
  const char *mom[] = {"momentum", "f: 1.5", NULL}, *eps[] = {"epsilon", "f: 0", NULL};
  assert_int_equal(bn_call(true, mom, xr, sc, sc, sc, sc, y, &err), PD_ERR_INPUT);
  assert_non_null(strstr(err.msg, "\"momentum\" must be >= 0 and <= 1, got 1.5"));
  assert_int_equal(bn_call(true, eps, xr, sc, sc, sc, sc, y, &err), PD_ERR_INPUT);
  assert_non_null(strstr(err.msg, "\"epsilon\" must be > 0, got 0"));
  ot_free(x), ot_free(y), ot_free(bad), ot_free(other), ot_free(x1), ot_free(xc), ot_free(xi), ot_free(xr), ot_free(sc);
  for (int i = 0; i < 4; i++) ot_free(p[i]);
}

/* fc -> batch_norm -> tanh -> fc -> mean, as a network. */
static const char *NET =
    "var { name: \"x\" shape: [-1, 3] }\n"
    "op { type: \"fc\" inputs: [\"x\", \"w0\", \"b0\"] outputs: \"a\" attrs { key: \"size\" value { i: 4 } } }\n"
    "op { type: \"batch_norm\" inputs: [\"a\", \"bn.scale\", \"bn.bias\", \"bn.mean\", \"bn.var\"]\n"
    "     outputs: [\"y\", \"bn.mean\", \"bn.var\"] attrs { key: \"momentum\" value { f: 0.5 } } }\n"
    "op { type: \"tanh\" inputs: \"y\" outputs: \"t\" }\n"
    "op { type: \"fc\" inputs: [\"t\", \"w1\"] outputs: \"h\" attrs { key: \"size\" value { i: 2 } } "
    "attrs { key: \"act\" value { s: \"sigmoid\" } } }\n"
    "op { type: \"mul\" inputs: [\"h\", \"w2\"] outputs: \"o\" }\n"
    "var { name: \"w2\" shape: [2, 1] kind: PARAM }\n"
    "op { type: \"mean\" inputs: \"o\" outputs: \"avg\" }\n";

static pd_net *load(const char *text) {
  pd_net *net = NULL;
  pd_error err = {0};
  pd_net_opts o = {.float_dtype = PD_F64};
  if (pd_net_from_text("t.pbtxt", text, strlen(text), &o, &net, &err)) fail_msg("load: %s", err.msg);
  return net;
}

static void expect_values(const pd_tensor *t, double v) {
  for (int64_t i = 0; i < pd_tensor_numel(t); i++)
    if (pd_tensor_get(t, i) != v) fail_msg("element %lld is %g, expected %g", (long long)i, pd_tensor_get(t, i), v);
}

static void test_in_a_net(void **state) {
  (void)state;
  pd_net *net = load(NET);
  pd_error err = {0};
  assert_int_equal(net->vars[pd_net_var(net, "bn.scale")].kind, PD_VAR_PARAM);
  assert_int_equal(net->vars[pd_net_var(net, "bn.bias")].kind, PD_VAR_PARAM);
  assert_int_equal(net->vars[pd_net_var(net, "bn.mean")].kind, PD_VAR_STATE);
  assert_int_equal(net->vars[pd_net_var(net, "bn.var")].kind, PD_VAR_STATE);
  if (pd_net_add_backward(net, "avg", &err) || pd_net_select_kernels(net, PD_CPU, &err)) fail_msg("%s", err.msg);
  assert_int_equal(pd_net_var(net, "bn.mean@GRAD"), -1);
  assert_int_equal(pd_net_var(net, "bn.var@GRAD"), -1);
  assert_true(pd_net_var(net, "bn.scale@GRAD") >= 0);
  pd_scope *scope = pd_scope_new(NULL);
  pd_runner r;
  assert_int_equal(pd_init_persistables(net, scope, NULL, 3, &err), PD_OK);
  assert_int_equal(pd_runner_init(&r, net, scope, NULL, &err), PD_OK);
  pd_tensor *sc = r.t[pd_net_var(net, "bn.scale")], *bi = r.t[pd_net_var(net, "bn.bias")];
  pd_tensor *mean = r.t[pd_net_var(net, "bn.mean")], *var = r.t[pd_net_var(net, "bn.var")];
  ot_assert_dims(sc, 4);
  expect_values(sc, 1), expect_values(bi, 0), expect_values(mean, 0), expect_values(var, 1);
  pd_tensor *x = r.t[pd_net_var(net, "x")];
  assert_int_equal(pd_tensor_set_dims(x, 2, (int64_t[]){6, 3}, &err), PD_OK);
  assert_int_equal(pd_tensor_alloc(x, &err), PD_OK);
  uint64_t s = 7;
  for (int i = 0; i < 18; i++) pd_tensor_set(x, i, 2 * pd_rng_uniform(&s) - 1);
  /* inference leaves the running statistics; training moves them */
  if (pd_runner_run(&r, 0, net->n_forward, &err)) fail_msg("%s", err.msg);
  expect_values(mean, 0), expect_values(var, 1);
  r.exec.training = true;
  if (pd_runner_run(&r, 0, net->n_forward, &err)) fail_msg("%s", err.msg);
  assert_true(pd_tensor_get(mean, 0) != 0 && pd_tensor_get(var, 0) != 1);
  /* the whole net's gradients (w0, b0 through batch_norm's dX) */
  pd_gradcheck_result res;
  if (pd_gradcheck_run(&r, 0, 1, 1e-6, &res, &err)) fail_msg("%s", err.msg);
  if (!(res.worst_err <= 1e-6))
    fail_msg("%s[%lld]: analytic %.12g numeric %.12g error %g", res.worst_var, (long long)res.worst_index, res.analytic,
             res.numeric, res.worst_err);
  assert_int_equal(res.vars, 6); /* w0 b0 bn.scale bn.bias w1 w2 */
  pd_runner_free(&r);
  pd_scope_free(scope);
  pd_net_free(net);
}

/* MeanOut naming another variable is refused at load, with the position. */
static void test_net_not_in_place(void **state) {
  (void)state;
  const char *text = "var { name: \"x\" shape: [-1, 3] }\n"
                     "op { type: \"batch_norm\" inputs: [\"x\", \"s\", \"b\", \"m\", \"v\"] outputs: [\"y\", \"m2\", "
                     "\"v\"] }\n";
  pd_net *net = NULL;
  pd_error err = {0};
  assert_int_equal(pd_net_from_text("t.pbtxt", text, strlen(text), NULL, &net, &err), PD_ERR_INPUT);
  assert_non_null(strstr(err.msg, "t.pbtxt:2:1: op #0 \"batch_norm\": output MeanOut must be the variable of input "
                                  "Mean (\"m\"), updated in place; got \"m2\""));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_training_forward),
      cmocka_unit_test(test_inference),
      cmocka_unit_test(test_running_stats_over_steps),
      cmocka_unit_test(test_single_value_per_channel),
      cmocka_unit_test(test_gradients),
      cmocka_unit_test(test_shapes_and_errors),
      cmocka_unit_test(test_in_a_net),
      cmocka_unit_test(test_net_not_in_place),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
