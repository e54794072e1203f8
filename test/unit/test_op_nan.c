/* test_op_nan.c — a NaN in an op's input reaches its output, as in PyTorch,
 * for every op with a float input, float32 and float64: relu (and fc's fused
 * relu) keep it, a max-pool window or a softmax row holding it is NaN, the
 * vectorised and split paths included (fc's product epilogue with 1 row,
 * several, and enough to be split on two threads; pool2d's 2x2 path, its
 * generic one, global pooling). Elements that do not depend on the NaN stay
 * finite. Backward: relu's gradient is dOut wherever Out is not <= 0 (a NaN
 * Out passes dOut, as PyTorch's threshold_backward); max pooling's gradient
 * goes to the window's first NaN. Integers cannot hold NaN: cast to an
 * integer gives 0 (docs/ops.md). */
#include "optest.h"
#include "cpu/parallel.h"

static const pd_dtype dts[] = {PD_F32, PD_F64};

static void expect_nan(const pd_tensor *t, int64_t i, bool nan, const char *what) {
  double v = pd_tensor_get(t, i);
  if (nan && !isnan(v)) fail_msg("%s[%lld] = %g, want NaN", what, (long long)i, v);
  if (!nan && !isfinite(v)) fail_msg("%s[%lld] = %g, want a finite value", what, (long long)i, v);
}

static void all_nan(const pd_tensor *t, const char *what) {
  for (int64_t i = 0; i < pd_tensor_numel(t); i++) expect_nan(t, i, true, what);
}

static pd_tensor *rand_nan(pd_dtype dt, int ndim, const int64_t *dims, uint64_t seed, int64_t at) {
  pd_tensor *t = ot_rand(dt, ndim, dims, seed, -2, 2, 0.05);
  pd_tensor_set(t, at, NAN);
  return t;
}

static pd_tensor *filled(pd_dtype dt, int ndim, const int64_t *dims, double v) {
  pd_tensor *t = ot_tensor(dt, ndim, dims);
  for (int64_t i = 0; i < pd_tensor_numel(t); i++) pd_tensor_set(t, i, v);
  return t;
}

/* relu, sigmoid, tanh over 3 x 40 (the loops' vector bodies and tails),
 * NaNs at 0, 17 and 119; -inf and +inf too. */
static void test_act(void **state) {
  (void)state;
  const char *acts[] = {"relu", "sigmoid", "tanh"};
  for (int d = 0; d < 2; d++)
    for (int a = 0; a < 3; a++) {
      pd_tensor *x = rand_nan(dts[d], 2, (int64_t[]){3, 40}, 1, 0), *out = ot_out();
      pd_tensor_set(x, 17, NAN), pd_tensor_set(x, 119, NAN), pd_tensor_set(x, 5, -INFINITY);
      ot_run(acts[a], NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
      for (int64_t i = 0; i < 120; i++)
        if (i != 5) expect_nan(out, i, i == 0 || i == 17 || i == 119, acts[a]);
      assert_true(pd_tensor_get(out, 5) == (a == 2 ? -1 : 0));
      ot_free(x), ot_free(out);
    }
}

/* relu_grad (inputs X Out dOut): dX = dOut where Out is NaN or > 0, 0 where
 * Out <= 0; a NaN dOut there is NaN. */
static void test_relu_grad(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    const double y[] = {NAN, 1, 0, -0.0, 2, NAN, 3, 0};
    const double dy[] = {0.5, NAN, NAN, 0.25, 0.75, NAN, 1, 2};
    const double want[] = {0.5, NAN, 0, 0, 0.75, NAN, 1, 0};
    pd_tensor *yt = ot_tensor(dts[d], 1, (int64_t[]){8}), *dyt = ot_tensor(dts[d], 1, (int64_t[]){8});
    pd_tensor *dx = ot_out();
    for (int i = 0; i < 8; i++) pd_tensor_set(yt, i, y[i]), pd_tensor_set(dyt, i, dy[i]);
    ot_run("relu_grad", NULL, (pd_tensor *[]){yt, yt, dyt}, NULL, (pd_tensor *[]){dx}, NULL);
    for (int i = 0; i < 8; i++) {
      double v = pd_tensor_get(dx, i);
      if (isnan(want[i]) ? !isnan(v) : v != want[i]) fail_msg("dX[%d] = %g, want %g", i, v, want[i]);
    }
    ot_free(yt), ot_free(dyt), ot_free(dx);
  }
}

