/* test_kmath.c — the math of the GPU kernels, checked on the CPU. The GPU
 * kernels (ops/NAME.cu) compute every element with the PD_HD functions of
 * ops/kmath.h, ops/act.h and lib/base/rng.h; here the host compiler builds the
 * same functions and each test replays a GPU kernel's work in plain loops
 * (one loop iteration per GPU thread, the block reductions as sequential
 * sums) and compares it with the CPU kernel of the op, float32 (relative
 * error <= 1e-5; max-pool ties, NaNs and random streams exactly). */
#include "optest.h"

#include "act.h"
#include "op_helpers.h"
#include "kmath.h"
#include "base/rng.h"

#define TOL 1e-5
/* Sums of products (the GEMMs, accumulated in other orders by BLIS and here)
 * are compared relative to max(|a|, |b|, 1): the terms are products of
 * values in [-1, 1], so a float sum's rounding error scales with them, not
 * with a result that cancels to near 0 (with BLIS's AVX-512 kernels a dW
 * entry of 0.066, a sum of ~100 terms, came out 7.4e-7 off the double
 * reference: 1.1e-5 relative to itself, 7.4e-7 to 1). */
#define assert_close_sums(t, ref, n)                                           \
  do {                                                                         \
    double e_ = ot_max_err((t), (ref), (n), 1.0);                              \
    if (!(e_ <= TOL)) fail_msg("max relative error %g > %g", e_, (double)TOL); \
  } while (0)

/* An op prepared for its C helpers (geometry, broadcast) and shape function. */
typedef struct opctx {
  pd_opcall call;
  pd_error err;
  pd_exec exec;
  pd_ctx c;
} opctx;

static void ctx_open(opctx *o, const char *type, const char *const *attrs, pd_tensor *const *ins, const int *in_n,
                     pd_tensor *const *outs, const int *out_n) {
  memset(o, 0, sizeof *o);
  o->exec = (pd_exec){.training = true, .seed = 1, .threads = 1}; /* as ot_run */
  assert_int_equal(pd_opcall_init(&o->call, type, attrs, ins, in_n, outs, out_n, &o->err), PD_OK);
  o->c = (pd_ctx){.op = &o->call.op, .vars = o->call.vars, .exec = &o->exec, .err = &o->err};
}

static float *f32(const pd_tensor *t) { return t ? PD_DATA(t, float) : NULL; }

static double *alloc_ref(int64_t n) {
  double *r = calloc((size_t)(n > 0 ? n : 1), sizeof *r);
  assert_non_null(r);
  return r;
}

/* ---- random numbers: element i drawn directly is the CPU's i-th draw ---- */
static void test_rng_by_index(void **state) {
  (void)state;
  uint64_t s = 0x1234abcdull, seq = s;
  for (uint64_t i = 0; i < 1000; i++) assert_true(pd_rng_uniform(&seq) == pd_rng_uniform_at(s, i));
  seq = s;
  for (uint64_t i = 0; i < 1000; i++) assert_true(pd_rng_gaussian(&seq) == pd_rng_gaussian_at(s, i));
  /* an op's per-step stream state: the value the run's streams had before
   * pd_rng_op_seed (run seed 1, op 3, step 5) */
  assert_true(pd_rng_op_seed(1, 3, 5) == 0xdef11df9d8c30dd2ull);
  /* uniform_random with a fixed seed: what the GPU kernel writes */
  pd_tensor *y = ot_out();
  const char *attrs[] = {"shape", "ints: [3, 50]", "min", "f: -2", "max", "f: 3", "seed", "i: 77", NULL};
  ot_run("uniform_random", attrs, NULL, NULL, (pd_tensor *[]){y}, NULL);
  for (int64_t i = 0; i < 150; i++) assert_true(f32(y)[i] == (float)(-2 + 5 * pd_rng_uniform_at(77, (uint64_t)i)));
  ot_free(y);
  y = ot_out();
  const char *gattrs[] = {"shape", "ints: [40]", "mean", "f: 1", "std", "f: 2", "seed", "i: 5", NULL};
  ot_run("gaussian_random", gattrs, NULL, NULL, (pd_tensor *[]){y}, NULL);
  for (int64_t i = 0; i < 40; i++) assert_true(f32(y)[i] == (float)(1 + 2 * pd_rng_gaussian_at(5, (uint64_t)i)));
  ot_free(y);
}

/* dropout's mask from the op's stream, element by element, as dropout.cu. */
static void test_dropout_mask(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){9, 31}, 3, -1, 1, 0), *y = ot_out(), *mask = ot_out();
  const char *attrs[] = {"dropout_prob", "f: 0.3", NULL};
  ot_run("dropout", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y, mask}, NULL);
  opctx o;
  ctx_open(&o, "dropout", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y, mask}, NULL);
  uint64_t s = pd_ctx_rng_seed(&o.c);
  float scale = (float)(1 / (1 - 0.3));
  int kept = 0;
  for (int64_t i = 0; i < 9 * 31; i++) {
    bool keep = pd_rng_uniform_at(s, (uint64_t)i) >= 0.3;
    kept += keep;
    assert_true(f32(mask)[i] == (float)keep);
    assert_true(f32(y)[i] == (keep ? f32(x)[i] * scale : 0));
  }
  assert_true(kept > 150 && kept < 240); /* about 70% of 279 */
  pd_opcall_free(&o.call);
  ot_free(x), ot_free(y), ot_free(mask);
}

/* ---- activations and fc's product, bias and activation ---- */
static void test_activations(void **state) {
  (void)state;
  const char *types[] = {"relu", "sigmoid", "tanh"};
  const pd_act acts[] = {PD_ACT_RELU, PD_ACT_SIGMOID, PD_ACT_TANH};
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){7, 37}, 1, -30, 30, 1e-3);
  pd_tensor *dy = ot_rand(PD_F32, 2, (int64_t[]){7, 37}, 2, -1, 1, 0);
  f32(x)[0] = f32(x)[100] = f32(x)[258] = NAN; /* kept by both (and Out's NaN passes dOut back) */
  double *ref = alloc_ref(7 * 37);
  for (int a = 0; a < 3; a++) {
    char grad[32];
    pd_tensor *y = ot_out(), *dx = ot_out();
    ot_run(types[a], NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
    for (int64_t i = 0; i < 7 * 37; i++) ref[i] = pd_act_float(acts[a], f32(x)[i]);
    ot_assert_close(y, ref, 7 * 37, TOL);
    snprintf(grad, sizeof grad, "%s_grad", types[a]);
    ot_run(grad, NULL, (pd_tensor *[]){x, y, dy}, NULL, (pd_tensor *[]){dx}, NULL);
    for (int64_t i = 0; i < 7 * 37; i++) ref[i] = pd_act_grad_float(acts[a], f32(y)[i], f32(dy)[i]);
    ot_assert_close(dx, ref, 7 * 37, TOL);
    ot_free(y), ot_free(dx);
  }
  free(ref);
  ot_free(x), ot_free(dy);
}

