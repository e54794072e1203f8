/* test_op_optim.c — the update ops, several steps each against a float64 reference loop
 * (float32 and float64; 1, 3, 17, 129 rows), run both in place (ParamOut is the Param
 * tensor) and into fresh outputs:
 *   sgd:       p -= lr (g + wd p)
 *   momentum:  g' = g + wd p; v = mu v + g'; p -= lr (nesterov ? g' + mu v : v)
 *   adam:      g' = g + wd p; m = b1 m + (1 - b1) g'; v = b2 v + (1 - b2) g'^2;
 *              p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps), checked at t = 1, 2, 10
 *   clip_by_global_norm: norm = sqrt(sum of all X^2); X *= max_norm / norm when norm > max_norm
 * and the shape, dtype and attribute checks. */
#include "optest.h"

#define STEPS 10

static pd_tensor *scalar(pd_dtype dt, double v) {
  pd_tensor *t = ot_tensor(dt, 1, (int64_t[]){1});
  pd_tensor_set(t, 0, v);
  return t;
}

static double *values(const pd_tensor *t) {
  int64_t n = pd_tensor_numel(t);
  double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = pd_tensor_get(t, i);
  return v;
}

/* |t - ref| <= tol max(1, |ref|) everywhere: parameters near 0 are compared absolutely. */
static void assert_near(const pd_tensor *t, const double *ref, double tol, const char *what) {
  int64_t n = pd_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double a = pd_tensor_get(t, i);
    if (!(fabs(a - ref[i]) <= tol * fmax(1, fabs(ref[i]))))
      fail_msg("%s[%lld]: got %.12g, expected %.12g", what, (long long)i, a, ref[i]);
  }
}

/* Runs `type`; in place, the outputs are the input tensors listed in `state`; otherwise
 * fresh tensors, which are then checked to leave the inputs alone and copied back. */
static void step(const char *type, const char *const *attrs, pd_tensor **ins, int n_state, pd_tensor **state,
                 bool in_place) {
  pd_tensor *outs[4];
  for (int k = 0; k < n_state; k++) outs[k] = in_place ? state[k] : ot_out();
  double *before = in_place ? NULL : values(state[0]);
  ot_run(type, attrs, ins, NULL, outs, NULL);
  if (in_place) return;
  assert_near(state[0], before, 0, "input left alone");
  free(before);
  for (int k = 0; k < n_state; k++) {
    assert_int_equal(pd_tensor_copy(state[k], outs[k], NULL), PD_OK);
    ot_free(outs[k]);
  }
}

static void check_sgd(pd_dtype dt, int64_t rows, double wd, bool in_place) {
  const int64_t dims[] = {rows, 3};
  pd_tensor *p = ot_rand(dt, 2, dims, 1, -1, 1, 0), *lr = scalar(dt, 0.1);
  double *ref = values(p), lrv = pd_tensor_get(lr, 0);
  char wd_attr[32];
  snprintf(wd_attr, sizeof wd_attr, "f: %g", wd);
  const char *attrs[] = {"weight_decay", wd_attr, NULL};
  for (int s = 0; s < 5; s++) {
    pd_tensor *g = ot_rand(dt, 2, dims, 10 + (uint64_t)s, -1, 1, 0);
    step("sgd", attrs, (pd_tensor *[]){p, g, lr, NULL}, 1, (pd_tensor *[]){p}, in_place);
    for (int64_t i = 0; i < rows * 3; i++) ref[i] -= lrv * (pd_tensor_get(g, i) + wd * ref[i]);
    ot_free(g);
  }
  assert_near(p, ref, dt == PD_F32 ? 1e-5 : 1e-13, "sgd param");
  free(ref);
  ot_free(p), ot_free(lr);
}

