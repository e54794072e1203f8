/* sgd.cu — GPU kernel of sgd: ParamOut = Param - lr (Grad + wd Param) per
 * element (kmath.h's pd_sgd_float); lr read on the device. */
#include "sgd.h"
#include "optim.cuh"

static __global__ void sgd_k(const float *p, const float *g, float *out, pd_gpu_scalar lr, float wd, int64_t n) {
  float l = (float)pd_gpu_scalar_get(lr);
  PD_GPU_FOR(i, n) out[i] = pd_sgd_float(p[i], g[i], l, wd);
}

extern "C" pd_status pd_gpu_sgd_fwd(pd_ctx *c) {
  if (pd_in(c, ROWS)) /* embedding has no GPU kernel, so no GPU net makes a row-sparse gradient */
    return pd_ctx_fail(c, PD_ERR_INPUT, "a row-sparse gradient (input Rows) has no GPU kernel; run on the CPU");
  int64_t n = pd_tensor_numel(pd_in(c, PARAM));
  return PD_GPU_LAUNCH_N(c, n, sgd_k, PD_DATA(pd_in(c, PARAM), float), PD_DATA(pd_in(c, GRAD), float),
                         PD_DATA(pd_out(c, PARAM_OUT), float), pd_gpu_scalar_of(pd_in(c, LR)),
                         (float)pd_attr_f(c, A_WD), n);
}