static void test_fc(void **state) {
  (void)state;
  const int64_t n = 6, k = 11, m = 5;
  pd_tensor *x = ot_rand(PD_F32, 3, (int64_t[]){n, 1, k}, 1, -1, 1, 0);
  pd_tensor *w = ot_rand(PD_F32, 2, (int64_t[]){k, m}, 2, -1, 1, 0), *b = ot_rand(PD_F32, 1, &m, 3, -1, 1, 0);
  pd_tensor *y = ot_out(), *dy = ot_rand(PD_F32, 2, (int64_t[]){n, m}, 4, -1, 1, 0);
  pd_tensor *dx = ot_out(), *dw = ot_out(), *db = ot_out();
  const char *attrs[] = {"size", "i: 5", "act", "s: \"tanh\"", NULL};
  ot_run("fc", attrs, (pd_tensor *[]){x, w, b}, NULL, (pd_tensor *[]){y}, NULL);
  ot_run("fc_grad", attrs, (pd_tensor *[]){x, w, b, y, dy}, NULL, (pd_tensor *[]){dx, dw, db}, NULL);
  double *ref = alloc_ref(n * k), g[6 * 5];
  /* fc.cu: the product (cuBLAS), then bias_act per element */
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) {
      float s = 0;
      for (int64_t q = 0; q < k; q++) s += f32(x)[i * k + q] * f32(w)[q * m + j];
      ref[i * m + j] = pd_act_float(PD_ACT_TANH, s + f32(b)[j]);
    }
  assert_close_sums(y, ref, n * m);
  /* act_grad per element, then col_sums (one thread per column, rows in order) */
  for (int64_t e = 0; e < n * m; e++) g[e] = pd_act_grad_float(PD_ACT_TANH, f32(y)[e], f32(dy)[e]);
  for (int64_t j = 0; j < m; j++) {
    float s = 0;
    for (int64_t i = 0; i < n; i++) s += (float)g[i * m + j];
    ref[j] = s;
  }
  ot_assert_close(db, ref, m, TOL);
  for (int64_t i = 0; i < n; i++)
    for (int64_t q = 0; q < k; q++) {
      double s = 0;
      for (int64_t j = 0; j < m; j++) s += g[i * m + j] * f32(w)[q * m + j];
      ref[i * k + q] = s;
    }
  assert_close_sums(dx, ref, n * k);
  free(ref);
  ot_free(x), ot_free(w), ot_free(b), ot_free(y), ot_free(dy), ot_free(dx), ot_free(dw), ot_free(db);
}