/* fc: a NaN in row r of X makes row r of Out NaN (every act), the other rows
 * finite; a NaN in B makes its column NaN. n = 1 (the matrix-vector path),
 * 5, and 600 x 65 x 150 and 200 x 65 x 400 on two threads (split, the epilogue per part). */
static void check_fc(pd_dtype dt, int64_t n, int64_t k, int64_t m, const char *act) {
  int64_t r = n / 2;
  pd_tensor *x = rand_nan(dt, 2, (int64_t[]){n, k}, 1, r * k + k / 3),
            *w = ot_rand(dt, 2, (int64_t[]){k, m}, 2, -1, 1, 0);
  pd_tensor *b = rand_nan(dt, 1, (int64_t[]){m}, 3, m - 1), *y = ot_out();
  char size[32], acts[32];
  snprintf(size, sizeof size, "i: %lld", (long long)m);
  snprintf(acts, sizeof acts, "s: \"%s\"", act);
  const char *attrs[] = {"size", size, "act", acts, NULL};
  ot_run("fc", attrs, (pd_tensor *[]){x, w, b}, NULL, (pd_tensor *[]){y}, NULL);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) expect_nan(y, i * m + j, i == r || j == m - 1, act);
  ot_free(x), ot_free(w), ot_free(b), ot_free(y);
}

static void test_fc(void **state) {
  (void)state;
  const char *acts[] = {"none", "relu", "sigmoid", "tanh"};
  for (int d = 0; d < 2; d++)
    for (int a = 0; a < 4; a++) {
      check_fc(dts[d], 1, 7, 33, acts[a]);
      check_fc(dts[d], 5, 7, 33, acts[a]);
    }
  pd_set_threads(2);
  check_fc(PD_F32, 600, 65, 150, "relu"); /* split by rows */
  check_fc(PD_F32, 200, 65, 400, "relu"); /* by columns */
  check_fc(PD_F64, 200, 65, 400, "relu");
  pd_set_threads(0);
}

/* fc_grad with relu: where Out is NaN dPre is dOut (as relu_grad), so dB and
 * dW still see it; a NaN dOut where Out > 0 makes its column of dW, its dB
 * and its row of dX NaN. */
static void test_fc_grad(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    const int64_t n = 4, k = 3, m = 5;
    pd_tensor *x = ot_rand(dts[d], 2, (int64_t[]){n, k}, 1, -1, 1, 0),
              *w = ot_rand(dts[d], 2, (int64_t[]){k, m}, 2, -1, 1, 0);
    pd_tensor *b = ot_rand(dts[d], 1, (int64_t[]){m}, 3, -1, 1, 0), *y = filled(dts[d], 2, (int64_t[]){n, m}, 1);
    pd_tensor *dy = filled(dts[d], 2, (int64_t[]){n, m}, 0.5);
    pd_tensor_set(y, 0, NAN), pd_tensor_set(dy, 0, 0.25); /* Out NaN at (0, 0): dPre = dOut there */
    pd_tensor_set(dy, 2 * m + 3, NAN);                    /* dOut NaN at (2, 3) */
    pd_tensor *g[3] = {ot_out(), ot_out(), ot_out()};
    const char *attrs[] = {"size", "i: 5", "act", "s: \"relu\"", NULL};
    ot_run("fc_grad", attrs, (pd_tensor *[]){x, w, b, y, dy}, NULL, g, NULL);
    for (int64_t i = 0; i < n * k; i++) expect_nan(g[0], i, i / k == 2, "dX");
    for (int64_t i = 0; i < k * m; i++) expect_nan(g[1], i, i % m == 3, "dW");
    for (int64_t j = 0; j < m; j++) expect_nan(g[2], j, j == 3, "dB");
    assert_true(pd_tensor_get(g[2], 0) == 0.25 + 0.5 * (double)(n - 1));
    ot_free(x), ot_free(w), ot_free(b), ot_free(y), ot_free(dy);
    for (int i = 0; i < 3; i++) ot_free(g[i]);
  }
}

