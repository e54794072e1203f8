/* adam.cu — GPU kernel of adam per element (kmath.h's pd_adam_float), the
 * bias correction (pd_adam_coefs) computed on the device from the float64
 * Step and the learning rate, which stay in device memory. A Step below 1,
 * which the CPU kernel reports, leaves Param and the moments unchanged and
 * raises a fault (gpu.h) that the runner's next fetch reports with the CPU
 * kernel's message: no host copy per step, and a graph replays it.
 * Row-sparse (Rows: lazy Adam): only the rows listed and their moments
 * change (optim.cuh). */
#include "adam.h"
#include "optim.cuh"

static __global__ void adam_k(const float *p, const float *g, const float *m, const float *v, float *p_out,
                              float *m_out, float *v_out, pd_gpu_scalar lr, double lr_mult, const double *step,
                              double b1, double b2, double eps, float wd, pd_gpu_rows r, int64_t n, pd_gpu_fault *fault,
                              unsigned long long op) {
  double t = step[0], lr_t, eps_t;
  if (!(t >= 1)) { /* as the CPU kernel: no update, and the op fails (at the next fetch) */
    if (blockIdx.x == 0 && threadIdx.x == 0) pd_gpu_raise(fault, op, PD_GPU_FAULT_STEP, STEP, t);
    PD_GPU_FOR(e, n) {
      int64_t i = pd_gpu_rows_param(r, e);
      if (i >= 0) p_out[i] = p[i], m_out[i] = m[i], v_out[i] = v[i];
    }
    return;
  }
  pd_adam_coefs((double)(float)(pd_gpu_scalar_get(lr) * lr_mult), b1, b2, eps, t, &lr_t, &eps_t);
  PD_GPU_FOR(e, n) {
    int64_t i = pd_gpu_rows_param(r, e);
    if (i >= 0)
      pd_adam_float(p[i], g[e], m[i], v[i], (float)lr_t, (float)eps_t, (float)b1, (float)b2, wd, &p_out[i], &m_out[i],
                    &v_out[i]);
  }
}

extern "C" pd_status pd_gpu_adam_fwd(pd_ctx *c) {
  pd_gpu_rows r;
  int64_t n;
  pd_status st = pd_gpu_rows_of<ROWS>(c, PARAM, &r, &n);
  if (st) return st;
  return PD_GPU_LAUNCH_N(
      c, n, adam_k, PD_DATA(pd_in(c, PARAM), float), PD_DATA(pd_in(c, GRAD), float), PD_DATA(pd_in(c, MOMENT1), float),
      PD_DATA(pd_in(c, MOMENT2), float), PD_DATA(pd_out(c, PARAM_OUT), float), PD_DATA(pd_out(c, MOMENT1_OUT), float),
      PD_DATA(pd_out(c, MOMENT2_OUT), float), pd_gpu_scalar_of(pd_in(c, LR)), pd_attr_f(c, A_LR_MULT),
      PD_DATA(pd_in(c, STEP), double), pd_attr_f(c, A_BETA1), pd_attr_f(c, A_BETA2), pd_attr_f(c, A_EPS),
      (float)pd_attr_f(c, A_WD), r, n, pd_gpu_fault_record(c), (unsigned long long)(uintptr_t)c->op);
}
