/* adam.cu — GPU kernel of adam per element (kmath.h's pd_adam_float), the
 * bias correction (pd_adam_coefs) computed on the device from the float64
 * Step and the learning rate, which stay in device memory. A Step below 1,
 * which the CPU kernel reports, leaves Param unchanged here (NaN factors are
 * not applied): the device cannot report it without a host copy. */
#include "adam.h"
#include "optim.cuh"

static __global__ void adam_k(const float *p, const float *g, const float *m, const float *v, float *p_out,
                              float *m_out, float *v_out, pd_gpu_scalar lr, const double *step, double b1, double b2,
                              double eps, float wd, int64_t n) {
  double t = step[0], lr_t, eps_t;
  pd_adam_coefs((double)(float)pd_gpu_scalar_get(lr), b1, b2, eps, t, &lr_t, &eps_t);
  bool ok = t >= 1;
  PD_GPU_FOR(i, n) {
    float pi = p[i];
    pd_adam_float(pi, g[i], m[i], v[i], (float)lr_t, (float)eps_t, (float)b1, (float)b2, wd, &p_out[i], &m_out[i],
                  &v_out[i]);
    if (!ok) p_out[i] = pi;
  }
}

extern "C" pd_status pd_gpu_adam_fwd(pd_ctx *c) {
  if (pd_in(c, ROWS)) /* embedding has no GPU kernel, so no GPU net makes a row-sparse gradient */
    return pd_ctx_fail(c, PD_ERR_INPUT, "a row-sparse gradient (input Rows) has no GPU kernel; run on the CPU");
  int64_t n = pd_tensor_numel(pd_in(c, PARAM));
  return PD_GPU_LAUNCH_N(
      c, n, adam_k, PD_DATA(pd_in(c, PARAM), float), PD_DATA(pd_in(c, GRAD), float), PD_DATA(pd_in(c, MOMENT1), float),
      PD_DATA(pd_in(c, MOMENT2), float), PD_DATA(pd_out(c, PARAM_OUT), float), PD_DATA(pd_out(c, MOMENT1_OUT), float),
      PD_DATA(pd_out(c, MOMENT2_OUT), float), pd_gpu_scalar_of(pd_in(c, LR)), PD_DATA(pd_in(c, STEP), double),
      pd_attr_f(c, A_BETA1), pd_attr_f(c, A_BETA2), pd_attr_f(c, A_EPS), (float)pd_attr_f(c, A_WD), n);
}
