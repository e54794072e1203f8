/* softmax.cu — GPU kernels of softmax over the last dim, one block per row:
 * the row max and the sum of exp(x - max) by fixed-order block reductions,
 * then Out = exp(x - max) / sum as on the CPU. Backward: dX = Out (dOut -
 * <dOut, Out>) (kmath.h's pd_softmax_grad_float). */
#include "gpu_common.cuh"
#include "lastdim.h"
#include "softmax.h"

static __global__ void softmax_fwd(const float *x, float *y, int64_t rows, int64_t d) {
  PD_GPU_FOR_ROWS(r, rows) {
    const float *xr = x + r * d;
    float *yr = y + r * d;
    float m;
    float inv = 1 / pd_block_row_sumexp(xr, d, &m);
    PD_GPU_FOR_COLS(j, d) yr[j] = expf(xr[j] - m) * inv;
  }
}
static __global__ void softmax_bwd(const float *y, const float *dy, float *dx, int64_t rows, int64_t d) {
  PD_GPU_FOR_ROWS(r, rows) {
    const float *yr = y + r * d, *dyr = dy ? dy + r * d : NULL;
    float *dxr = dx + r * d;
    float s = 0;
    if (dyr) PD_GPU_FOR_COLS(j, d) s += dyr[j] * yr[j];
    float dot = pd_block_sum(s);
    PD_GPU_FOR_COLS(j, d) dxr[j] = dyr ? pd_softmax_grad_float(yr[j], dyr[j], dot) : 0;
  }
}

extern "C" pd_status pd_gpu_softmax_fwd(pd_ctx *c) {
  int64_t rows, d;
  pd_lastdim_rows(pd_in(c, X), &rows, &d);
  return PD_GPU_LAUNCH_ROWS(c, rows, softmax_fwd, PD_DATA(pd_in(c, X), float), PD_DATA(pd_out(c, OUT), float), rows, d);
}

/* Grad op slots: inputs X Out dOut, output dX. */
extern "C" pd_status pd_gpu_softmax_bwd(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, G_DX), *y = pd_in(c, G_OUT);
  if (!dx) return PD_OK;
  int64_t rows, d;
  pd_lastdim_rows(y, &rows, &d);
  return PD_GPU_LAUNCH_ROWS(c, rows, softmax_bwd, PD_DATA(y, float), pd_gpu_f32(pd_in(c, G_DOUT)), PD_DATA(dx, float),
                            rows, d);
}
