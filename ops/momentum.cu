/* momentum.cu — GPU kernel of momentum (and Nesterov) per element, the
 * math kmath.h's pd_momentum_float; lr read on the device. Row-sparse
 * (Rows): only the rows listed and their velocities change (optim.cuh). */
#include "momentum.h"
#include "optim.cuh"

static __global__ void momentum_k(const float *p, const float *g, const float *v, float *p_out, float *v_out,
                                  pd_gpu_scalar lr, double lr_mult, float mu, float wd, bool nesterov, pd_gpu_rows r,
                                  int64_t n) {
  float l = (float)(pd_gpu_scalar_get(lr) * lr_mult); /* as the CPU kernel rounds it */
  PD_GPU_FOR(e, n) {
    int64_t i = pd_gpu_rows_param(r, e);
    if (i >= 0) pd_momentum_float(p[i], g[e], v[i], l, mu, wd, nesterov, &p_out[i], &v_out[i]);
  }
}

extern "C" pd_status pd_gpu_momentum_fwd(pd_ctx *c) {
  pd_gpu_rows r;
  int64_t n;
  pd_status st = pd_gpu_rows_of<ROWS>(c, PARAM, &r, &n);
  if (st) return st;
  return PD_GPU_LAUNCH_N(c, n, momentum_k, PD_DATA(pd_in(c, PARAM), float), PD_DATA(pd_in(c, GRAD), float),
                         PD_DATA(pd_in(c, VELOCITY), float), PD_DATA(pd_out(c, PARAM_OUT), float),
                         PD_DATA(pd_out(c, VELOCITY_OUT), float), pd_gpu_scalar_of(pd_in(c, LR)),
                         pd_attr_f(c, A_LR_MULT), (float)pd_attr_f(c, A_MU), (float)pd_attr_f(c, A_WD),
                         pd_attr_b(c, A_NESTEROV), r, n);
}
