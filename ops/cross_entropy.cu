/* cross_entropy.cu — GPU kernels of cross_entropy, one thread per row
 * (forward) or element (backward), the math kmath.h's pd_ce_*. A label
 * outside [0, C), which the CPU kernel reports, is never read through: its
 * row's loss and gradient become NaN, and the lowest such row raises the
 * fault record (fault.h) that the runner's next fetch reports with the CPU
 * kernel's message. */
#include "cross_entropy.h"
#include "gpu_common.cuh"
#include "gpu_ops.h"

static __global__ void ce_fwd(const float *x, const int64_t *label, const float *soft, float *out, int64_t n, int64_t k,
                              pd_gpu_fault *fault, unsigned long long op) {
  int64_t bad = INT64_MAX;
  PD_GPU_FOR(i, n) {
    if (soft) {
      out[i] = pd_ce_soft_row_float(x + i * k, soft + i * k, k);
    } else {
      int64_t l = label[i];
      bool ok = l >= 0 && l < k;
      out[i] = ok ? pd_ce_hard_float(x[i * k + l]) : NAN;
      if (!ok && i < bad) bad = i;
    }
  }
  if (!soft) pd_gpu_raise_label(fault, op, LABEL, label, bad, k, 0);
}
static __global__ void ce_bwd(const float *x, const int64_t *label, const float *soft, const float *dy, float *dx,
                              int64_t n, int64_t k, pd_gpu_fault *fault, unsigned long long op) {
  int64_t bad = INT64_MAX;
  PD_GPU_FOR(e, n * k) {
    int64_t i = e / k, j = e % k;
    if (soft) {
      dx[e] = dy ? pd_ce_soft_grad_float(dy[i], soft[e], x[e]) : 0;
    } else { /* the labels are checked with or without dOut, as on the CPU */
      int64_t l = label[i];
      bool ok = l >= 0 && l < k;
      dx[e] = !ok ? NAN : dy ? pd_ce_hard_grad_float(dy[i], x[e], j == l) : 0;
      if (!ok && i < bad) bad = i;
    }
  }
  if (!soft) pd_gpu_raise_label(fault, op, G_LABEL, label, bad, k, 0);
}

extern "C" pd_status pd_gpu_cross_entropy_fwd(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X), *lt = pd_in(c, LABEL);
  int64_t n = xt->dims[0], k = xt->dims[1];
  bool soft = pd_attr_b(c, A_SOFT);
  return PD_GPU_LAUNCH_N(c, n, ce_fwd, PD_DATA(xt, float), soft ? NULL : PD_DATA(lt, int64_t),
                         soft ? PD_DATA(lt, float) : NULL, PD_DATA(pd_out(c, OUT), float), n, k, pd_gpu_fault_record(c),
                         (unsigned long long)(uintptr_t)c->op);
}

/* Grad op slots: inputs X Label Out dOut, output dX. */
extern "C" pd_status pd_gpu_cross_entropy_bwd(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X), *lt = pd_in(c, LABEL), *dx = pd_out(c, X);
  if (!dx) return PD_OK;
  int64_t n = xt->dims[0], k = xt->dims[1];
  bool soft = pd_attr_b(c, A_SOFT);
  return PD_GPU_LAUNCH_N(c, n * k, ce_bwd, PD_DATA(xt, float), soft ? NULL : PD_DATA(lt, int64_t),
                         soft ? PD_DATA(lt, float) : NULL, pd_gpu_f32(pd_in(c, G_DOUT)), PD_DATA(dx, float), n, k,
                         pd_gpu_fault_record(c), (unsigned long long)(uintptr_t)c->op);
}
