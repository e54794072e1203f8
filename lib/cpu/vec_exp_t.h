/* vec_exp_t.h — exp on the vectors of cpu/vec.h, for T = v8 and v16:
 * Cephes' expf (range reduction by ln 2 in two parts, degree-6
 * polynomial), about 1 ulp for |x| <= 87; inputs beyond +-88 are taken as
 * +-88, and a NaN stays NaN (min and max pass it through, and every value
 * made from it). FMA rounds once where a scalar version would round
 * twice. */
PD_T(PD_RV_OP) PD_T(pd_rv) PD_T(pd_rv_exp)(PD_T(pd_rv) x) {
  typedef PD_T(pd_rv) V;
  V v = PD_T(pd_rv_max)(PD_T(pd_rv_set1)(-88.0f), PD_T(pd_rv_min)(PD_T(pd_rv_set1)(88.0f), x));
  V fn = PD_T(pd_rv_round)(PD_T(pd_rv_mul)(v, PD_T(pd_rv_set1)(1.44269504088896341f)));
  V r = PD_T(pd_rv_fnmadd)(fn, PD_T(pd_rv_set1)(0.693359375f), v);
  r = PD_T(pd_rv_fmadd)(fn, PD_T(pd_rv_set1)(2.12194440e-4f), r);
  V p = PD_T(pd_rv_set1)(1.9875691500e-4f);
  p = PD_T(pd_rv_fmadd)(p, r, PD_T(pd_rv_set1)(1.3981999507e-3f));
  p = PD_T(pd_rv_fmadd)(p, r, PD_T(pd_rv_set1)(8.3334519073e-3f));
  p = PD_T(pd_rv_fmadd)(p, r, PD_T(pd_rv_set1)(4.1665795894e-2f));
  p = PD_T(pd_rv_fmadd)(p, r, PD_T(pd_rv_set1)(1.6666665459e-1f));
  p = PD_T(pd_rv_fmadd)(p, r, PD_T(pd_rv_set1)(5.0000001201e-1f));
  p = PD_T(pd_rv_fmadd)(PD_T(pd_rv_mul)(p, r), r, PD_T(pd_rv_add)(r, PD_T(pd_rv_set1)(1.0f)));
  return PD_T(pd_rv_mul)(p, PD_T(pd_rv_pow2)(fn));
}