/* Max pooling of one 1 x 2 x 6 x 6 image with NaNs at (plane, h, w); out
 * (oh, ow) is NaN exactly when its window holds one; the gradient goes to the
 * window's first NaN in row-major order. */
typedef struct pool_case {
  const char *ksize, *strides, *paddings, *global;
  int64_t kh, kw, sh, sw, ph, pw, ho, wo;
} pool_case;

static void check_pool(pd_dtype dt, const pool_case *q, const int64_t (*nans)[3], int nn) {
  const int64_t h = 6, w = 6, c = 2;
  pd_tensor *x = ot_rand(dt, 4, (int64_t[]){1, c, h, w}, 4, -2, 2, 0), *y = ot_out(), *dx = ot_out();
  for (int i = 0; i < nn; i++) pd_tensor_set(x, (nans[i][0] * h + nans[i][1]) * w + nans[i][2], NAN);
  const char *attrs[] = {"pooling_type", "s: \"max\"", "ksize",          q->ksize,  "strides", q->strides,
                         "paddings",     q->paddings,  "global_pooling", q->global, NULL};
  ot_run("pool2d", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  ot_assert_dims(y, 1, c, q->ho, q->wo);
  pd_tensor *dy = filled(dt, 4, (int64_t[]){1, c, q->ho, q->wo}, 1);
  ot_run("pool2d_grad", attrs, (pd_tensor *[]){x, y, dy}, NULL, (pd_tensor *[]){dx}, NULL);
  double *want_dx = calloc((size_t)(c * h * w), sizeof(double));
  for (int64_t p = 0; p < c; p++)
    for (int64_t oh = 0; oh < q->ho; oh++)
      for (int64_t ow = 0; ow < q->wo; ow++) {
        int64_t first = -1;
        for (int64_t ih = oh * q->sh - q->ph; ih < oh * q->sh - q->ph + q->kh; ih++)
          for (int64_t iw = ow * q->sw - q->pw; iw < ow * q->sw - q->pw + q->kw; iw++)
            if (ih >= 0 && ih < h && iw >= 0 && iw < w && first < 0 && isnan(pd_tensor_get(x, (p * h + ih) * w + iw)))
              first = (p * h + ih) * w + iw;
        expect_nan(y, (p * q->ho + oh) * q->wo + ow, first >= 0, "pool2d Out");
        if (first >= 0) want_dx[first] += 1;
      }
  for (int64_t i = 0; i < c * h * w; i++)
    if (isnan(pd_tensor_get(x, i)) && pd_tensor_get(dx, i) != want_dx[i])
      fail_msg("pool2d %s %s: dX[%lld] = %g, want %g", q->ksize, q->strides, (long long)i, pd_tensor_get(dx, i),
               want_dx[i]);
  free(want_dx);
  ot_free(x), ot_free(y), ot_free(dx), ot_free(dy);
}

static void test_pool(void **state) {
  (void)state;
  const pool_case cases[] = {
      {"ints: [2, 2]", "ints: [2, 2]", "ints: [0, 0]", "b: false", 2, 2, 2, 2, 0, 0, 3, 3}, /* the 2x2 path */
      {"ints: [3, 3]", "ints: [1, 1]", "ints: [1, 1]", "b: false", 3, 3, 1, 1, 1, 1, 6, 6}, /* generic */
      {"ints: [3, 2]", "ints: [2, 3]", "ints: [0, 1]", "b: false", 3, 2, 2, 3, 0, 1, 2, 3},
      {"ints: []", "ints: [1, 1]", "ints: [0, 0]", "b: true", 6, 6, 1, 1, 0, 0, 1, 1}, /* global */
  };
  /* in the 2x2 windows: each of the four places, and two NaNs in one window */
  const int64_t nans[][3] = {{0, 0, 0}, {0, 0, 3}, {0, 3, 0}, {0, 3, 3}, {0, 4, 4}, {0, 5, 5}, {1, 1, 2}, {1, 1, 3}};
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < 4; k++) {
      check_pool(dts[d], &cases[k], nans, 8);
      check_pool(dts[d], &cases[k], nans + 5, 1); /* one NaN: plane 0 (5, 5) */
    }
}

