/* dropout.cu — GPU kernels of dropout: training keeps element i when
 * number i of the op's stream (rng.h's pd_rng_uniform_at) is >= p, the
 * CPU kernel's mask bit for bit; inference copies X and sets Mask to 1.
 * Backward: dX = dOut Mask / (1 - p) (training) or dOut. */
#include "dropout.h"
#include "gpu_ops.h"
#include "random.cuh"

static __global__ void dropout_fwd(const float *x, float *out, float *mask, uint64_t seed, int op, const int64_t *step,
                                   double p, float keep_scale, bool training, int64_t n) {
  uint64_t s = training ? pd_gpu_rng_seed(seed, op, step) : 0;
  PD_GPU_FOR(i, n) {
    bool keep = !training || pd_rng_uniform_at(s, (uint64_t)i) >= p;
    mask[i] = keep;
    out[i] = !training ? x[i] : x[i] * (keep ? keep_scale : 0.0f); /* NaN * 0 stays NaN */
  }
}
static __global__ void dropout_bwd(const float *mask, const float *dy, float *dx, float scale, int64_t n) {
  PD_GPU_FOR(i, n) dx[i] = dy ? dy[i] * mask[i] * scale : 0;
}

extern "C" pd_status pd_gpu_dropout_fwd(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, X);
  int64_t n = pd_tensor_numel(xt);
  bool training = pd_ctx_training(c);
  double p = pd_attr_f(c, A_PROB);
  return PD_GPU_LAUNCH_N(c, n, dropout_fwd, PD_DATA(xt, float), PD_DATA(pd_out(c, OUT), float),
                         PD_DATA(pd_out(c, MASK), float), pd_gpu_run_seed(c), c->op->index, pd_gpu_step(c), p,
                         (float)(1 / (1 - p)), training, n);
}

/* Grad op slots: inputs X Out Mask dOut dMask, output dX. */
extern "C" pd_status pd_gpu_dropout_bwd(pd_ctx *c) {
  pd_tensor *dxt = pd_out(c, X);
  if (!dxt) return PD_OK;
  int64_t n = pd_tensor_numel(dxt);
  float scale = (float)(pd_ctx_training(c) ? 1 / (1 - pd_attr_f(c, A_PROB)) : 1);
  return PD_GPU_LAUNCH_N(c, n, dropout_bwd, PD_DATA(pd_in(c, G_MASK), float), pd_gpu_f32(pd_in(c, G_DOUT)),
                         PD_DATA(dxt, float), scale, n);
}