/* ---- elementwise_add: Y's element for each X element, and dY's gather ---- */
static void check_bcast(int nx, const int64_t *xd, int ny, const int64_t *yd, const char *axis) {
  pd_tensor *x = ot_rand(PD_F32, nx, xd, 1, -1, 1, 0), *y = ot_rand(PD_F32, ny, yd, 2, -1, 1, 0);
  pd_tensor *out = ot_out(), *dout = NULL, *dx = ot_out(), *dy = ot_out();
  const char *attrs[] = {"axis", axis, NULL};
  ot_run("elementwise_add", attrs, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
  dout = ot_rand(PD_F32, out->ndim, out->dims, 3, -1, 1, 0);
  ot_run("elementwise_add_grad", attrs, (pd_tensor *[]){x, y, out, dout}, NULL, (pd_tensor *[]){dx, dy}, NULL);
  opctx o;
  ctx_open(&o, "elementwise_add", attrs, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
  pd_bcast b;
  pd_elementwise_add_bcast(&o.c, x, y, &b);
  assert_int_equal(b.numel, pd_tensor_numel(x));
  assert_int_equal(b.ny, pd_tensor_numel(y));
  double *ref = alloc_ref(b.numel);
  for (int64_t i = 0; i < b.numel; i++) ref[i] = f32(x)[i] + f32(y)[pd_bcast_yoff(&b, i)];
  ot_assert_close(out, ref, b.numel, TOL);
  /* add_bwd_y: each of Y's elements sums the reps elements it was added to */
  int64_t reps = b.numel / b.ny;
  int64_t *seen = calloc((size_t)b.numel, sizeof *seen);
  for (int64_t j = 0; j < b.ny; j++) {
    double s = 0;
    for (int64_t r = 0; r < reps; r++) {
      int64_t i = pd_bcast_xidx(&b, j, r);
      assert_true(i >= 0 && i < b.numel);
      assert_int_equal(pd_bcast_yoff(&b, i), j); /* the inverse of the forward map */
      seen[i]++;
      s += f32(dout)[i];
    }
    ref[j] = s;
  }
  for (int64_t i = 0; i < b.numel; i++) assert_int_equal(seen[i], 1);
  ot_assert_close(dy, ref, b.ny, TOL);
  free(seen), free(ref);
  pd_opcall_free(&o.call);
  ot_free(x), ot_free(y), ot_free(out), ot_free(dout), ot_free(dx), ot_free(dy);
}

static void test_elementwise_add_bcast(void **state) {
  (void)state;
  check_bcast(2, (int64_t[]){6, 5}, 1, (int64_t[]){5}, "i: -1");
  check_bcast(4, (int64_t[]){2, 3, 4, 5}, 2, (int64_t[]){3, 4}, "i: 1");
  check_bcast(4, (int64_t[]){2, 3, 4, 5}, 3, (int64_t[]){3, 1, 5}, "i: 1");
  check_bcast(4, (int64_t[]){2, 3, 1, 5}, 4, (int64_t[]){1, 3, 1, 1}, "i: 0");
  check_bcast(3, (int64_t[]){4, 3, 2}, 3, (int64_t[]){4, 3, 2}, "i: -1");
}

/* ---- softmax and the losses, one row per GPU block ---- */
/* A row's max and sum of expf(x - max), as softmax.cu's block reductions. */
static void row_stats(const float *x, int64_t d, float *m, float *sum) {
  *m = -INFINITY, *sum = 0;
  for (int64_t j = 0; j < d; j++) *m = x[j] > *m ? x[j] : *m;
  for (int64_t j = 0; j < d; j++) *sum += expf(x[j] - *m);
}

static void test_softmax(void **state) {
  (void)state;
  const int64_t rows = 9, d = 13;
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){rows, d}, 1, -20, 20, 0), *y = ot_out(), *dx = ot_out();
  pd_tensor *dy = ot_rand(PD_F32, 2, (int64_t[]){rows, d}, 2, -1, 1, 0);
  ot_run("softmax", NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  ot_run("softmax_grad", NULL, (pd_tensor *[]){x, y, dy}, NULL, (pd_tensor *[]){dx}, NULL);
  double ref[9 * 13];
  for (int64_t r = 0; r < rows; r++) {
    float m, s;
    row_stats(f32(x) + r * d, d, &m, &s);
    for (int64_t j = 0; j < d; j++) ref[r * d + j] = expf(f32(x)[r * d + j] - m) * (1 / s);
  }
  ot_assert_close(y, ref, rows * d, TOL);
  for (int64_t r = 0; r < rows; r++) {
    float dot = 0;
    for (int64_t j = 0; j < d; j++) dot += f32(dy)[r * d + j] * f32(y)[r * d + j];
    for (int64_t j = 0; j < d; j++) ref[r * d + j] = pd_softmax_grad_float(f32(y)[r * d + j], f32(dy)[r * d + j], dot);
  }
  ot_assert_close(dx, ref, rows * d, TOL);
  ot_free(x), ot_free(y), ot_free(dy), ot_free(dx);
}

static pd_tensor *labels(int64_t n, int64_t k) {
  pd_tensor *l = ot_tensor(PD_I64, 2, (int64_t[]){n, 1});
  for (int64_t i = 0; i < n; i++) PD_DATA(l, int64_t)[i] = (i * 7 + 3) % k;
  return l;
}

static void check_swce(bool soft) {
  const int64_t n = 8, k = 10;
  pd_tensor *z = ot_rand(PD_F32, 2, (int64_t[]){n, k}, 1, -50, 50, 0);
  pd_tensor *l = soft ? ot_rand(PD_F32, 2, (int64_t[]){n, k}, 2, 0, 0.2, 0) : labels(n, k);
  pd_tensor *s = ot_out(), *loss = ot_out(), *dz = ot_out();
  pd_tensor *ds = ot_rand(PD_F32, 2, (int64_t[]){n, k}, 3, -1, 1, 0),
            *dl = ot_rand(PD_F32, 2, (int64_t[]){n, 1}, 4, -1, 1, 0);
  const char *attrs[] = {"soft_label", soft ? "b: true" : "b: false", NULL};
  ot_run("softmax_with_cross_entropy", attrs, (pd_tensor *[]){z, l}, NULL, (pd_tensor *[]){s, loss}, NULL);
  ot_run("softmax_with_cross_entropy_grad", attrs, (pd_tensor *[]){z, l, s, loss, ds, dl}, NULL,
         (pd_tensor *[]){dz, NULL}, NULL);
  double ref[8 * 10], lref[8];
  for (int64_t i = 0; i < n; i++) {
    const float *zr = f32(z) + i * k;
    float m, sum;
    row_stats(zr, k, &m, &sum);
    float log_sum = logf(sum), acc = 0, mass = 0, dot = 0;
    for (int64_t j = 0; j < k; j++) ref[i * k + j] = expf(zr[j] - m) * (1 / sum);
    if (soft) {
      for (int64_t j = 0; j < k; j++) acc += f32(l)[i * k + j] * pd_swce_term_float(m, zr[j], log_sum);
      lref[i] = acc;
    } else {
      lref[i] = pd_swce_term_float(m, zr[PD_DATA(l, int64_t)[i]], log_sum);
    }
    /* backward, from the CPU's Softmax output as swce_bwd reads it */
    const float *sr = f32(s) + i * k;
    for (int64_t j = 0; j < k; j++) mass += soft ? f32(l)[i * k + j] : 0;
    for (int64_t j = 0; j < k; j++) dot += f32(ds)[i * k + j] * sr[j];
    for (int64_t j = 0; j < k; j++) {
      float g = f32(dl)[i];
      float v = soft ? pd_swce_soft_grad_float(sr[j], f32(l)[i * k + j], mass, g)
                     : pd_swce_hard_grad_float(sr[j], g, j == PD_DATA(l, int64_t)[i]);
      ref[i * k + j] = v + pd_softmax_grad_float(sr[j], f32(ds)[i * k + j], dot);
    }
  }
  ot_assert_close(dz, ref, n * k, TOL);
  ot_assert_close(loss, lref, n, TOL);
  for (int64_t i = 0; i < n; i++) {
    float m, sum;
    row_stats(f32(z) + i * k, k, &m, &sum);
    for (int64_t j = 0; j < k; j++) ref[i * k + j] = expf(f32(z)[i * k + j] - m) * (1 / sum);
  }
  ot_assert_close(s, ref, n * k, TOL);
  ot_free(z), ot_free(l), ot_free(s), ot_free(loss), ot_free(dz), ot_free(ds), ot_free(dl);
}

static void test_softmax_with_cross_entropy(void **state) {
  (void)state;
  check_swce(false);
  check_swce(true);
}

static void check_ce(bool soft) {
  const int64_t n = 7, k = 6;
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){n, k}, 1, 0, 1, 0);
  PD_DATA(x, float)[0] = 0; /* clamped */
  pd_tensor *l = soft ? ot_rand(PD_F32, 2, (int64_t[]){n, k}, 2, 0, 0.3, 0) : labels(n, k);
  pd_tensor *y = ot_out(), *dx = ot_out(), *dy = ot_rand(PD_F32, 2, (int64_t[]){n, 1}, 3, -1, 1, 0);
  const char *attrs[] = {"soft_label", soft ? "b: true" : "b: false", NULL};
  ot_run("cross_entropy", attrs, (pd_tensor *[]){x, l}, NULL, (pd_tensor *[]){y}, NULL);
  ot_run("cross_entropy_grad", attrs, (pd_tensor *[]){x, l, y, dy}, NULL, (pd_tensor *[]){dx, NULL}, NULL);
  double ref[7 * 6];
  for (int64_t i = 0; i < n; i++)
    ref[i] = soft ? pd_ce_soft_row_float(f32(x) + i * k, f32(l) + i * k, k)
                  : pd_ce_hard_float(f32(x)[i * k + PD_DATA(l, int64_t)[i]]);
  ot_assert_close(y, ref, n, TOL);
  for (int64_t e = 0; e < n * k; e++) {
    int64_t i = e / k;
    ref[e] = soft ? pd_ce_soft_grad_float(f32(dy)[i], f32(l)[e], f32(x)[e])
                  : pd_ce_hard_grad_float(f32(dy)[i], f32(x)[e], e % k == PD_DATA(l, int64_t)[i]);
  }
  ot_assert_close(dx, ref, n * k, TOL);
  ot_free(x), ot_free(l), ot_free(y), ot_free(dx), ot_free(dy);
}

