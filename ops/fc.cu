/* fc.cu — GPU kernels of fc: Out = act(X W + B) as a cuBLAS product into
 * Out followed by one element kernel for the bias and activation (act.h's
 * pd_act_float). Backward: dPre = dOut act'(Out) (pd_act_grad_float) into
 * scratch, dW = X^T dPre and dX = dPre W^T through cuBLAS, dB = column sums
 * of dPre, one thread per column adding the rows in order (deterministic). */
#include "act.h"
#include "gpu_common.cuh"
#include "fc.h"
#include "gpu_ops.h"

static __global__ void bias_act(float *out, const float *bias, pd_act a, int64_t n, int64_t m) {
  PD_GPU_FOR(i, n * m) out[i] = pd_act_float(a, bias ? out[i] + bias[i % m] : out[i]);
}
static __global__ void act_grad(const float *y, const float *dy, float *g, pd_act a, int64_t len) {
  PD_GPU_FOR(i, len) g[i] = pd_act_grad_float(a, y[i], dy[i]);
}
/* gb[j] = sum over the n rows of g[i, j], in row order. */
static __global__ void col_sums(const float *g, float *gb, int64_t n, int64_t m) {
  PD_GPU_FOR(j, m) {
    float s = 0;
    for (int64_t i = 0; i < n; i++) s += g[i * m + j];
    gb[j] = s;
  }
}

extern "C" pd_status pd_gpu_fc_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *w = pd_in(c, W), *b = pd_in(c, B);
  int64_t n, k, m = pd_attr_i(c, A_SIZE);
  pd_fc_flat(x, &n, &k);
  float *out = PD_DATA(pd_out(c, OUT), float);
  pd_act a = pd_act_parse(pd_attr_s(c, A_ACT));
  pd_status st = k == 0
                     ? pd_gpu_zero(c, out, (size_t)(n * m) * sizeof(float))
                     : pd_gpu_gemm(c, false, false, n, m, k, 1, PD_DATA(x, float), k, PD_DATA(w, float), m, 0, out, m);
  if (!st && (b || a != PD_ACT_NONE)) st = PD_GPU_LAUNCH_N(c, n * m, bias_act, out, pd_gpu_f32(b), a, n, m);
  return st;
}

/* Grad op slots: inputs X W B Out dOut, outputs dX dW dB. */
extern "C" pd_status pd_gpu_fc_bwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *w = pd_in(c, W), *y = pd_in(c, G_OUT);
  pd_tensor *dy = pd_in(c, G_DOUT);
  pd_tensor *dx = pd_out(c, X), *dw = pd_out(c, W), *db = pd_out(c, B);
  int64_t n, k, m = pd_attr_i(c, A_SIZE);
  pd_fc_flat(x, &n, &k);
  const float *g = PD_DATA(dy, float);
  pd_act a = pd_act_parse(pd_attr_s(c, A_ACT));
  pd_status st = PD_OK;
  if (a != PD_ACT_NONE) {
    float *tmp = (float *)pd_gpu_work(c, 0, (size_t)(n * m) * sizeof(float));
    if (!tmp) return PD_ERR_RUNTIME;
    st = PD_GPU_LAUNCH_N(c, n * m, act_grad, PD_DATA(y, float), g, tmp, a, n * m);
    g = tmp;
  }
  if (!st && dw) {
    if (n == 0)
      st = pd_gpu_zero(c, PD_DATA(dw, float), (size_t)(k * m) * sizeof(float));
    else
      st = pd_gpu_gemm(c, true, false, k, m, n, 1, PD_DATA(x, float), k, g, m, 0, PD_DATA(dw, float), m);
  }
  if (!st && db) st = PD_GPU_LAUNCH_N(c, m, col_sums, g, PD_DATA(db, float), n, m);
  if (!st && dx) st = pd_gpu_gemm(c, false, true, n, k, m, 1, g, m, PD_DATA(w, float), m, 0, PD_DATA(dx, float), k);
  return st;
}
