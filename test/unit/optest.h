/* optest.h — helpers for the op tests (cmocka): random tensors, running an
 * op through pd_opcall, comparing against a reference, and the gradient
 * check against central finite differences in float64.
 *
 * Gradient check: for an op with outputs Y_k, pick random weights G_k and
 * let L = sum_k <Y_k, G_k>. The grad op, fed dY_k = G_k, must return dL/dX
 * for every checked input; each element is compared with
 * (L(x + h) - L(x - h)) / 2h. Error = |analytic - numeric| / max(|a|, |n|, 1e-3)
 * (tiny entries compared absolutely); the test requires error <= 1e-6. */
#ifndef PD_OPTEST_H
#define PD_OPTEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exec.h"
#include "core/opcall.h"
#include "base/rng.h"
#include "core/tensor.h"

#define OT_MAX 16

/* A tensor of the given dims filled with uniform values in [lo, hi). Values
 * closer than `gap` to zero are pushed away (keeps relu etc. off the kink). */
static inline pd_tensor *ot_tensor(pd_dtype dt, int ndim, const int64_t *dims) {
  pd_tensor *t = malloc(sizeof *t);
  pd_tensor_init(t, dt);
  assert_int_equal(pd_tensor_set_dims(t, ndim, dims, NULL), PD_OK);
  assert_int_equal(pd_tensor_alloc(t, NULL), PD_OK);
  return t;
}

static inline pd_tensor *ot_rand(pd_dtype dt, int ndim, const int64_t *dims, uint64_t seed, double lo, double hi,
                                 double gap) {
  pd_tensor *t = ot_tensor(dt, ndim, dims);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  int64_t n = pd_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double v = lo + (hi - lo) * pd_rng_uniform(&s);
    if (fabs(v) < gap) v = v < 0 ? -gap : gap;
    pd_tensor_set(t, i, v);
  }
  return t;
}

/* An output placeholder (shape set by the op). */
static inline pd_tensor *ot_out(void) {
  pd_tensor *t = malloc(sizeof *t);
  pd_tensor_init(t, PD_F32);
  return t;
}

static inline void ot_free(pd_tensor *t) {
  if (!t) return;
  pd_tensor_release(t);
  free(t);
}

/* ---- shape functions alone, as a network runs them at load ---- */

/* A tensor with dims (maybe -1) and no storage. */
static inline pd_tensor *ot_shaped(pd_dtype dt, int ndim, const int64_t *dims) {
  pd_tensor *t = ot_out();
  t->dtype = dt;
  assert_int_equal(pd_tensor_set_dims(t, ndim, dims, NULL), PD_OK);
  return t;
}

/* Runs only the shape function of op `type`; returns its status and, when
 * msg is given, points it at the message (static buffer). */
static inline pd_status ot_infer(const char *type, const char *const *attrs, pd_tensor *const *ins, const int *in_n,
                                 pd_tensor *const *outs, const int *out_n, const char **msg) {
  static pd_error err;
  pd_opcall call;
  err.msg[0] = '\0';
  pd_status st = pd_opcall_init(&call, type, attrs, ins, in_n, outs, out_n, &err);
  if (!st) {
    pd_ctx c = {.op = &call.op, .vars = call.vars, .err = &err};
    st = pd_op_infer_shape(&c);
  }
  pd_opcall_free(&call);
  if (msg) *msg = err.msg;
  return st;
}

/* Asserts t has exactly these dims. */
#define ot_assert_dims(t, ...)                                                                \
  do {                                                                                        \
    const int64_t want_[] = {__VA_ARGS__};                                                    \
    int nw_ = (int)(sizeof want_ / sizeof want_[0]);                                          \
    char got_[128], exp_[128];                                                                \
    if (!pd_dims_equal((t)->ndim, (t)->dims, nw_, want_))                                     \
      fail_msg("shape %s, expected %s", pd_dims_str((t)->ndim, (t)->dims, got_, sizeof got_), \
               pd_dims_str(nw_, want_, exp_, sizeof exp_));                                   \
  } while (0)

/* Runs op `type` once; fails the test with the op's message on error. */
static inline void ot_run(const char *type, const char *const *attrs, pd_tensor *const *ins, const int *in_n,
                          pd_tensor *const *outs, const int *out_n) {
  pd_opcall call;
  pd_error err = {0};
  pd_exec exec = {.training = true, .seed = 1, .threads = 1};
  pd_status st = pd_opcall_init(&call, type, attrs, ins, in_n, outs, out_n, &err);
  if (!st) st = pd_opcall_run(&call, &exec, &err);
  if (st) fail_msg("%s: %s", type, err.msg);
  pd_opcall_free(&call);
}

/* Runs op `type` expecting failure; returns the message (static buffer). */
static inline const char *ot_run_fail(const char *type, const char *const *attrs, pd_tensor *const *ins,
                                      const int *in_n, pd_tensor *const *outs, const int *out_n) {
  static pd_error err;
  pd_opcall call;
  pd_exec exec = {.training = true, .seed = 1, .threads = 1};
  pd_status st = pd_opcall_init(&call, type, attrs, ins, in_n, outs, out_n, &err);
  if (!st) st = pd_opcall_run(&call, &exec, &err);
  pd_opcall_free(&call);
  if (!st) fail_msg("%s: expected an error", type);
  return err.msg;
}

/* Max relative error between t and a reference array (float64), with
 * entries below `floor` compared absolutely. */
