/* batch_norm.cu — GPU kernels of batch_norm, one block per channel: the
 * batch mean and (biased) variance in double by fixed-order block
 * reductions, two passes as on the CPU (training), or the running
 * statistics (inference); then Y, and the running statistics moved in
 * place (kmath.h's pd_bn_running_*). Backward per channel: Σ dY and
 * Σ dY (X - mean) by block reductions, then dX from pd_bn_grad_coefs. */
#include "batch_norm.h"
#include "gpu_common.cuh"
#include "gpu_ops.h"

typedef struct bn_dims {
  int64_t n, ch, sp;
} bn_dims;

/* Element e (of the channel's n sp) of channel k (kmath.h's pd_bn_at). */
__device__ static inline int64_t at(bn_dims d, int64_t k, int64_t e) { return pd_bn_at(d.ch, d.sp, k, e); }

/* The statistics channel k is normalised with; every thread gets them. */
__device__ static void stats(bn_dims d, const float *x, const float *rmean, const float *rvar, bool training, int64_t k,
                             double *mean, double *var) {
  int64_t m = d.n * d.sp;
  if (!training || m == 0) {
    *mean = rmean[k], *var = rvar[k];
    return;
  }
  double s = 0;
  PD_GPU_FOR_COLS(e, m) s += x[at(d, k, e)];
  *mean = pd_block_sum(s) / (double)m;
  double q = 0;
  PD_GPU_FOR_COLS(e, m) {
    double v = x[at(d, k, e)] - *mean;
    q += v * v;
  }
  *var = pd_block_sum(q) / (double)m;
}

static __global__ void bn_fwd(bn_dims d, const float *x, const float *scale, const float *bias, float *y, float *rmean,
                              float *rvar, double mom, double eps, bool training) {
  int64_t m = d.n * d.sp;
  PD_GPU_FOR_ROWS(k, d.ch) {
    double mean, var;
    stats(d, x, rmean, rvar, training, k, &mean, &var);
    double a = scale[k] / sqrt(var + eps), b = bias[k];
    PD_GPU_FOR_COLS(e, m) {
      int64_t i = at(d, k, e);
      y[i] = (float)((x[i] - mean) * a + b);
    }
    __syncthreads(); /* every thread has read the running statistics */
    if (threadIdx.x == 0 && training && m > 0) {
      rmean[k] = (float)pd_bn_running_mean(rmean[k], mean, mom);
      if (m > 1) rvar[k] = (float)pd_bn_running_var(rvar[k], var, mom, (double)m);
    }
  }
}

static __global__ void bn_bwd(bn_dims d, const float *x, const float *dy, const float *scale, const float *rmean,
                              const float *rvar, float *dx, float *dscale, float *dbias, double eps, bool training) {
  int64_t m = d.n * d.sp;
  PD_GPU_FOR_ROWS(k, d.ch) {
    double mean, var;
    stats(d, x, rmean, rvar, training, k, &mean, &var);
    double inv = 1 / sqrt(var + eps), sg = 0, sgx = 0;
    PD_GPU_FOR_COLS(e, m) {
      int64_t i = at(d, k, e);
      sg += dy[i];
      sgx += dy[i] * (x[i] - mean);
    }
    double sdy = pd_block_sum(sg), sdyx = pd_block_sum(sgx) * inv;
    if (threadIdx.x == 0) {
      if (dscale) dscale[k] = (float)sdyx;
      if (dbias) dbias[k] = (float)sdy;
    }
    if (!dx) continue;
    pd_bn_coef q = pd_bn_grad_coefs(scale[k], mean, inv, sdy, sdyx, (double)m, training);
    PD_GPU_FOR_COLS(e, m) {
      int64_t i = at(d, k, e);
      dx[i] = (float)(q.a * dy[i] + q.b * x[i] + q.d);
    }
  }
}

static bn_dims dims_of(const pd_tensor *x) {
  bn_dims d = {x->dims[0], x->dims[1], 1};
  for (int i = 2; i < x->ndim; i++) d.sp *= x->dims[i];
  return d;
}

extern "C" pd_status pd_gpu_batch_norm_fwd(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X);
  bn_dims d = dims_of(xt);
  /* Mean and Variance are the very variables of MeanOut and VarianceOut (checked at load). */
  return PD_GPU_LAUNCH_ROWS(c, d.ch, bn_fwd, d, PD_DATA(xt, float), PD_DATA(pd_in(c, SCALE), float),
                            PD_DATA(pd_in(c, BIAS), float), PD_DATA(pd_out(c, Y), float),
                            PD_DATA(pd_out(c, MEAN_OUT), float), PD_DATA(pd_out(c, VAR_OUT), float),
                            pd_attr_f(c, A_MOMENTUM), pd_attr_f(c, A_EPSILON), pd_ctx_training(c));
}

/* Grad op slots: inputs X Scale Bias Mean Variance, Y MeanOut VarianceOut,
 * dY dMeanOut dVarianceOut; outputs dX dScale dBias. */
extern "C" pd_status pd_gpu_batch_norm_bwd(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X);
  bn_dims d = dims_of(xt);
  return PD_GPU_LAUNCH_ROWS(c, d.ch, bn_bwd, d, PD_DATA(xt, float), PD_DATA(pd_in(c, G_DY), float),
                            PD_DATA(pd_in(c, SCALE), float), PD_DATA(pd_in(c, MEAN), float),
                            PD_DATA(pd_in(c, VAR), float), pd_gpu_f32(pd_out(c, X)), pd_gpu_f32(pd_out(c, SCALE)),
                            pd_gpu_f32(pd_out(c, BIAS)), pd_attr_f(c, A_EPSILON), pd_ctx_training(c));
}