/* softmax and log_softmax: a row holding a NaN (first or later) is all NaN,
 * the other rows finite. softmax_with_cross_entropy likewise, Softmax and
 * Loss, hard and soft labels; cross_entropy of a NaN probability is NaN. */
static void test_softmax(void **state) {
  (void)state;
  const char *ops[] = {"softmax", "log_softmax"};
  for (int d = 0; d < 2; d++) {
    for (int o = 0; o < 2; o++) {
      pd_tensor *x = rand_nan(dts[d], 2, (int64_t[]){4, 10}, 5, 10 + 0), *y = ot_out();
      pd_tensor_set(x, 3 * 10 + 7, NAN);
      ot_run(ops[o], NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
      for (int64_t i = 0; i < 40; i++) expect_nan(y, i, i / 10 == 1 || i / 10 == 3, ops[o]);
      ot_free(x), ot_free(y);
    }
    for (int soft = 0; soft < 2; soft++) {
      pd_tensor *z = rand_nan(dts[d], 2, (int64_t[]){3, 6}, 6, 6 + 4), *sm = ot_out(), *loss = ot_out(), *l;
      if (soft) {
        l = filled(dts[d], 2, (int64_t[]){3, 6}, 0);
        for (int i = 0; i < 3; i++) pd_tensor_set(l, i * 6, 1);
      } else {
        l = filled(PD_I64, 2, (int64_t[]){3, 1}, 0); /* label 0: the NaN is elsewhere in row 1 */
      }
      const char *attrs[] = {"soft_label", soft ? "b: true" : "b: false", NULL};
      ot_run("softmax_with_cross_entropy", attrs, (pd_tensor *[]){z, l}, NULL, (pd_tensor *[]){sm, loss}, NULL);
      for (int64_t i = 0; i < 18; i++) expect_nan(sm, i, i / 6 == 1, "Softmax");
      for (int64_t i = 0; i < 3; i++) expect_nan(loss, i, i == 1, "Loss");
      pd_tensor *p = ot_rand(dts[d], 2, (int64_t[]){3, 6}, 7, 0.1, 1, 0), *ce = ot_out();
      pd_tensor_set(p, 6 + (soft ? 3 : 0), NAN);
      ot_run("cross_entropy", attrs, (pd_tensor *[]){p, l}, NULL, (pd_tensor *[]){ce}, NULL);
      for (int64_t i = 0; i < 3; i++) expect_nan(ce, i, i == 1, "cross_entropy");
      ot_free(z), ot_free(sm), ot_free(loss), ot_free(l), ot_free(p), ot_free(ce);
    }
  }
}

/* accuracy: a NaN score ranks above every number (torch.topk), so a row
 * whose label's score is the largest number but which holds a NaN elsewhere
 * is not right at top-1, and is at top-2. */
static void test_accuracy(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++)
    for (int k = 1; k <= 2; k++) {
      pd_tensor *s = filled(dts[d], 2, (int64_t[]){3, 4}, 0.1), *l = filled(PD_I64, 2, (int64_t[]){3, 1}, 2);
      for (int i = 0; i < 3; i++) pd_tensor_set(s, i * 4 + 2, 0.7); /* the label's score is each row's largest */
      pd_tensor_set(s, 4 + 0, NAN);                                 /* row 1: a NaN elsewhere */
      pd_tensor_set(s, 8 + 2, NAN);                                 /* row 2: the label's own score */
      pd_tensor *acc = ot_out(), *correct = ot_out(), *total = ot_out();
      char kattr[16];
      snprintf(kattr, sizeof kattr, "i: %d", k);
      const char *attrs[] = {"k", kattr, NULL};
      ot_run("accuracy", attrs, (pd_tensor *[]){s, l}, NULL, (pd_tensor *[]){acc, correct, total}, NULL);
      assert_int_equal(PD_DATA(correct, int64_t)[0], k == 1 ? 1 : 2);
      ot_free(s), ot_free(l), ot_free(acc), ot_free(correct), ot_free(total);
    }
}

/* clip_by_global_norm: a NaN in any X makes the norm and so every Out NaN
 * (as torch's clip_grad_norm_), in place or not. */
