/* log_softmax.cu — GPU kernels of log_softmax over the last dim, one block
 * per row: the row max and the sum of exp(x - max) by fixed-order block
 * reductions, then Out = (x - max) - log(sum) (kmath.h's pd_log_softmax_float).
 * Backward: the row's sum of dOut by a block reduction, then dX = dOut -
 * exp(Out) sum (pd_log_softmax_grad_float); zeros when no dOut reaches Out. */
#include "gpu_common.cuh"
#include "lastdim.h"
#include "log_softmax.h"

static __global__ void log_softmax_fwd(const float *x, float *y, int64_t rows, int64_t d) {
  PD_GPU_FOR_ROWS(r, rows) {
    const float *xr = x + r * d;
    float *yr = y + r * d;
    float m;
    float lse = pd_log_float(pd_block_row_sumexp(xr, d, &m));
    PD_GPU_FOR_COLS(j, d) yr[j] = pd_log_softmax_float(xr[j], m, lse);
  }
}
static __global__ void log_softmax_bwd(const float *y, const float *dy, float *dx, int64_t rows, int64_t d) {
  PD_GPU_FOR_ROWS(r, rows) {
    const float *yr = y + r * d, *dyr = dy + r * d;
    float *dxr = dx + r * d;
    float s = 0;
    PD_GPU_FOR_COLS(j, d) s += dyr[j];
    float sum = pd_block_sum(s);
    PD_GPU_FOR_COLS(j, d) dxr[j] = pd_log_softmax_grad_float(yr[j], dyr[j], sum);
  }
}

extern "C" pd_status pd_gpu_log_softmax_fwd(pd_ctx *c) {
  int64_t rows, d;
  pd_lastdim_rows(pd_in(c, X), &rows, &d);
  return PD_GPU_LAUNCH_ROWS(c, rows, log_softmax_fwd, PD_DATA(pd_in(c, X), float), PD_DATA(pd_out(c, OUT), float), rows,
                            d);
}

/* Grad op slots: inputs X Out dOut, output dX. */
extern "C" pd_status pd_gpu_log_softmax_bwd(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, G_DX), *y = pd_in(c, G_OUT), *dy = pd_in(c, G_DOUT);
  if (!dx) return PD_OK;
  if (!dy) return pd_gpu_zero(c, PD_DATA(dx, float), pd_tensor_bytes(y));
  int64_t rows, d;
  pd_lastdim_rows(y, &rows, &d);
  return PD_GPU_LAUNCH_ROWS(c, rows, log_softmax_bwd, PD_DATA(y, float), PD_DATA(dy, float), PD_DATA(dx, float), rows,
                            d);
}
