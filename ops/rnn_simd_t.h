/* rnn_simd_t.h — sigmoid and tanh on the vectors of rnn_simd.h, for T = v8
 * and v16: 1 / (1 + exp(-x)) and 1 - 2 / (1 + exp(2x)), the scalar
 * formulas of rnn_core.h. */
#include "base/tmpl.h"

PD_T(PD_RV_OP) PD_T(pd_rv) PD_T(pd_rv_sigmoid)(PD_T(pd_rv) x) {
  const PD_T(pd_rv) one = PD_T(pd_rv_set1)(1.0f);
  return PD_T(pd_rv_div)(one, PD_T(pd_rv_add)(one, PD_T(pd_rv_exp)(PD_T(pd_rv_sub)(PD_T(pd_rv_zero)(), x))));
}
PD_T(PD_RV_OP) PD_T(pd_rv) PD_T(pd_rv_tanh)(PD_T(pd_rv) x) {
  const PD_T(pd_rv) one = PD_T(pd_rv_set1)(1.0f);
  return PD_T(pd_rv_sub)(
      one, PD_T(pd_rv_div)(PD_T(pd_rv_set1)(2.0f), PD_T(pd_rv_add)(one, PD_T(pd_rv_exp)(PD_T(pd_rv_add)(x, x)))));
}