static void test_clip(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++)
    for (int in_place = 0; in_place < 2; in_place++) {
      pd_tensor *x[2] = {rand_nan(dts[d], 1, (int64_t[]){5}, 8, 3), ot_rand(dts[d], 2, (int64_t[]){2, 3}, 9, -1, 1, 0)};
      pd_tensor *outs[2] = {in_place ? x[0] : ot_out(), in_place ? x[1] : ot_out()};
      const char *attrs[] = {"max_norm", "f: 1e6", NULL}; /* far above the finite norm: no clipping */
      ot_run("clip_by_global_norm", attrs, x, (int[]){2}, outs, (int[]){2});
      all_nan(outs[0], "Out[0]"), all_nan(outs[1], "Out[1]");
      if (!in_place) ot_free(outs[0]), ot_free(outs[1]);
      ot_free(x[0]), ot_free(x[1]);
    }
}

/* batch_norm (training): a NaN in channel 1 makes that channel's Y and its
 * running mean and variance NaN; channel 0 and 2 stay finite. */
static void test_batch_norm(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    pd_tensor *x = rand_nan(dts[d], 4, (int64_t[]){2, 3, 2, 2}, 10, 1 * 4 + 3), *y = ot_out();
    pd_tensor *scale = filled(dts[d], 1, (int64_t[]){3}, 1), *bias = filled(dts[d], 1, (int64_t[]){3}, 0);
    pd_tensor *mean = filled(dts[d], 1, (int64_t[]){3}, 0), *var = filled(dts[d], 1, (int64_t[]){3}, 1);
    ot_run("batch_norm", NULL, (pd_tensor *[]){x, scale, bias, mean, var}, NULL, (pd_tensor *[]){y, mean, var}, NULL);
    for (int64_t i = 0; i < 24; i++) expect_nan(y, i, i / 4 % 3 == 1, "Y");
    for (int64_t k = 0; k < 3; k++) expect_nan(mean, k, k == 1, "MeanOut"), expect_nan(var, k, k == 1, "VarianceOut");
    ot_free(x), ot_free(y), ot_free(scale), ot_free(bias), ot_free(mean), ot_free(var);
  }
}

/* dropout (training, p = 0.5): every NaN stays NaN, dropped or kept (X times
 * a mask of 0 or 1 / (1 - p), as PyTorch). */
static void test_dropout(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    pd_tensor *x = filled(dts[d], 1, (int64_t[]){64}, NAN), *out = ot_out(), *mask = ot_out();
    const char *attrs[] = {"dropout_prob", "f: 0.5", NULL};
    ot_run("dropout", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out, mask}, NULL);
    double kept = 0;
    for (int64_t i = 0; i < 64; i++) kept += pd_tensor_get(mask, i);
    assert_true(kept > 0 && kept < 64); /* both kinds occur */
    all_nan(out, "dropout Out");
    ot_free(x), ot_free(out), ot_free(mask);
  }
}

/* cos_sim: a NaN in row 1 of X makes Out[1] and XNorm[1] NaN; a zero row
 * still gives 0. */
static void test_cos_sim(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    pd_tensor *x = rand_nan(dts[d], 2, (int64_t[]){3, 4}, 11, 4 + 2),
              *y = ot_rand(dts[d], 2, (int64_t[]){3, 4}, 12, -1, 1, 0);
    for (int j = 0; j < 4; j++) pd_tensor_set(x, 8 + j, 0);
    pd_tensor *out = ot_out(), *xn = ot_out(), *yn = ot_out();
    ot_run("cos_sim", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out, xn, yn}, NULL);
    for (int64_t i = 0; i < 3; i++) expect_nan(out, i, i == 1, "cos_sim Out"), expect_nan(xn, i, i == 1, "XNorm");
    assert_true(pd_tensor_get(out, 2) == 0);
    ot_free(x), ot_free(y), ot_free(out), ot_free(xn), ot_free(yn);
  }
}

/* The ops that compute with their inputs' values element by element, or
 * sum them: the outputs that read the NaN are NaN, the others finite. */