static void check_momentum(pd_dtype dt, int64_t rows, double wd, bool nesterov, bool in_place) {
  const int64_t dims[] = {rows, 3};
  pd_tensor *p = ot_rand(dt, 2, dims, 2, -1, 1, 0), *v = ot_rand(dt, 2, dims, 3, -0.1, 0.1, 0);
  pd_tensor *lr = scalar(dt, 0.05);
  double *rp = values(p), *rv = values(v), lrv = pd_tensor_get(lr, 0), mu = 0.8;
  char wd_attr[32];
  snprintf(wd_attr, sizeof wd_attr, "f: %g", wd);
  const char *attrs[] = {"mu",    "f: 0.8", "use_nesterov", nesterov ? "b: true" : "b: false", "weight_decay",
                         wd_attr, NULL};
  for (int s = 0; s < 5; s++) {
    pd_tensor *g = ot_rand(dt, 2, dims, 20 + (uint64_t)s, -1, 1, 0);
    step("momentum", attrs, (pd_tensor *[]){p, g, v, lr, NULL}, 2, (pd_tensor *[]){p, v}, in_place);
    for (int64_t i = 0; i < rows * 3; i++) {
      double gi = pd_tensor_get(g, i) + wd * rp[i];
      rv[i] = mu * rv[i] + gi;
      rp[i] -= lrv * (nesterov ? gi + mu * rv[i] : rv[i]);
    }
    ot_free(g);
  }
  double tol = dt == PD_F32 ? 1e-5 : 1e-13;
  assert_near(p, rp, tol, "momentum param");
  assert_near(v, rv, tol, "momentum velocity");
  free(rp), free(rv);
  ot_free(p), ot_free(v), ot_free(lr);
}

static void check_adam(pd_dtype dt, int64_t rows, double wd, bool in_place) {
  const int64_t dims[] = {rows, 3};
  pd_tensor *p = ot_rand(dt, 2, dims, 4, -1, 1, 0), *m = ot_rand(dt, 2, dims, 0, 0, 0, 0);
  pd_tensor *v = ot_rand(dt, 2, dims, 0, 0, 0, 0), *lr = scalar(dt, 0.01), *t = scalar(PD_F64, 0);
  double *rp = values(p), *rm = values(m), *rv = values(v), lrv = pd_tensor_get(lr, 0);
  const double b1 = 0.8, b2 = 0.95, eps = 1e-6;
  char wd_attr[32];
  snprintf(wd_attr, sizeof wd_attr, "f: %g", wd);
  const char *attrs[] = {"beta1", "f: 0.8", "beta2", "f: 0.95", "epsilon", "f: 1e-6", "weight_decay", wd_attr, NULL};
  double tol = dt == PD_F32 ? 1e-5 : 1e-12;
  for (int s = 1; s <= STEPS; s++) {
    pd_tensor_set(t, 0, s);
    pd_tensor *g = ot_rand(dt, 2, dims, 30 + (uint64_t)s, -1, 1, 0.01);
    double *p_before = values(p);
    step("adam", attrs, (pd_tensor *[]){p, g, m, v, lr, t, NULL}, 3, (pd_tensor *[]){p, m, v}, in_place);
    for (int64_t i = 0; i < rows * 3; i++) {
      double gi = pd_tensor_get(g, i) + wd * rp[i];
      rm[i] = b1 * rm[i] + (1 - b1) * gi;
      rv[i] = b2 * rv[i] + (1 - b2) * gi * gi;
      rp[i] -= lrv * (rm[i] / (1 - pow(b1, s))) / (sqrt(rv[i] / (1 - pow(b2, s))) + eps);
    }
    if (s == 1 || s == 2 || s == STEPS) {
      assert_near(p, rp, tol, "adam param");
      assert_near(m, rm, tol, "adam moment1");
      assert_near(v, rv, tol, "adam moment2");
    }
    /* bias correction at t = 1: m/(1-b1) = g, v/(1-b2) = g^2, so each step is lr sign(g)
     * (|g| >= 0.01 >> eps) */
    for (int64_t i = 0; s == 1 && wd == 0 && i < rows * 3; i++)
      assert_true(fabs(fabs(pd_tensor_get(p, i) - p_before[i]) - lrv) < 1e-4 * lrv + 1e-6);
    free(p_before);
    ot_free(g);
  }
  free(rp), free(rm), free(rv);
  ot_free(p), ot_free(m), ot_free(v), ot_free(lr), ot_free(t);
}

static void test_sgd(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++)
    for (int t = 0; t < 2; t++)
      for (int in_place = 0; in_place < 2; in_place++) {
        check_sgd(t ? PD_F64 : PD_F32, rows[r], 0, in_place);
        check_sgd(t ? PD_F64 : PD_F32, rows[r], 0.01, in_place);
      }
}

static void test_momentum(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++)
    for (int t = 0; t < 2; t++)
      for (int in_place = 0; in_place < 2; in_place++)
        for (int nesterov = 0; nesterov < 2; nesterov++) {
          check_momentum(t ? PD_F64 : PD_F32, rows[r], 0, nesterov, in_place);
          check_momentum(t ? PD_F64 : PD_F32, rows[r], 0.01, nesterov, in_place);
        }
}

