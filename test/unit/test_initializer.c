/* test_initializer.c — parameter initialisers and learning-rate schedules:
 * each initializer's values follow its formula (bounds, mean, std from the
 * fans), the same seed and name give the same values and another name other
 * values; each schedule gives lr(t) as docs/training.md states it. */
#include "optest.h"

#include "core/initializer.h"

static void fill(const char *name, const Paddle__Initializer *in, int64_t rows, int64_t cols, pd_tensor *t) {
  pd_var_info vi = {.name = (char *)name, .init = in, .param_init = NAN};
  pd_tensor_init(&vi.meta, PD_F64);
  pd_tensor_init(t, PD_F64);
  assert_int_equal(pd_tensor_set_dims(t, 2, (int64_t[]){rows, cols}, NULL), PD_OK);
  vi.meta = *t;
  vi.meta.ndim = 2;
  assert_int_equal(pd_tensor_alloc(t, NULL), PD_OK);
  pd_error err;
  if (pd_init_param(&vi, NULL, 42, t, &err)) fail_msg("%s", err.msg);
}

static void stats(const pd_tensor *t, double *mean, double *sd, double *lo, double *hi) {
  int64_t n = pd_tensor_numel(t);
  double s = 0, s2 = 0;
  *lo = INFINITY, *hi = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    double v = pd_tensor_get(t, i);
    s += v, s2 += v * v;
    if (v < *lo) *lo = v;
    if (v > *hi) *hi = v;
  }
  *mean = s / (double)n;
  *sd = sqrt(s2 / (double)n - *mean * *mean);
}

static void test_initializers(void **state) {
  (void)state;
  pd_tensor t, u;
  double mean, sd, lo, hi;
  /* xavier uniform (the default for matrices): U(-a, a), a = sqrt(6 / (fan_in + fan_out)) */
  fill("w", NULL, 400, 200, &t);
  stats(&t, &mean, &sd, &lo, &hi);
  double a = sqrt(6.0 / 600);
  assert_true(lo >= -a && hi <= a && hi > 0.99 * a && fabs(mean) < 0.01 * a && fabs(sd - a / sqrt(3)) < 0.01 * a);
  /* reproducible by (seed, name); another name differs */
  fill("w", NULL, 400, 200, &u);
  assert_memory_equal(pd_tensor_data(&t), pd_tensor_data(&u), pd_tensor_bytes(&t));
  pd_tensor_release(&u);
  fill("v", NULL, 400, 200, &u);
  assert_memory_not_equal(pd_tensor_data(&t), pd_tensor_data(&u), pd_tensor_bytes(&t));
  pd_tensor_release(&u);
  pd_tensor_release(&t);
  /* gaussian(mean 0.5, std 2) */
  Paddle__Initializer g = PADDLE__INITIALIZER__INIT;
  g.type = "gaussian", g.has_mean = 1, g.mean = 0.5, g.has_std = 1, g.std = 2;
  fill("g", &g, 300, 300, &t);
  stats(&t, &mean, &sd, &lo, &hi);
  assert_true(fabs(mean - 0.5) < 0.03 && fabs(sd - 2) < 0.03);
  pd_tensor_release(&t);
  /* kaiming normal: std = sqrt(2 / fan_in) */
  Paddle__Initializer k = PADDLE__INITIALIZER__INIT;
  k.type = "kaiming", k.has_uniform = 1, k.uniform = 0;
  fill("k", &k, 50, 2000, &t);
  stats(&t, &mean, &sd, &lo, &hi);
  assert_true(fabs(sd - sqrt(2.0 / 50)) < 0.01 * sqrt(2.0 / 50));
  pd_tensor_release(&t);
  /* constant and uniform */
  Paddle__Initializer c = PADDLE__INITIALIZER__INIT;
  c.type = "constant", c.has_value = 1, c.value = 0.25;
  fill("c", &c, 3, 3, &t);
  stats(&t, &mean, &sd, &lo, &hi);
  assert_true(lo == 0.25 && hi == 0.25);
  pd_tensor_release(&t);
  Paddle__Initializer un = PADDLE__INITIALIZER__INIT;
  un.type = "uniform", un.has_min = 1, un.min = 2, un.has_max = 1, un.max = 3;
  fill("u", &un, 100, 100, &t);
  stats(&t, &mean, &sd, &lo, &hi);
  assert_true(lo >= 2 && hi < 3 && fabs(mean - 2.5) < 0.01);
  pd_tensor_release(&t);
}