static void test_cross_entropy(void **state) {
  (void)state;
  check_ce(false);
  check_ce(true);
}

/* ---- batch_norm: channel k's elements through pd_bn_at ---- */
static void test_batch_norm_channels(void **state) {
  (void)state;
  const int64_t n = 3, ch = 4, sp = 10;
  pd_tensor *x = ot_rand(PD_F32, 4, (int64_t[]){n, ch, 2, 5}, 1, -2, 3, 0);
  pd_tensor *scale = ot_rand(PD_F32, 1, &ch, 2, 0.5, 2, 0), *bias = ot_rand(PD_F32, 1, &ch, 3, -1, 1, 0);
  pd_tensor *mean = ot_rand(PD_F32, 1, &ch, 4, -1, 1, 0), *var = ot_rand(PD_F32, 1, &ch, 5, 0.5, 2, 0);
  double rm[4], rv[4], ref[3 * 4 * 10];
  for (int64_t k = 0; k < ch; k++) rm[k] = f32(mean)[k], rv[k] = f32(var)[k];
  pd_tensor *y = ot_out();
  const char *attrs[] = {"momentum", "f: 0.9", "epsilon", "f: 1e-5", NULL};
  ot_run("batch_norm", attrs, (pd_tensor *[]){x, scale, bias, mean, var}, NULL, (pd_tensor *[]){y, mean, var}, NULL);
  int64_t m = n * sp;
  int *seen = calloc((size_t)(n * ch * sp), sizeof *seen);
  for (int64_t k = 0; k < ch; k++) { /* bn_fwd, block k */
    double s = 0, q = 0;
    for (int64_t e = 0; e < m; e++) seen[pd_bn_at(ch, sp, k, e)]++, s += f32(x)[pd_bn_at(ch, sp, k, e)];
    double mu = s / (double)m;
    for (int64_t e = 0; e < m; e++) q += (f32(x)[pd_bn_at(ch, sp, k, e)] - mu) * (f32(x)[pd_bn_at(ch, sp, k, e)] - mu);
    double v = q / (double)m, a = f32(scale)[k] / sqrt(v + 1e-5);
    for (int64_t e = 0; e < m; e++) {
      int64_t i = pd_bn_at(ch, sp, k, e);
      ref[i] = (float)((f32(x)[i] - mu) * a + f32(bias)[k]);
    }
    rm[k] = (float)pd_bn_running_mean(rm[k], mu, 0.9);
    rv[k] = (float)pd_bn_running_var(rv[k], v, 0.9, (double)m);
  }
  for (int64_t i = 0; i < n * ch * sp; i++) assert_int_equal(seen[i], 1);
  ot_assert_close(y, ref, n * ch * sp, TOL);
  ot_assert_close(mean, rm, ch, TOL);
  ot_assert_close(var, rv, ch, TOL);
  free(seen);
  ot_free(x), ot_free(scale), ot_free(bias), ot_free(mean), ot_free(var), ot_free(y);
}

/* ---- pool2d: one output per thread forward, one input per thread backward ---- */
typedef struct pool_case {
  const char *type, *ksize, *strides, *pads;
  bool ceil, global, exclusive;
  int64_t h, w;
} pool_case;

