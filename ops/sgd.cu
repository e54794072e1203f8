/* sgd.cu — GPU kernel of sgd: ParamOut = Param - lr (Grad + wd Param) per
 * element (kmath.h's pd_sgd_float); lr read on the device. Row-sparse
 * (Rows): only the rows listed change (optim.cuh). */
#include "sgd.h"
#include "optim.cuh"

static __global__ void sgd_k(const float *p, const float *g, float *out, pd_gpu_scalar lr, double lr_mult, float wd,
                             pd_gpu_rows r, int64_t n) {
  float l = (float)(pd_gpu_scalar_get(lr) * lr_mult); /* as the CPU kernel rounds it */
  PD_GPU_FOR(e, n) {
    int64_t i = pd_gpu_rows_param(r, e);
    if (i >= 0) out[i] = pd_sgd_float(p[i], g[e], l, wd);
  }
}

extern "C" pd_status pd_gpu_sgd_fwd(pd_ctx *c) {
  pd_gpu_rows r;
  int64_t n;
  pd_status st = pd_gpu_rows_of<ROWS>(c, PARAM, &r, &n);
  if (st) return st;
  return PD_GPU_LAUNCH_N(c, n, sgd_k, PD_DATA(pd_in(c, PARAM), float), PD_DATA(pd_in(c, GRAD), float),
                         PD_DATA(pd_out(c, PARAM_OUT), float), pd_gpu_scalar_of(pd_in(c, LR)), pd_attr_f(c, A_LR_MULT),
                         (float)pd_attr_f(c, A_WD), r, n);
}
