/* cos_sim.cu — GPU kernels of cos_sim, one block per row: the three dot
 * products in double by fixed-order block reductions, then kmath.h's
 * pd_cos_out / pd_cos_coefs. A broadcast Y [1, D] collects its gradient
 * over the rows: the per-row coefficients go to scratch and one thread per
 * column adds the rows in order (as the CPU kernel), so no atomics. */
#include "cos_sim.h"
#include "gpu_common.cuh"
#include "gpu_ops.h"

/* <a, b>, <a, a>, <b, b> of one row of d, in double, every thread gets them. */
__device__ static void dot3(const float *a, const float *b, int64_t d, double *ab, double *aa, double *bb) {
  double s = 0, sa = 0, sb = 0;
  PD_GPU_FOR_COLS(j, d) {
    s += (double)a[j] * b[j];
    sa += (double)a[j] * a[j];
    sb += (double)b[j] * b[j];
  }
  *ab = pd_block_sum(s), *aa = pd_block_sum(sa), *bb = pd_block_sum(sb);
}

static __global__ void cos_fwd(const float *x, const float *y, float *out, float *xn, float *yn, int64_t n, int64_t d,
                               int64_t ystride, double scale) {
  PD_GPU_FOR_ROWS(i, n) {
    double xy, xx, yy;
    dot3(x + i * d, y + i * ystride, d, &xy, &xx, &yy);
    if (threadIdx.x == 0) {
      out[i] = (float)pd_cos_out(xy, xx, yy, scale);
      if (xn) xn[i] = (float)sqrt(xx);
      if (yn && (ystride || i == 0)) yn[ystride ? i : 0] = (float)sqrt(yy);
    }
  }
}

/* Per row: dX, and either dY (own rows) or the coefficients k, ky (broadcast Y). */
static __global__ void cos_bwd(const float *x, const float *y, const float *dout, const float *dxn, const float *dyn,
                               float *gx, float *gy, double *coef, int64_t n, int64_t d, int64_t ystride,
                               double scale) {
  PD_GPU_FOR_ROWS(i, n) {
    const float *xi = x + i * d, *yi = y + i * ystride;
    double xy, xx, yy;
    dot3(xi, yi, d, &xy, &xx, &yy);
    pd_cos_coef k = pd_cos_coefs(xy, xx, yy, scale, dout ? dout[i] : 0, dxn ? dxn[i] : 0, dyn && ystride ? dyn[i] : 0,
                                 ystride != 0);
    if (gx) PD_GPU_FOR_COLS(j, d) gx[i * d + j] = (float)(k.k * yi[j] + k.kx * xi[j]);
    if (gy && ystride) PD_GPU_FOR_COLS(j, d) gy[i * d + j] = (float)(k.k * xi[j] + k.ky * yi[j]);
    /* coef exists only when the broadcast Y wants its gradient (a data Y has none) */
    if (coef && threadIdx.x == 0) coef[2 * i] = k.k, coef[2 * i + 1] = k.ky;
  }
}
/* Broadcast Y: gy[j] = sum over rows (in order) of k x[i, j] + ky y[j], then
 * YNorm's gradient once; norm is |y|, computed by cos_fwd's rule below. */
static __global__ void cos_bwd_bcast(const float *x, const float *y, const double *coef, const float *dyn, float *gy,
                                     int64_t n, int64_t d) {
  double yy = 0;
  for (int64_t j = 0; j < d; j++) yy += (double)y[j] * y[j]; /* the CPU's order: one sequential sum */
  double ny = sqrt(yy);
  PD_GPU_FOR(j, d) {
    float acc = 0;
    for (int64_t i = 0; i < n; i++) acc += (float)(coef[2 * i] * x[i * d + j] + coef[2 * i + 1] * y[j]);
    if (dyn && ny != 0) acc += (float)(dyn[0] * y[j] / ny);
    gy[j] = acc;
  }
}

extern "C" pd_status pd_gpu_cos_sim_fwd(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X), *yt = pd_in(c, Y);
  int64_t n = xt->dims[0], d = xt->dims[1], ystride = yt->dims[0] == 1 ? 0 : d;
  return PD_GPU_LAUNCH_ROWS(c, n, cos_fwd, PD_DATA(xt, float), PD_DATA(yt, float), PD_DATA(pd_out(c, OUT), float),
                            pd_gpu_f32(pd_out(c, XNORM)), pd_gpu_f32(pd_out(c, YNORM)), n, d, ystride,
                            pd_attr_f(c, A_SCALE));
}

/* Grad op slots: inputs X Y Out XNorm YNorm dOut dXNorm dYNorm, outputs dX dY. */
extern "C" pd_status pd_gpu_cos_sim_bwd(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X), *yt = pd_in(c, Y), *gyt = pd_out(c, Y);
  int64_t n = xt->dims[0], d = xt->dims[1], ystride = yt->dims[0] == 1 ? 0 : d;
  const float *dyn = pd_gpu_f32(pd_in(c, G_DYNORM));
  double *coef = NULL;
  if (!ystride && gyt && !(coef = (double *)pd_gpu_work(c, 0, (size_t)(2 * (n > 0 ? n : 1)) * sizeof(double))))
    return PD_ERR_RUNTIME;
  pd_status st = PD_GPU_LAUNCH_ROWS(c, n, cos_bwd, PD_DATA(xt, float), PD_DATA(yt, float), pd_gpu_f32(pd_in(c, G_DOUT)),
                                    pd_gpu_f32(pd_in(c, G_DXNORM)), dyn, pd_gpu_f32(pd_out(c, X)), pd_gpu_f32(gyt),
                                    coef, n, d, ystride, pd_attr_f(c, A_SCALE));
  if (!st && coef)
    st = PD_GPU_LAUNCH_N(c, d, cos_bwd_bcast, PD_DATA(xt, float), PD_DATA(yt, float), coef, dyn, PD_DATA(gyt, float), n,
                         d);
  return st;
}