static void test_adam(void **state) {
  (void)state;
  const int64_t rows[] = {1, 3, 17, 129};
  for (int r = 0; r < 4; r++)
    for (int t = 0; t < 2; t++)
      for (int in_place = 0; in_place < 2; in_place++) {
        check_adam(t ? PD_F64 : PD_F32, rows[r], 0, in_place);
        check_adam(t ? PD_F64 : PD_F32, rows[r], 0.01, in_place);
      }
}

/* Defaults: mu 0.9, beta1 0.9, beta2 0.999, epsilon 1e-8, no weight decay. */
/* lr_mult m (a parameter's var lr_mult): each update op steps exactly as
 * with lr * m, bit for bit (0.5 halves a binary lr exactly). */
static void test_lr_mult(void **state) {
  (void)state;
  static const char *const types[] = {"sgd", "momentum", "adam"};
  const int64_t dims[] = {7, 3};
  for (int k = 0; k < 3; k++)
    for (int d = 0; d < 2; d++) {
      pd_dtype dt = d ? PD_F64 : PD_F32;
      pd_tensor *pa = ot_rand(dt, 2, dims, 4, -1, 1, 0), *pb = ot_rand(dt, 2, dims, 4, -1, 1, 0);
      pd_tensor *sa[2] = {ot_rand(dt, 2, dims, 5, 0, 0.1, 0), ot_rand(dt, 2, dims, 6, 0, 0.1, 0)};
      pd_tensor *sb[2] = {ot_rand(dt, 2, dims, 5, 0, 0.1, 0), ot_rand(dt, 2, dims, 6, 0, 0.1, 0)};
      pd_tensor *lr = scalar(dt, 0.1), *half = scalar(dt, 0.05), *t = scalar(PD_F64, 1);
      const char *mult[] = {"lr_mult", "f: 0.5", "weight_decay", "f: 0.01", NULL},
                 *plain[] = {"weight_decay", "f: 0.01", NULL};
      for (int s = 0; s < 3; s++) {
        pd_tensor *g = ot_rand(dt, 2, dims, 20 + (uint64_t)s, -1, 1, 0);
        if (k == 0) {
          step("sgd", mult, (pd_tensor *[]){pa, g, lr, NULL}, 1, (pd_tensor *[]){pa}, true);
          step("sgd", plain, (pd_tensor *[]){pb, g, half, NULL}, 1, (pd_tensor *[]){pb}, true);
        } else if (k == 1) {
          step("momentum", mult, (pd_tensor *[]){pa, g, sa[0], lr, NULL}, 2, (pd_tensor *[]){pa, sa[0]}, true);
          step("momentum", plain, (pd_tensor *[]){pb, g, sb[0], half, NULL}, 2, (pd_tensor *[]){pb, sb[0]}, true);
        } else {
          step("adam", mult, (pd_tensor *[]){pa, g, sa[0], sa[1], lr, t, NULL}, 3, (pd_tensor *[]){pa, sa[0], sa[1]},
               true);
          step("adam", plain, (pd_tensor *[]){pb, g, sb[0], sb[1], half, t, NULL}, 3, (pd_tensor *[]){pb, sb[0], sb[1]},
               true);
          PD_DATA(t, double)[0] += 1;
        }
        ot_free(g);
      }
      double *ref = values(pb);
      assert_near(pa, ref, 0, types[k]);
      free(ref);
      ot_free(pa), ot_free(pb), ot_free(lr), ot_free(half), ot_free(t);
      for (int i = 0; i < 2; i++) ot_free(sa[i]), ot_free(sb[i]);
    }
}