static inline double ot_max_err(const pd_tensor *t, const double *ref, int64_t n, double floor) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double a = pd_tensor_get(t, i), b = ref[i];
    if (isnan(a) != isnan(b)) return INFINITY;
    if (isnan(a)) continue;
    if (isinf(a) || isinf(b)) {
      if (a != b) return INFINITY;
      continue;
    }
    double d = fabs(a - b) / fmax(fmax(fabs(a), fabs(b)), floor);
    if (d > worst) worst = d;
  }
  return worst;
}

#define ot_assert_close(t, ref, n, tol)                                            \
  do {                                                                             \
    double e_ = ot_max_err((t), (ref), (n), 1e-6);                                 \
    if (!(e_ <= (tol))) fail_msg("max relative error %g > %g", e_, (double)(tol)); \
  } while (0)

/* L = sum_k <Y_k, G_k> for the op's outputs after a forward run. */
static inline double ot_loss(const char *type, const char *const *attrs, pd_tensor *const *ins, const int *in_n,
                             int n_outs, pd_tensor *const *g) {
  pd_tensor *outs[OT_MAX];
  for (int k = 0; k < n_outs; k++) outs[k] = ot_out();
  ot_run(type, attrs, ins, in_n, outs, NULL);
  double l = 0;
  for (int k = 0; k < n_outs; k++) {
    if (g[k]) {
      int64_t n = pd_tensor_numel(outs[k]);
      for (int64_t i = 0; i < n; i++) l += pd_tensor_get(outs[k], i) * pd_tensor_get(g[k], i);
    }
    ot_free(outs[k]);
  }
  return l;
}

/* Gradient check of op `type` (one tensor per input slot, n_ins slots, all
 * float64 where checked). check[s] says whether input s gets a gradient
 * (others are passed as absent grads). `g_mask[k]` = 0 leaves output k's
 * gradient out (e.g. an output that does not lead to the loss). Returns the
 * worst error; asserts it is <= tol. */
static inline double ot_gradcheck_ex(const char *type, const char *const *attrs, pd_tensor *const *ins, int n_ins,
                                     int n_outs, const bool *check, const int *g_mask, double tol) {
  /* forward once to learn output shapes, and make the weights G_k */
  pd_tensor *outs[OT_MAX], *g[OT_MAX];
  for (int k = 0; k < n_outs; k++) outs[k] = ot_out();
  ot_run(type, attrs, ins, NULL, outs, NULL);
  for (int k = 0; k < n_outs; k++) {
    if (g_mask && !g_mask[k]) {
      g[k] = NULL;
      continue;
    }
    g[k] = ot_rand(PD_F64, outs[k]->ndim, outs[k]->dims, 1000 + (uint64_t)k, -1, 1, 0);
  }
  /* analytic: grad op inputs [X..., Y..., dY...], outputs [dX...] */
  char gtype[64];
  snprintf(gtype, sizeof gtype, "%s_grad", type);
  pd_tensor *gin[3 * OT_MAX], *gout[OT_MAX];
  int gi = 0;
  for (int s = 0; s < n_ins; s++) gin[gi++] = ins[s];
  for (int k = 0; k < n_outs; k++) gin[gi++] = outs[k];
  for (int k = 0; k < n_outs; k++) gin[gi++] = g[k];
  for (int s = 0; s < n_ins; s++) gout[s] = check[s] && ins[s] ? ot_out() : NULL;
  ot_run(gtype, attrs, gin, NULL, gout, NULL);
  double worst = 0;
  const double h = 1e-5;
  for (int s = 0; s < n_ins; s++) {
    if (!gout[s]) continue;
    pd_tensor *x = ins[s];
    assert_int_equal(x->dtype, PD_F64);
    assert_true(pd_dims_equal(x->ndim, x->dims, gout[s]->ndim, gout[s]->dims));
    int64_t n = pd_tensor_numel(x);
    double *xd = PD_DATA(x, double);
    for (int64_t i = 0; i < n; i++) {
      double keep = xd[i];
      xd[i] = keep + h;
      double lp = ot_loss(type, attrs, ins, NULL, n_outs, g);
      xd[i] = keep - h;
      double lm = ot_loss(type, attrs, ins, NULL, n_outs, g);
      xd[i] = keep;
      double num = (lp - lm) / (2 * h), ana = pd_tensor_get(gout[s], i);
      double e = fabs(ana - num) / fmax(fmax(fabs(ana), fabs(num)), 1e-3);
      if (!(e <= worst)) worst = e;
      if (!(e <= tol))
        fail_msg("%s: d/d input %d [%lld]: analytic %.12g, numeric %.12g, error %g > %g", type, s, (long long)i, ana,
                 num, e, tol);
    }
  }
  for (int k = 0; k < n_outs; k++) {
    ot_free(outs[k]);
    ot_free(g[k]);
  }
  for (int s = 0; s < n_ins; s++) ot_free(gout[s]);
  return worst;
}

/* Common case: check every input, every output weighted. */
static inline double ot_gradcheck(const char *type, const char *const *attrs, pd_tensor *const *ins, int n_ins,
                                  int n_outs) {
  bool check[OT_MAX];
  for (int s = 0; s < n_ins; s++) check[s] = ins[s] != NULL;
  return ot_gradcheck_ex(type, attrs, ins, n_ins, n_outs, check, NULL, 1e-6);
}

#endif
