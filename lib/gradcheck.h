/* gradcheck.h — a whole network's gradients against central finite
 * differences: for each parameter (up to max_elems elements of it, chosen
 * with the seed), d loss / d p from the backward ops is compared with
 * (L(p + h) - L(p - h)) / 2h. Meant for float64 nets (load with
 * float_dtype = PD_F64). */
#ifndef PD_GRADCHECK_H
#define PD_GRADCHECK_H

#include "net.h"

typedef struct pd_gradcheck_result {
  int vars;            /* parameters checked */
  int64_t elems;       /* elements checked */
  char worst_var[256]; /* where the error was largest */
  int64_t worst_index;
  double worst_err; /* |a - n| / max(|a|, |n|, 1e-3) */
  double analytic, numeric;
} pd_gradcheck_result;

/* r must be bound, with data fed, for a net with backward ops. Parameter
 * values are restored afterwards. */
pd_status pd_gradcheck_run(pd_runner *r, int64_t max_elems, uint64_t seed, double h, pd_gradcheck_result *res,
                           pd_error *err);

#endif