static void test_elementwise(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    pd_dtype dt = dts[d];
    pd_tensor *x = rand_nan(dt, 2, (int64_t[]){3, 4}, 13, 5), *y = ot_rand(dt, 2, (int64_t[]){3, 4}, 14, -1, 1, 0.1);
    pd_tensor *row = ot_rand(dt, 1, (int64_t[]){4}, 15, 0.5, 1, 0), *row_nan = rand_nan(dt, 1, (int64_t[]){4}, 15, 1);
    pd_tensor *o = ot_out();
    const char *unary[] = {"mean", "scale", "identity", "reshape", "flatten", "transpose", "allreduce", "sum"};
    for (int u = 0; u < 8; u++) {
      const char *at[] = {u == 3 ? "shape" : u == 5 ? "perm" : NULL, u == 3 ? "ints: [4, 3]" : "ints: [1, 0]", NULL};
      ot_free(o), o = ot_out();
      ot_run(unary[u], u == 3 || u == 5 ? at : NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){o}, NULL);
      int64_t n = pd_tensor_numel(o), at_nan = u == 0 ? 0 : u == 5 ? 1 * 3 + 1 : 5;
      for (int64_t i = 0; i < n; i++) expect_nan(o, i, i == at_nan, unary[u]);
    }
    const char *binary[] = {"elementwise_add", "broadcast_add", "broadcast_sub",
                            "broadcast_mul",   "broadcast_div", "square_error"};
    for (int b = 0; b < 6; b++) {
      ot_run(binary[b], NULL, (pd_tensor *[]){x, b == 5 ? y : row}, NULL, (pd_tensor *[]){o}, NULL);
      for (int64_t i = 0; i < 12; i++) expect_nan(o, i, i == 5, binary[b]);
      ot_run(binary[b], NULL, (pd_tensor *[]){y, b == 5 ? x : row_nan}, NULL, (pd_tensor *[]){o}, NULL);
      for (int64_t i = 0; i < 12; i++) expect_nan(o, i, b == 5 ? i == 5 : i % 4 == 1, binary[b]);
    }
    ot_run("mse", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){o}, NULL);
    all_nan(o, "mse");
    ot_run("concat", NULL, (pd_tensor *[]){y, x}, (int[]){2}, (pd_tensor *[]){o}, NULL);
    for (int64_t i = 0; i < 24; i++) expect_nan(o, i, i == 12 + 5, "concat");
    pd_tensor *w = ot_rand(dt, 2, (int64_t[]){4, 2}, 16, -1, 1, 0);
    const char *mops[] = {"mul", "matmul"};
    for (int m = 0; m < 2; m++) { /* row 1 of X: NaN */
      ot_run(mops[m], NULL, (pd_tensor *[]){x, w}, NULL, (pd_tensor *[]){o}, NULL);
      for (int64_t i = 0; i < 6; i++) expect_nan(o, i, i / 2 == 1, mops[m]);
    }
    ot_free(x), ot_free(y), ot_free(row), ot_free(row_nan), ot_free(o), ot_free(w);
  }
}

/* conv2d: Out (m, oh, ow) is NaN exactly when its window covers the NaN
 * pixel (whatever the filter's weight there), for a 1x1, a padded 3x3 and a
 * strided 3x3 filter (the direct and the product paths). */