static void test_unknown_initializer(void **state) {
  (void)state;
  Paddle__Initializer bad = PADDLE__INITIALIZER__INIT;
  bad.type = "xavir";
  pd_var_info vi = {.name = "w", .init = &bad, .param_init = NAN};
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_tensor_set_dims(&t, 1, (int64_t[]){3}, NULL);
  pd_tensor_alloc(&t, NULL);
  vi.meta = t;
  pd_error err;
  assert_int_equal(pd_init_param(&vi, NULL, 1, &t, &err), PD_ERR_INPUT);
  assert_non_null(strstr(err.msg, "unknown initializer \"xavir\""));
  pd_tensor_release(&t);
}

static double lr_at(const char *type, int64_t t, int64_t warmup) {
  Paddle__OptimizerDesc o = PADDLE__OPTIMIZER_DESC__INIT;
  Paddle__LrSchedule s = PADDLE__LR_SCHEDULE__INIT;
  o.lr = 0.1;
  s.type = (char *)type, s.step_size = 10, s.gamma = 0.5, s.decay_steps = 100, s.end_lr = 0.01, s.power = 2;
  s.warmup_steps = warmup, s.warmup_start_lr = 0;
  o.schedule = &s;
  pd_error err;
  assert_int_equal(pd_schedule_check(&o, &err), PD_OK);
  return pd_schedule_lr(&o, t);
}

static void test_schedules(void **state) {
  (void)state;
  const double pi = 3.141592653589793;
  assert_true(lr_at("constant", 57, 0) == 0.1);
  assert_true(fabs(lr_at("step", 25, 0) - 0.1 * 0.25) < 1e-15);                 /* gamma^floor(25/10) */
  assert_true(fabs(lr_at("exponential", 50, 0) - 0.1 * pow(0.5, 0.5)) < 1e-15); /* gamma^(t/decay) */
  assert_true(fabs(lr_at("polynomial", 50, 0) - (0.09 * 0.25 + 0.01)) < 1e-15); /* (1-t/T)^2 */
  assert_true(fabs(lr_at("polynomial", 500, 0) - 0.01) < 1e-15);                /* held at end_lr */
  assert_true(fabs(lr_at("cosine", 25, 0) - (0.01 + 0.045 * (1 + cos(pi / 4)))) < 1e-15);
  /* linear warm-up over 4 steps, then the schedule counts from 0 */
  assert_true(fabs(lr_at("cosine", 0, 4) - 0.025) < 1e-15);
  assert_true(fabs(lr_at("cosine", 3, 4) - 0.1) < 1e-15);
  assert_true(fabs(lr_at("step", 4 + 10, 4) - 0.05) < 1e-15);
  /* bad schedules are refused */
  Paddle__OptimizerDesc o = PADDLE__OPTIMIZER_DESC__INIT;
  Paddle__LrSchedule s = PADDLE__LR_SCHEDULE__INIT;
  o.schedule = &s;
  s.type = "cosin";
  pd_error err;
  assert_int_equal(pd_schedule_check(&o, &err), PD_ERR_INPUT);
  assert_non_null(strstr(err.msg, "unknown learning-rate schedule \"cosin\""));
  s.type = "step";
  assert_int_equal(pd_schedule_check(&o, &err), PD_ERR_INPUT);
  assert_non_null(strstr(err.msg, "needs step_size > 0"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_initializers),
      cmocka_unit_test(test_unknown_initializer),
      cmocka_unit_test(test_schedules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
