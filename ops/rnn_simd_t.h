/* rnn_simd_t.h — the clip's bound, sigmoid and tanh on the vectors of
 * cpu/vec.h, for T = v8 and v16: sigmoid 1 / (1 + exp(-x)) and tanh
 * 1 - 2 / (1 + exp(2x)), the scalar formulas of rnn_core.h. */
#include "base/tmpl.h"

/* x bounded to [-b, b] (nb = -b); a NaN stays NaN (min and max return
 * their second operand when one is NaN) */
PD_T(PD_RV_OP) PD_T(pd_rv) PD_T(pd_rv_bound)(PD_T(pd_rv) x, PD_T(pd_rv) b, PD_T(pd_rv) nb) {
  return PD_T(pd_rv_max)(nb, PD_T(pd_rv_min)(b, x));
}

PD_T(PD_RV_OP) PD_T(pd_rv) PD_T(pd_rv_sigmoid)(PD_T(pd_rv) x) {
  const PD_T(pd_rv) one = PD_T(pd_rv_set1)(1.0f);
  return PD_T(pd_rv_div)(one, PD_T(pd_rv_add)(one, PD_T(pd_rv_exp)(PD_T(pd_rv_sub)(PD_T(pd_rv_zero)(), x))));
}
PD_T(PD_RV_OP) PD_T(pd_rv) PD_T(pd_rv_tanh)(PD_T(pd_rv) x) {
  const PD_T(pd_rv) one = PD_T(pd_rv_set1)(1.0f);
  return PD_T(pd_rv_sub)(
      one, PD_T(pd_rv_div)(PD_T(pd_rv_set1)(2.0f), PD_T(pd_rv_add)(one, PD_T(pd_rv_exp)(PD_T(pd_rv_add)(x, x)))));
}