static void check_pool(const pool_case *q) {
  const int64_t n = 2, c = 3;
  pd_tensor *x = ot_rand(PD_F32, 4, (int64_t[]){n, c, q->h, q->w}, 1, 0, 1, 0);
  for (int64_t i = 0; i < pd_tensor_numel(x); i++) f32(x)[i] = floorf(f32(x)[i] * 3); /* many ties */
  /* and NaNs: a window holding one is NaN, its first NaN takes the gradient */
  for (int64_t i = 5; i < pd_tensor_numel(x); i += 23) f32(x)[i] = NAN;
  f32(x)[6] = NAN;
  const char *attrs[] = {"pooling_type",
                         q->type,
                         "ksize",
                         q->ksize,
                         "strides",
                         q->strides,
                         "paddings",
                         q->pads,
                         "ceil_mode",
                         q->ceil ? "b: true" : "b: false",
                         "global_pooling",
                         q->global ? "b: true" : "b: false",
                         "exclusive",
                         q->exclusive ? "b: true" : "b: false",
                         NULL};
  pd_tensor *y = ot_out(), *dx = ot_out();
  ot_run("pool2d", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  pd_tensor *dy = ot_rand(PD_F32, 4, y->dims, 2, -1, 1, 0);
  ot_run("pool2d_grad", attrs, (pd_tensor *[]){x, y, dy}, NULL, (pd_tensor *[]){dx}, NULL);
  opctx o;
  ctx_open(&o, "pool2d", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  pd_pool_geom g;
  assert_int_equal(pd_pool2d_geom(&o.c, x, &g), PD_OK);
  int64_t per = g.ho * g.wo, nin = g.n * g.c * g.h * g.w;
  double *ref = alloc_ref(nin);
  for (int64_t e = 0; e < g.n * g.c * per; e++) /* pool_fwd */
    ref[e] = pd_pool_out(f32(x) + (e / per) * g.h * g.w, &g, (e % per) / g.wo, (e % per) % g.wo);
  ot_assert_close(y, ref, g.n * g.c * per, TOL);
  for (int64_t e = 0; e < nin; e++) { /* pool_bwd */
    int64_t pl = e / (g.h * g.w), i = e % (g.h * g.w);
    ref[e] = pd_pool_grad_at(f32(x) + pl * g.h * g.w, f32(dy) + pl * per, &g, i / g.w, i % g.w);
  }
  ot_assert_close(dx, ref, nin, TOL);
  free(ref);
  pd_opcall_free(&o.call);
  ot_free(x), ot_free(y), ot_free(dy), ot_free(dx);
}

static void test_pool2d(void **state) {
  (void)state;
  const pool_case cases[] = {
      {"s: \"max\"", "ints: [2, 2]", "ints: [2, 2]", "ints: [0, 0]", false, false, true, 8, 6}, /* the 2x2 fast path */
      {"s: \"max\"", "ints: [3, 3]", "ints: [2, 1]", "ints: [1, 1]", false, false, true, 7, 6}, /* overlapping */
      {"s: \"max\"", "ints: [3, 2]", "ints: [2, 2]", "ints: [1, 0]", true, false, true, 8, 7},  /* ceil mode */
      {"s: \"avg\"", "ints: [3, 3]", "ints: [2, 2]", "ints: [1, 1]", false, false, true, 7, 7}, /* exclusive */
      {"s: \"avg\"", "ints: [3, 3]", "ints: [2, 2]", "ints: [1, 1]", true, false, false, 8, 6}, /* inclusive, ceil */
      {"s: \"avg\"", "ints: [1, 1]", "ints: [1, 1]", "ints: [0, 0]", false, true, true, 5, 4},  /* global */
      {"s: \"max\"", "ints: [1, 1]", "ints: [1, 1]", "ints: [0, 0]", false, true, true, 5, 4},  /* global */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_pool(&cases[i]);
}

/* ---- conv2d: im2col, the group products, col2im's gather ---- */
typedef struct conv_case {
  int64_t n, c, h, w, m;
  const char *ksize, *strides, *pads, *dils, *groups;
} conv_case;

static void check_conv(const conv_case *q) {
  char nf[32];
  snprintf(nf, sizeof nf, "i: %lld", (long long)q->m);
  const char *attrs[] = {"num_filters", nf,          "kernel_size", q->ksize, "strides", q->strides, "paddings",
                         q->pads,       "dilations", q->dils,       "groups", q->groups, NULL};
  pd_tensor *x = ot_rand(PD_F32, 4, (int64_t[]){q->n, q->c, q->h, q->w}, 1, -1, 1, 0);
  pd_tensor *y = ot_out(), *f = ot_out();
  opctx o;
  pd_tensor *b = ot_rand(PD_F32, 1, &q->m, 3, -1, 1, 0);
  /* the filter's shape from the shape function, then random values */
  ctx_open(&o, "conv2d", attrs, (pd_tensor *[]){x, f, b}, NULL, (pd_tensor *[]){y}, NULL);
  pd_conv_geom g;
  assert_int_equal(pd_conv2d_geom(&o.c, x, &g), PD_OK);
  pd_opcall_free(&o.call);
  ot_free(f);
  f = ot_rand(PD_F32, 4, (int64_t[]){g.m, g.cg, g.kh, g.kw}, 2, -1, 1, 0);
  ot_run("conv2d", attrs, (pd_tensor *[]){x, f, b}, NULL, (pd_tensor *[]){y}, NULL);
  ot_assert_dims(y, g.n, g.m, g.ho, g.wo);
  pd_tensor *dy = ot_rand(PD_F32, 4, y->dims, 4, -1, 1, 0), *dx = ot_out(), *dw = ot_out(), *db = ot_out();
  ot_run("conv2d_grad", attrs, (pd_tensor *[]){x, f, b, y, dy}, NULL, (pd_tensor *[]){dx, dw, db}, NULL);
  const int64_t K = g.c * g.kh * g.kw, P = g.p, chw = g.c * g.h * g.w;
  float *col = calloc((size_t)(K * P), sizeof *col), *dcol = calloc((size_t)(K * P), sizeof *dcol);
  double *yref = alloc_ref(g.n * g.m * P), *xref = alloc_ref(g.n * chw), *wref = alloc_ref(g.m * g.kg);
  for (int64_t i = 0; i < g.n; i++) {
    const float *xi = f32(x) + i * chw, *dyi = f32(dy) + i * g.m * P;
    for (int64_t r = 0; r < K; r++) /* im2col_k, one image */
      for (int64_t p = 0; p < P; p++) col[r * P + p] = pd_im2col_at(xi, &g, r, p);
    for (int64_t gr = 0; gr < g.groups; gr++) /* the products of each group */
      for (int64_t mm = 0; mm < g.mg; mm++) {
        int64_t mo = gr * g.mg + mm;
        for (int64_t p = 0; p < P; p++) {
          double s = 0;
          for (int64_t r = 0; r < g.kg; r++) s += (double)f32(f)[mo * g.kg + r] * col[(gr * g.kg + r) * P + p];
          yref[(i * g.m + mo) * P + p] = s + f32(b)[mo];
        }
        for (int64_t r = 0; r < g.kg; r++) {
          double s = 0;
          for (int64_t p = 0; p < P; p++) s += (double)dyi[mo * P + p] * col[(gr * g.kg + r) * P + p];
          wref[mo * g.kg + r] += s;
        }
      }
    for (int64_t gr = 0; gr < g.groups; gr++) /* dcol = Filter_g^T dOut_g */
      for (int64_t r = 0; r < g.kg; r++)
        for (int64_t p = 0; p < P; p++) {
          double s = 0;
          for (int64_t mm = 0; mm < g.mg; mm++)
            s += (double)f32(f)[(gr * g.mg + mm) * g.kg + r] * dyi[(gr * g.mg + mm) * P + p];
          dcol[(gr * g.kg + r) * P + p] = (float)s;
        }
    for (int64_t e = 0; e < chw; e++) /* col2im_k */
      xref[i * chw + e] = pd_col2im_at(dcol, P, &g, e / (g.h * g.w), (e / g.w) % g.h, e % g.w);
  }
  assert_close_sums(y, yref, g.n * g.m * P);
  assert_close_sums(dx, xref, g.n * chw);
  assert_close_sums(dw, wref, g.m * g.kg);
  free(col), free(dcol), free(yref), free(xref), free(wref);
  ot_free(x), ot_free(f), ot_free(b), ot_free(y), ot_free(dy), ot_free(dx), ot_free(dw), ot_free(db);
}

static void test_conv2d(void **state) {
  (void)state;
  const conv_case cases[] = {
      {2, 3, 7, 6, 4, "ints: [3, 3]", "ints: [1, 1]", "ints: [1, 1]", "ints: [1, 1]", "i: 1"},
      {2, 4, 9, 8, 6, "ints: [3, 2]", "ints: [2, 3]", "ints: [1, 2]", "ints: [2, 1]", "i: 2"},
      {3, 2, 5, 5, 3, "ints: [1, 1]", "ints: [1, 1]", "ints: [0, 0]", "ints: [1, 1]", "i: 1"},
      {1, 6, 6, 7, 6, "ints: [5, 5]", "ints: [1, 2]", "ints: [2, 2]", "ints: [1, 1]", "i: 3"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_conv(&cases[i]);
}

/* ---- cos_sim with a broadcast Y: per-row coefficients, then dY by columns ---- */
static void test_cos_sim_broadcast(void **state) {
  (void)state;
  const int64_t n = 6, d = 9;
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){n, d}, 1, -1, 1, 0),
            *y = ot_rand(PD_F32, 2, (int64_t[]){1, d}, 2, -1, 1, 0);
  pd_tensor *out = ot_out(), *xn = ot_out(), *yn = ot_out(), *dx = ot_out(), *dy = ot_out();
  pd_tensor *dout = ot_rand(PD_F32, 2, (int64_t[]){n, 1}, 3, -1, 1, 0),
            *dxn = ot_rand(PD_F32, 2, (int64_t[]){n, 1}, 4, -1, 1, 0);
  pd_tensor *dyn = ot_rand(PD_F32, 2, (int64_t[]){1, 1}, 5, -1, 1, 0);
  const char *attrs[] = {"scale", "f: 2.5", NULL};
  ot_run("cos_sim", attrs, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out, xn, yn}, NULL);
  ot_run("cos_sim_grad", attrs, (pd_tensor *[]){x, y, out, xn, yn, dout, dxn, dyn}, NULL, (pd_tensor *[]){dx, dy},
         NULL);
  double oref[6], gx[6 * 9], gy[9], coef[12], yy = 0;
  for (int64_t i = 0; i < n; i++) { /* cos_fwd and cos_bwd, block i */
    double xy = 0, xx = 0, yyi = 0;
    for (int64_t j = 0; j < d; j++) {
      xy += (double)f32(x)[i * d + j] * f32(y)[j];
      xx += (double)f32(x)[i * d + j] * f32(x)[i * d + j];
      yyi += (double)f32(y)[j] * f32(y)[j];
    }
    oref[i] = (float)pd_cos_out(xy, xx, yyi, 2.5);
    pd_cos_coef k = pd_cos_coefs(xy, xx, yyi, 2.5, f32(dout)[i], f32(dxn)[i], 0, false);
    for (int64_t j = 0; j < d; j++) gx[i * d + j] = (float)(k.k * f32(y)[j] + k.kx * f32(x)[i * d + j]);
    coef[2 * i] = k.k, coef[2 * i + 1] = k.ky;
  }
  for (int64_t j = 0; j < d; j++) yy += (double)f32(y)[j] * f32(y)[j];
  for (int64_t j = 0; j < d; j++) { /* cos_bwd_bcast, thread j */
    float acc = 0;
    for (int64_t i = 0; i < n; i++) acc += (float)(coef[2 * i] * f32(x)[i * d + j] + coef[2 * i + 1] * f32(y)[j]);
    acc += (float)(f32(dyn)[0] * f32(y)[j] / sqrt(yy));
    gy[j] = acc;
  }
  ot_assert_close(out, oref, n, TOL);
  ot_assert_close(dx, gx, n * d, TOL);
  ot_assert_close(dy, gy, d, TOL);
  ot_free(x), ot_free(y), ot_free(out), ot_free(xn), ot_free(yn), ot_free(dx), ot_free(dy), ot_free(dout), ot_free(dxn);
  ot_free(dyn);
}

/* ---- broadcast_add/sub/mul/div: X's and Y's elements per Out element, and
 * dX's and dY's gathers (bc_bwd_few: one thread per element, in Out's order) ---- */
static void check_bc_grad(const pd_bc_map *m, pd_bc_kind k, bool for_y, const pd_tensor *x, const pd_tensor *y,
                          const pd_tensor *g, const pd_tensor *d) {
  int64_t n = for_y ? m->ny : m->nx, reps = n ? m->numel / n : 0;
  const int64_t *st = for_y ? m->ys : m->xs;
  double *ref = alloc_ref(n);
  int64_t *seen = calloc((size_t)(m->numel > 0 ? m->numel : 1), sizeof *seen);
  for (int64_t j = 0; j < n; j++) {
    float s = 0;
    for (int64_t r = 0; r < reps; r++) {
      int64_t i = pd_strided_gather(m->nd, m->size, st, j, r);
      assert_true(i >= 0 && i < m->numel);
      assert_int_equal(pd_strided_off(m->nd, m->size, st, i), j); /* the inverse of the forward map */
      seen[i]++;
      float xv = f32(x)[pd_strided_off(m->nd, m->size, m->xs, i)],
            yv = f32(y)[pd_strided_off(m->nd, m->size, m->ys, i)];
      s += for_y ? pd_bc_dy_float(k, f32(g)[i], xv, yv) : pd_bc_dx_float(k, f32(g)[i], yv);
    }
    ref[j] = s;
  }
  for (int64_t i = 0; i < m->numel; i++) assert_int_equal(seen[i], 1);
  ot_assert_close(d, ref, n, TOL);
  free(ref), free(seen);
}

static void check_broadcast(int nx, const int64_t *xd, int ny, const int64_t *yd) {
  static const char *const types[] = {"broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div"};
  static const pd_bc_kind kinds[] = {PD_BC_ADD, PD_BC_SUB, PD_BC_MUL, PD_BC_DIV};
  pd_tensor *x = ot_rand(PD_F32, nx, xd, 1, -2, 2, 0), *y = ot_rand(PD_F32, ny, yd, 2, -2, 2, 0.5);
  for (int t = 0; t < 4; t++) {
    char grad[32];
    pd_tensor *out = ot_out(), *dx = ot_out(), *dy = ot_out();
    ot_run(types[t], NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
    pd_tensor *g = ot_rand(PD_F32, out->ndim, out->dims, 3, -1, 1, 0);
    snprintf(grad, sizeof grad, "%s_grad", types[t]);
    ot_run(grad, NULL, (pd_tensor *[]){x, y, out, g}, NULL, (pd_tensor *[]){dx, dy}, NULL);
    pd_bc_map m;
    pd_bc_map_init(&m, x->ndim, x->dims, y->ndim, y->dims, out->ndim, out->dims);
    assert_int_equal(m.numel, pd_tensor_numel(out));
    double *ref = alloc_ref(m.numel);
    for (int64_t i = 0; i < m.numel; i++) /* bc_fwd */
      ref[i] = pd_bc_op_float(kinds[t], f32(x)[pd_strided_off(m.nd, m.size, m.xs, i)],
                              f32(y)[pd_strided_off(m.nd, m.size, m.ys, i)]);
    ot_assert_close(out, ref, m.numel, TOL);
    check_bc_grad(&m, kinds[t], false, x, y, g, dx);
    check_bc_grad(&m, kinds[t], true, x, y, g, dy);
    free(ref);
    ot_free(out), ot_free(g), ot_free(dx), ot_free(dy);
  }
  ot_free(x), ot_free(y);
}

static void test_broadcast(void **state) {
  (void)state;
  check_broadcast(2, (int64_t[]){3, 4}, 0, NULL);                    /* Y a scalar */
  check_broadcast(0, NULL, 3, (int64_t[]){2, 3, 4});                 /* X a scalar */
  check_broadcast(3, (int64_t[]){2, 3, 4}, 1, (int64_t[]){4});       /* a bias */
  check_broadcast(3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){1, 3, 1}); /* a middle dim */
  check_broadcast(3, (int64_t[]){2, 1, 4}, 2, (int64_t[]){3, 1});    /* both repeat */
  check_broadcast(4, (int64_t[]){2, 3, 1, 5}, 4, (int64_t[]){2, 1, 4, 5});
  check_broadcast(2, (int64_t[]){3, 4}, 2, (int64_t[]){3, 4}); /* no broadcast */
}

/* ---- transpose: X's element for each Out element (perm_fwd), written back by perm_bwd ---- */
static void check_transpose(int nd, const int64_t *xd, const char *perm) {
  const char *attrs[] = {"perm", perm, NULL};
  pd_tensor *x = ot_rand(PD_F32, nd, xd, 1, -1, 1, 0), *out = ot_out(), *dx = ot_out();
  ot_run("transpose", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  pd_tensor *g = ot_rand(PD_F32, out->ndim, out->dims, 2, -1, 1, 0);
  ot_run("transpose_grad", attrs, (pd_tensor *[]){x, out, g}, NULL, (pd_tensor *[]){dx}, NULL);
  opctx o;
  ctx_open(&o, "transpose", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){out}, NULL);
  int p[PD_MAX_DIMS];
  pd_perm_map m;
  pd_transpose_perm(&o.c, x->ndim, p);
  pd_perm_map_init(&m, x->ndim, x->dims, p);
  assert_int_equal(m.numel, pd_tensor_numel(x));
  for (int i = 0; i < nd; i++) assert_int_equal(m.size[i], out->dims[i]);
  float *back = calloc((size_t)m.numel, sizeof *back);
  int *seen = calloc((size_t)m.numel, sizeof *seen);
  for (int64_t e = 0; e < m.numel; e++) {
    int64_t off = pd_strided_off(m.nd, m.size, m.st, e);
    assert_true(f32(out)[e] == f32(x)[off]);
    back[off] = f32(g)[e], seen[off]++;
  }
  for (int64_t e = 0; e < m.numel; e++) assert_int_equal(seen[e], 1), assert_true(f32(dx)[e] == back[e]);
  free(back), free(seen);
  pd_opcall_free(&o.call);
  ot_free(x), ot_free(out), ot_free(g), ot_free(dx);
}

static void test_transpose(void **state) {
  (void)state;
  check_transpose(2, (int64_t[]){5, 7}, "ints: [1, 0]");
  check_transpose(3, (int64_t[]){2, 3, 4}, "ints: []"); /* reversed */
  check_transpose(4, (int64_t[]){2, 3, 4, 5}, "ints: [0, 2, 3, 1]");
  check_transpose(4, (int64_t[]){2, 3, 4, 5}, "ints: [3, 1, 0, 2]");
  check_transpose(1, (int64_t[]){6}, "ints: [0]");
}

/* ---- matmul: the batches as matmul.cu's gemm_batches issues them ---- */
/* C (+)= op(A) op(B) for every batch b, walked as gemm_batches does: the
 * split from pd_mm_split, outer loop, then the strided batch; each batch's
 * offsets checked against pd_strided_off's. Accumulates into c (zeroed by
 * the caller) in that order. */
static void mm_replay(const pd_mm_layout *p, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                      const int64_t *as, int64_t amat, int64_t lda, const float *b, const int64_t *bs, int64_t bmat,
                      int64_t ldb, double *c, const int64_t *cs, int64_t cmat, int64_t ldc, bool one_by_one) {
  const int64_t *st[3] = {as, bs, cs};
  int64_t step[3] = {0, 0, 0}, inner = 1;
  int s = one_by_one ? p->nb : pd_mm_split(p, st, step);
  for (int i = s; i < p->nb; i++) inner *= p->batch[i];
  for (int64_t o = 0; o < p->nbatch / inner; o++)
    for (int64_t q = 0; q < inner; q++) {
      int64_t bi = o * inner + q;
      int64_t ao = pd_strided_off(p->nb, p->batch, as, o * inner) + q * step[0];
      int64_t bo = pd_strided_off(p->nb, p->batch, bs, o * inner) + q * step[1];
      int64_t co = pd_strided_off(p->nb, p->batch, cs, o * inner) + q * step[2];
      assert_int_equal(ao, pd_strided_off(p->nb, p->batch, as, bi));
      assert_int_equal(bo, pd_strided_off(p->nb, p->batch, bs, bi));
      assert_int_equal(co, pd_strided_off(p->nb, p->batch, cs, bi));
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          double sum = 0;
          for (int64_t r = 0; r < k; r++)
            sum += (double)a[ao * amat + (ta ? r * lda + i : i * lda + r)] *
                   b[bo * bmat + (tb ? j * ldb + r : r * ldb + j)];
          c[co * cmat + i * ldc + j] += sum;
        }
    }
}

static void check_matmul(int nx, const int64_t *xd, int ny, const int64_t *yd) {
  pd_tensor *x = ot_rand(PD_F32, nx, xd, 1, -1, 1, 0), *y = ot_rand(PD_F32, ny, yd, 2, -1, 1, 0);
  pd_tensor *out = ot_out(), *dx = ot_out(), *dy = ot_out();
  ot_run("matmul", NULL, (pd_tensor *[]){x, y}, NULL, (pd_tensor *[]){out}, NULL);
  pd_tensor *g = ot_rand(PD_F32, out->ndim, out->dims, 3, -1, 1, 0);
  ot_run("matmul_grad", NULL, (pd_tensor *[]){x, y, out, g}, NULL, (pd_tensor *[]){dx, dy}, NULL);
  pd_mm_layout p;
  assert_int_equal(pd_matmul_layout(x, y, &p), 0);
  int64_t no = pd_tensor_numel(out), nxe = pd_tensor_numel(x), nye = pd_tensor_numel(y);
  assert_int_equal(no, p.nbatch * p.m * p.n);
  double *ref = alloc_ref(no), *rx = alloc_ref(nxe), *ry = alloc_ref(nye);
  mm_replay(&p, false, false, p.m, p.n, p.k, f32(x), p.xs, p.m * p.k, p.k, f32(y), p.ys, p.k * p.n, p.n, ref, p.os,
            p.m * p.n, p.n, false);
  assert_close_sums(out, ref, no);
  bool x_rep = !pd_mm_unrepeated(&p, p.xs), y_rep = !pd_mm_unrepeated(&p, p.ys);
  mm_replay(&p, false, true, p.m, p.k, p.n, f32(g), p.os, p.m * p.n, p.n, f32(y), p.ys, p.k * p.n, p.n, rx, p.xs,
            p.m * p.k, p.k, x_rep);
  assert_close_sums(dx, rx, nxe);
  int64_t step;
  if (y_rep && pd_mm_uniform(&p, p.ys, 0, &step) && step == 0 && pd_mm_uniform(&p, p.xs, 0, &step) && step == 1) {
    /* one product over the flattened rows: X dense means batch b's X is matrix b */
    for (int64_t b = 0; b < p.nbatch; b++) assert_int_equal(pd_strided_off(p.nb, p.batch, p.xs, b), b);
    for (int64_t r = 0; r < p.k; r++)
      for (int64_t j = 0; j < p.n; j++) {
        double sum = 0;
        for (int64_t i = 0; i < p.nbatch * p.m; i++) sum += (double)f32(x)[i * p.k + r] * f32(g)[i * p.n + j];
        ry[r * p.n + j] = sum;
      }
  } else {
    mm_replay(&p, true, false, p.k, p.n, p.m, f32(x), p.xs, p.m * p.k, p.k, f32(g), p.os, p.m * p.n, p.n, ry, p.ys,
              p.k * p.n, p.n, y_rep);
  }
  assert_close_sums(dy, ry, nye);
  free(ref), free(rx), free(ry);
  ot_free(x), ot_free(y), ot_free(out), ot_free(g), ot_free(dx), ot_free(dy);
}

static void test_matmul(void **state) {
  (void)state;
  check_matmul(2, (int64_t[]){4, 5}, 2, (int64_t[]){5, 3});                   /* plain */
  check_matmul(3, (int64_t[]){6, 4, 5}, 2, (int64_t[]){5, 3});                /* one Y for all batches */
  check_matmul(2, (int64_t[]){4, 5}, 3, (int64_t[]){6, 5, 3});                /* one X for all batches */
  check_matmul(4, (int64_t[]){2, 3, 4, 5}, 4, (int64_t[]){2, 3, 5, 3});       /* dense batches */
  check_matmul(4, (int64_t[]){2, 1, 4, 5}, 3, (int64_t[]){3, 5, 2});          /* both repeat */
  check_matmul(5, (int64_t[]){3, 1, 2, 4, 5}, 5, (int64_t[]){1, 2, 2, 5, 3}); /* split: a loop, then batched */
  check_matmul(1, (int64_t[]){5}, 3, (int64_t[]){2, 5, 3});                   /* 1-D X */
  check_matmul(3, (int64_t[]){2, 4, 5}, 1, (int64_t[]){5});                   /* 1-D Y */
}

/* ---- log_softmax: one block per row ---- */
static void test_log_softmax(void **state) {
  (void)state;
  const int64_t rows = 7, d = 19;
  pd_tensor *x = ot_rand(PD_F32, 3, (int64_t[]){7, 1, d}, 1, -30, 30, 0), *y = ot_out(), *dx = ot_out();
  pd_tensor *dy = ot_rand(PD_F32, 3, (int64_t[]){7, 1, d}, 2, -1, 1, 0);
  ot_run("log_softmax", NULL, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  ot_run("log_softmax_grad", NULL, (pd_tensor *[]){x, y, dy}, NULL, (pd_tensor *[]){dx}, NULL);
  double ref[7 * 19];
  for (int64_t r = 0; r < rows; r++) { /* log_softmax_fwd, block r */
    float m, s;
    row_stats(f32(x) + r * d, d, &m, &s);
    float lse = pd_log_float(s);
    for (int64_t j = 0; j < d; j++) ref[r * d + j] = pd_log_softmax_float(f32(x)[r * d + j], m, lse);
  }
  ot_assert_close(y, ref, rows * d, TOL);
  for (int64_t r = 0; r < rows; r++) { /* log_softmax_bwd, block r */
    float sum = 0;
    for (int64_t j = 0; j < d; j++) sum += f32(dy)[r * d + j];
    for (int64_t j = 0; j < d; j++)
      ref[r * d + j] = pd_log_softmax_grad_float(f32(y)[r * d + j], f32(dy)[r * d + j], sum);
  }
  ot_assert_close(dx, ref, rows * d, TOL);
  ot_free(x), ot_free(y), ot_free(dy), ot_free(dx);
}

/* ---- small per-element pieces ---- */
static void test_scalars(void **state) {
  (void)state;
  /* adam's bias correction against its definition */
  double lr_t, eps_t;
  pd_adam_coefs(0.01, 0.9, 0.999, 1e-8, 3, &lr_t, &eps_t);
  assert_true(fabs(lr_t - 0.01 * sqrt(1 - pow(0.999, 3)) / (1 - pow(0.9, 3))) < 1e-15);
  assert_true(fabs(eps_t - 1e-8 * sqrt(1 - pow(0.999, 3))) < 1e-20);
  assert_true(pd_clip_scale(25, 10) == 1);
  assert_true(pd_clip_scale(400, 10) == 0.5);
  assert_int_equal(pd_sat_uint8_t(300.7), 255);
  assert_int_equal(pd_sat_int32_t(-1e12), INT32_MIN);
  assert_int_equal(pd_sat_int64_t(NAN), 0);
  assert_int_equal(pd_sat_int32_t(-2.9), -2);
  /* accuracy: ties count in the label's favour, NaN never right */
  float row[4] = {0.5f, 0.2f, 0.5f, 0.1f};
  assert_true(pd_acc_row_float(row, 4, 2, 1));
  assert_false(pd_acc_row_float(row, 4, 1, 2));
  row[1] = NAN;
  assert_false(pd_acc_row_float(row, 4, 1, 4));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rng_by_index),
      cmocka_unit_test(test_dropout_mask),
      cmocka_unit_test(test_activations),
      cmocka_unit_test(test_fc),
      cmocka_unit_test(test_elementwise_add_bcast),
      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_softmax_with_cross_entropy),
      cmocka_unit_test(test_cross_entropy),
      cmocka_unit_test(test_batch_norm_channels),
      cmocka_unit_test(test_pool2d),
      cmocka_unit_test(test_conv2d),
      cmocka_unit_test(test_cos_sim_broadcast),
      cmocka_unit_test(test_broadcast),
      cmocka_unit_test(test_transpose),
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_log_softmax),
      cmocka_unit_test(test_scalars),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