static void test_defaults(void **state) {
  (void)state;
  pd_tensor *p = scalar(PD_F64, 1), *g = scalar(PD_F64, 0.5), *v = scalar(PD_F64, 0.2), *lr = scalar(PD_F64, 0.1);
  ot_run("momentum", NULL, (pd_tensor *[]){p, g, v, lr, NULL}, NULL, (pd_tensor *[]){p, v}, NULL);
  assert_true(fabs(pd_tensor_get(v, 0) - (0.9 * 0.2 + 0.5)) < 1e-15);
  assert_true(fabs(pd_tensor_get(p, 0) - (1 - 0.1 * 0.68)) < 1e-15);
  pd_tensor *m1 = scalar(PD_F64, 0), *m2 = scalar(PD_F64, 0), *t = scalar(PD_F64, 2);
  pd_tensor_set(p, 0, 1);
  ot_run("adam", NULL, (pd_tensor *[]){p, g, m1, m2, lr, t, NULL}, NULL, (pd_tensor *[]){p, m1, m2}, NULL);
  double m = 0.1 * 0.5, vv = 0.001 * 0.25;
  double want = 1 - 0.1 * (m / (1 - 0.81)) / (sqrt(vv / (1 - 0.999 * 0.999)) + 1e-8);
  assert_true(fabs(pd_tensor_get(p, 0) - want) < 1e-14);
  ot_free(p), ot_free(g), ot_free(v), ot_free(lr), ot_free(m1), ot_free(m2), ot_free(t);
}

static void test_optimizer_checks(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *p = ot_rand(PD_F32, 2, (int64_t[]){3, 4}, 1, -1, 1, 0),
            *g = ot_rand(PD_F32, 2, (int64_t[]){4, 3}, 2, -1, 1, 0);
  pd_tensor *lr = scalar(PD_F32, 0.1), *out = ot_out();
  msg = ot_run_fail("sgd", NULL, (pd_tensor *[]){p, g, lr, NULL}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "must match Param \"\" (float32 [3, 4]), got float32 [4, 3]"));
  ot_free(g), ot_free(lr);
  g = ot_rand(PD_F32, 2, (int64_t[]){3, 4}, 2, -1, 1, 0);
  lr = scalar(PD_I64, 1);
  msg = ot_run_fail("sgd", NULL, (pd_tensor *[]){p, g, lr, NULL}, NULL, (pd_tensor *[]){out}, NULL);
  assert_non_null(strstr(msg, "LearningRate \"\" must hold one float32 or float64 value ([1]), got int64 [1]"));
  ot_free(lr);
  lr = scalar(PD_F64, 0.1); /* a float64 rate serves float32 parameters */
  const char *neg_wd[] = {"weight_decay", "f: -0.1", NULL};
  msg = ot_run_fail("sgd", neg_wd, (pd_tensor *[]){p, g, lr, NULL}, NULL, (pd_tensor *[]){out}, NULL);
  assert_string_equal(msg, "attribute \"weight_decay\" must be >= 0, got -0.10000000000000001");
  const char *beta1[] = {"beta1", "f: 1.0", NULL};
  msg = ot_run_fail("adam", beta1, (pd_tensor *[]){p, g, p, p, lr, lr, NULL}, NULL, (pd_tensor *[]){out, NULL, NULL},
                    NULL);
  assert_string_equal(msg, "attribute \"beta1\" must be >= 0 and < 1, got 1");
  /* Step 0: the bias correction would divide by 0 */
  pd_tensor *m1 = ot_rand(PD_F32, 2, (int64_t[]){3, 4}, 0, 0, 0, 0),
            *m2 = ot_rand(PD_F32, 2, (int64_t[]){3, 4}, 0, 0, 0, 0);
  pd_tensor *lr32 = scalar(PD_F32, 0.1), *t = scalar(PD_F64, 0), *o1 = ot_out(), *o2 = ot_out();
  msg =
      ot_run_fail("adam", NULL, (pd_tensor *[]){p, g, m1, m2, lr32, t, NULL}, NULL, (pd_tensor *[]){out, o1, o2}, NULL);
  assert_non_null(strstr(msg, "Step \"\" must hold the update count t >= 1, got 0"));
  ot_free(p), ot_free(g), ot_free(lr), ot_free(out), ot_free(m1), ot_free(m2), ot_free(lr32), ot_free(t);
  ot_free(o1), ot_free(o2);
}

/* Param shapes known, the batch irrelevant: outputs take Param's shape. */
static void test_optimizer_shapes(void **state) {
  (void)state;
  pd_tensor *p = ot_shaped(PD_F64, 2, (int64_t[]){5, 2}), *g = ot_shaped(PD_F64, 2, (int64_t[]){5, 2});
  pd_tensor *lr = ot_shaped(PD_F64, 1, (int64_t[]){1}), *out = ot_out();
  assert_int_equal(ot_infer("sgd", NULL, (pd_tensor *[]){p, g, lr, NULL}, NULL, (pd_tensor *[]){out}, NULL, NULL),
                   PD_OK);
  ot_assert_dims(out, 5, 2);
  assert_int_equal(out->dtype, PD_F64);
  ot_free(p), ot_free(g), ot_free(lr), ot_free(out);
}

