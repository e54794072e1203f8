/* gradcheck.h — a whole network's gradients against central finite
 * differences: for each parameter (up to max_elems elements of it, chosen
 * with the seed), d loss / d p from the backward ops is compared with
 * (L(p + h) - L(p - h)) / 2h. Meant for float64 nets (load with
 * float_dtype = PD_F64).
 *
 * The numeric value carries the rounding of the two losses: up to a few
 * ulps of |L| over 2h, which for a gradient that is 0 analytically is all
 * there is (a loss of 2000 and h = 1e-6: ~2e-7). So a difference up to
 * noise = PD_GRADCHECK_ULPS * DBL_EPSILON * max(|L|, |L(p+h)|, |L(p-h)|) / 2h,
 * a floor scaled to the function's magnitude, counts as none; a wrong
 * gradient differs by a share of the gradient itself and still fails. */
#ifndef PD_GRADCHECK_H
#define PD_GRADCHECK_H

#include "core/runner.h"

#define PD_GRADCHECK_ULPS 16.0

typedef struct pd_gradcheck_result {
  int vars;            /* parameters checked */
  int64_t elems;       /* elements checked */
  char worst_var[256]; /* where the error was largest */
  int64_t worst_index;
  double worst_err; /* max(|a - n| - noise, 0) / max(|a|, |n|, 1e-3) */
  double analytic, numeric;
  double noise; /* the worst element's rounding floor (below) */
} pd_gradcheck_result;

/* r must be bound, with data fed, for a net with backward ops. Parameter
 * values are restored afterwards. */
pd_status pd_gradcheck_run(pd_runner *r, int64_t max_elems, uint64_t seed, double h, pd_gradcheck_result *res,
                           pd_error *err);

#endif
