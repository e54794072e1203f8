/* gradcheck.c — finite-difference check of a whole network (gradcheck.h). */
#include "core/gradcheck.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backward.h"
#include "base/rng.h"

static pd_status loss_at(pd_runner *r, double *loss, pd_error *err) {
  pd_status st = pd_runner_run(r, 0, r->net->n_forward, err);
  if (!st) *loss = pd_tensor_get(r->t[r->net->loss], 0);
  return st;
}

static pd_status run_check(pd_runner *r, int64_t max_elems, uint64_t seed, double h, pd_gradcheck_result *res,
                           int *params, int *grads, pd_error *err);

pd_status pd_gradcheck_run(pd_runner *r, int64_t max_elems, uint64_t seed, double h, pd_gradcheck_result *res,
                           pd_error *err) {
  pd_net *net = r->net;
  memset(res, 0, sizeof *res);
  res->worst_index = -1;
  if (net->loss < 0) return pd_errorf(err, PD_ERR_INPUT, "gradcheck needs a net with backward ops");
  /* every parameter, however many: at most one per variable */
  int *params = malloc(sizeof(int) * ((size_t)net->nvars + 1)), *grads = malloc(sizeof(int) * ((size_t)net->nvars + 1));
  if (!params || !grads) {
    free(params), free(grads);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  pd_status st = run_check(r, max_elems, seed, h, res, params, grads, err);
  free(params), free(grads);
  return st;
}

static pd_status run_check(pd_runner *r, int64_t max_elems, uint64_t seed, double h, pd_gradcheck_result *res,
                           int *params, int *grads, pd_error *err) {
  pd_net *net = r->net;
  int n = pd_net_param_grads(net, params, grads, net->nvars);
  if (n == 0) return pd_errorf(err, PD_ERR_INPUT, "no parameter gets a gradient from the loss");
  /* analytic gradients: forward + backward once, copied aside */
  pd_status st = pd_runner_run(r, 0, net->n_forward + net->n_backward, err);
  if (st) return st;
  double l0 = pd_tensor_get(r->t[net->loss], 0);
  uint64_t s = seed ^ 0x6a09e667f3bcc909ull;
  for (int i = 0; i < n && !st; i++) {
    pd_tensor *p = r->t[params[i]], *g = r->t[grads[i]];
    if (p->dtype != PD_F64)
      return pd_errorf(err, PD_ERR_INPUT, "gradcheck runs in float64; parameter \"%s\" is %s",
                       net->vars[params[i]].name, pd_dtype_name(p->dtype));
    int64_t numel = pd_tensor_numel(p);
    int64_t count = max_elems > 0 && max_elems < numel ? max_elems : numel;
    double *ga = malloc(sizeof *ga * (size_t)(numel ? numel : 1));
    if (!ga) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    memcpy(ga, pd_tensor_data(g), sizeof *ga * (size_t)numel);
    double *pd = PD_DATA(p, double);
    for (int64_t k = 0; k < count && !st; k++) {
      int64_t e = count == numel ? k : (int64_t)(pd_rng_next(&s) % (uint64_t)numel);
      double keep = pd[e], lp = 0, lm = 0;
      pd[e] = keep + h;
      st = loss_at(r, &lp, err);
      pd[e] = keep - h;
      if (!st) st = loss_at(r, &lm, err);
      pd[e] = keep;
      double num = (lp - lm) / (2 * h), ana = ga[e];
      /* the numeric derivative is only as good as the losses' rounding: a
       * difference within PD_GRADCHECK_ULPS of the loss's ulps over 2h is
       * noise (an analytic 2e-14 against a numeric -2e-7 on a loss of 2000),
       * and only the rest of it counts */
      double scale = fmax(fabs(l0), fmax(fabs(lp), fabs(lm)));
      double noise = PD_GRADCHECK_ULPS * DBL_EPSILON * scale / (2 * h);
      double d = fmax(fabs(ana - num) - noise, 0) / fmax(fmax(fabs(ana), fabs(num)), 1e-3);
      if (isnan(d) || isnan(noise)) d = INFINITY;
      if (d > res->worst_err || res->worst_index < 0) {
        res->worst_err = d;
        res->worst_index = e;
        res->analytic = ana;
        res->numeric = num;
        res->noise = noise;
        snprintf(res->worst_var, sizeof res->worst_var, "%s", net->vars[params[i]].name);
      }
      res->elems++;
    }
    free(ga);
    res->vars++;
  }
  return st;
}