static void check_clip(pd_dtype dt, double ratio, bool in_place) {
  /* 148 values: clip_by_global_norm_t.h's 16 running sums and a tail */
  pd_tensor *x[3] = {ot_rand(dt, 2, (int64_t[]){37, 4}, 1, -1, 1, 0), ot_rand(dt, 1, (int64_t[]){5}, 2, -1, 1, 0),
                     ot_rand(dt, 3, (int64_t[]){2, 1, 3}, 3, -1, 1, 0)};
  double sum = 0, *ref[3];
  for (int k = 0; k < 3; k++) {
    ref[k] = values(x[k]);
    for (int64_t i = 0; i < pd_tensor_numel(x[k]); i++) sum += ref[k][i] * ref[k][i];
  }
  double norm = sqrt(sum), max_norm = ratio * norm, scale = norm > max_norm ? max_norm / norm : 1;
  char attr[64];
  snprintf(attr, sizeof attr, "f: %.17g", max_norm);
  const char *attrs[] = {"max_norm", attr, NULL};
  pd_tensor *outs[3];
  for (int k = 0; k < 3; k++) outs[k] = in_place ? x[k] : ot_out();
  ot_run("clip_by_global_norm", attrs, x, (int[]){3}, outs, (int[]){3});
  double tol = dt == PD_F32 ? 1e-6 : 1e-14, out_sum = 0;
  for (int k = 0; k < 3; k++) {
    assert_true(pd_dims_equal(outs[k]->ndim, outs[k]->dims, x[k]->ndim, x[k]->dims));
    for (int64_t i = 0; i < pd_tensor_numel(outs[k]); i++) {
      out_sum += pow(pd_tensor_get(outs[k], i), 2);
      ref[k][i] *= scale;
    }
    assert_near(outs[k], ref[k], tol, "clipped");
    free(ref[k]);
  }
  assert_true(fabs(sqrt(out_sum) - fmin(norm, max_norm)) < 1e-5 * norm);
  for (int k = 0; k < 3; k++) {
    if (!in_place) ot_free(outs[k]);
    ot_free(x[k]);
  }
}

static void test_clip_by_global_norm(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++)
    for (int in_place = 0; in_place < 2; in_place++) {
      check_clip(t ? PD_F64 : PD_F32, 0.25, in_place); /* clipped to a quarter */
      check_clip(t ? PD_F64 : PD_F32, 2.0, in_place);  /* under the limit: unchanged */
    }
  const char *msg;
  pd_tensor *a = ot_rand(PD_F32, 1, (int64_t[]){3}, 1, -1, 1, 0), *b = ot_rand(PD_F64, 1, (int64_t[]){3}, 2, -1, 1, 0);
  pd_tensor *o1 = ot_out(), *o2 = ot_out();
  const char *attrs[] = {"max_norm", "f: 1.0", NULL}, *zero[] = {"max_norm", "f: 0", NULL};
  msg =
      ot_run_fail("clip_by_global_norm", attrs, (pd_tensor *[]){a, b}, (int[]){2}, (pd_tensor *[]){o1, o2}, (int[]){2});
  assert_non_null(strstr(msg, "all X must have one dtype: X \"\" is float32 but X \"\" is float64"));
  msg = ot_run_fail("clip_by_global_norm", attrs, (pd_tensor *[]){a, a}, (int[]){2}, (pd_tensor *[]){o1}, (int[]){1});
  assert_non_null(strstr(msg, "Out must list as many variables as X (2), got 1"));
  msg = ot_run_fail("clip_by_global_norm", NULL, (pd_tensor *[]){a}, NULL, (pd_tensor *[]){o1}, NULL);
  assert_string_equal(msg, "attribute \"max_norm\" is required");
  msg = ot_run_fail("clip_by_global_norm", zero, (pd_tensor *[]){a}, NULL, (pd_tensor *[]){o1}, NULL);
  assert_string_equal(msg, "attribute \"max_norm\" must be > 0, got 0");
  ot_free(a), ot_free(b), ot_free(o1), ot_free(o2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sgd),
      cmocka_unit_test(test_momentum),
      cmocka_unit_test(test_adam),
      cmocka_unit_test(test_lr_mult),
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_optimizer_checks),
      cmocka_unit_test(test_optimizer_shapes),
      cmocka_unit_test(test_clip_by_global_norm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
