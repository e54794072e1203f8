/* momentum.cu — GPU kernel of momentum (and Nesterov) per element, the
 * math kmath.h's pd_momentum_float; lr read on the device. */
#include "momentum.h"
#include "optim.cuh"

static __global__ void momentum_k(const float *p, const float *g, const float *v, float *p_out, float *v_out,
                                  pd_gpu_scalar lr, float mu, float wd, bool nesterov, int64_t n) {
  float l = (float)pd_gpu_scalar_get(lr);
  PD_GPU_FOR(i, n) pd_momentum_float(p[i], g[i], v[i], l, mu, wd, nesterov, &p_out[i], &v_out[i]);
}

extern "C" pd_status pd_gpu_momentum_fwd(pd_ctx *c) {
  if (pd_in(c, ROWS)) /* embedding has no GPU kernel, so no GPU net makes a row-sparse gradient */
    return pd_ctx_fail(c, PD_ERR_INPUT, "a row-sparse gradient (input Rows) has no GPU kernel; run on the CPU");
  int64_t n = pd_tensor_numel(pd_in(c, PARAM));
  return PD_GPU_LAUNCH_N(c, n, momentum_k, PD_DATA(pd_in(c, PARAM), float), PD_DATA(pd_in(c, GRAD), float),
                         PD_DATA(pd_in(c, VELOCITY), float), PD_DATA(pd_out(c, PARAM_OUT), float),
                         PD_DATA(pd_out(c, VELOCITY_OUT), float), pd_gpu_scalar_of(pd_in(c, LR)),
                         (float)pd_attr_f(c, A_MU), (float)pd_attr_f(c, A_WD), pd_attr_b(c, A_NESTEROV), n);
}