static void test_conv2d(void **state) {
  (void)state;
  const struct { int64_t k, s, p; } cases[] = {{1, 1, 0}, {3, 1, 1}, {3, 2, 1}, {5, 1, 2}};
  for (int d = 0; d < 2; d++)
    for (int q = 0; q < 4; q++) {
      const int64_t c = 3, h = 9, w = 9, m = 4, k = cases[q].k, s = cases[q].s, p = cases[q].p;
      const int64_t nh = 4, nw = 6, ho = (h + 2 * p - k) / s + 1, wo = ho;
      pd_tensor *x = rand_nan(dts[d], 4, (int64_t[]){2, c, h, w}, 17, ((1 * c + 2) * h + nh) * w + nw);
      pd_tensor *f = ot_rand(dts[d], 4, (int64_t[]){m, c, k, k}, 18, -1, 1, 0), *y = ot_out();
      pd_tensor_set(f, 2 * k * k, 0); /* filter 0, channel 2's first tap: 0 times NaN is NaN */
      char ss[32], ps[32], ks[32];
      snprintf(ss, sizeof ss, "ints: [%lld, %lld]", (long long)s, (long long)s);
      snprintf(ps, sizeof ps, "ints: [%lld, %lld]", (long long)p, (long long)p);
      snprintf(ks, sizeof ks, "ints: [%lld, %lld]", (long long)k, (long long)k);
      const char *attrs[] = {"num_filters", "i: 4", "kernel_size", ks, "strides", ss, "paddings", ps, NULL};
      ot_run("conv2d", attrs, (pd_tensor *[]){x, f, NULL}, NULL, (pd_tensor *[]){y}, NULL);
      ot_assert_dims(y, 2, m, ho, wo);
      for (int64_t n = 0; n < 2; n++)
        for (int64_t mm = 0; mm < m; mm++)
          for (int64_t oh = 0; oh < ho; oh++)
            for (int64_t ow = 0; ow < wo; ow++) {
              int64_t i = nh - (oh * s - p), j = nw - (ow * s - p);
              bool covers = n == 1 && i >= 0 && i < k && j >= 0 && j < k;
              expect_nan(y, ((n * m + mm) * ho + oh) * wo + ow, covers, "conv2d Out");
            }
      ot_free(x), ot_free(f), ot_free(y);
    }
}

/* sgd, momentum, adam: a NaN gradient element makes its parameter NaN. */
static void test_optim(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    pd_dtype dt = dts[d];
    const int64_t one = 1;
    pd_tensor *lr = filled(dt, 1, &one, 0.1), *t = filled(PD_F64, 1, &one, 1);
    for (int o = 0; o < 3; o++) {
      pd_tensor *p = ot_rand(dt, 1, (int64_t[]){6}, 19, -1, 1, 0), *g = rand_nan(dt, 1, (int64_t[]){6}, 20, 2);
      pd_tensor *m1 = filled(dt, 1, (int64_t[]){6}, 0), *m2 = filled(dt, 1, (int64_t[]){6}, 0);
      if (o == 0) ot_run("sgd", NULL, (pd_tensor *[]){p, g, lr, NULL}, NULL, (pd_tensor *[]){p}, NULL);
      if (o == 1) ot_run("momentum", NULL, (pd_tensor *[]){p, g, m1, lr, NULL}, NULL, (pd_tensor *[]){p, m1}, NULL);
      if (o == 2)
        ot_run("adam", NULL, (pd_tensor *[]){p, g, m1, m2, lr, t, NULL}, NULL, (pd_tensor *[]){p, m1, m2}, NULL);
      for (int64_t i = 0; i < 6; i++) expect_nan(p, i, i == 2, "ParamOut");
      ot_free(p), ot_free(g), ot_free(m1), ot_free(m2);
    }
    ot_free(lr), ot_free(t);
  }
}

/* cast: to float64 a NaN stays NaN; to an integer (which has none) it is 0. */
static void test_cast(void **state) {
  (void)state;
  pd_tensor *x = rand_nan(PD_F32, 1, (int64_t[]){4}, 21, 1), *o = ot_out();
  const char *f64[] = {"dtype", "s: \"float64\"", NULL}, *i32[] = {"dtype", "s: \"int32\"", NULL};
  ot_run("cast", f64, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){o}, NULL);
  for (int64_t i = 0; i < 4; i++) expect_nan(o, i, i == 1, "cast");
  ot_run("cast", i32, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){o}, NULL);
  assert_int_equal(PD_DATA(o, int32_t)[1], 0);
  ot_free(x), ot_free(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_act),      cmocka_unit_test(test_relu_grad), cmocka_unit_test(test_fc),
      cmocka_unit_test(test_fc_grad),  cmocka_unit_test(test_pool),      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_accuracy), cmocka_unit_test(test_clip),      cmocka_unit_test(test_batch_norm),
      cmocka_unit_test(test_dropout),  cmocka_unit_test(test_cos_sim),   cmocka_unit_test(test_elementwise),
      cmocka_unit_test(test_conv2d),   cmocka_unit_test(test_optim),     cmocka_unit_test(test_cast),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
