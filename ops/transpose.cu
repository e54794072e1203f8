/* transpose.cu — GPU kernels of transpose: one thread per element of Out,
 * reading X's element at kmath.h's pd_perm_map offset (the CPU's walk).
 * Backward writes each dOut element back to that offset in dX: a
 * permutation, so every element of dX is written once. Forward moves
 * elements of any dtype by their size. */
#include "gpu_common.cuh"
#include "gpu_ops.h" /* pd_transpose_perm */
#include "transpose.h"

template <typename E> static __global__ void perm_fwd(pd_perm_map p, const E *x, E *out) {
  PD_GPU_FOR(o, p.numel) out[o] = x[pd_strided_off(p.nd, p.size, p.st, o)];
}
static __global__ void perm_bwd(pd_perm_map p, const float *dout, float *dx) {
  PD_GPU_FOR(o, p.numel) dx[pd_strided_off(p.nd, p.size, p.st, o)] = dout[o];
}

static pd_perm_map map_of(pd_ctx *c, const pd_tensor *x) {
  int perm[PD_MAX_DIMS];
  pd_perm_map p;
  pd_transpose_perm(c, x->ndim, perm);
  pd_perm_map_init(&p, x->ndim, x->dims, perm);
  return p;
}

extern "C" pd_status pd_gpu_transpose_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *out = pd_out(c, OUT);
  pd_perm_map p = map_of(c, x);
  void *o = pd_tensor_data(out);
  const void *in = pd_tensor_data(x);
  switch (pd_dtype_size(x->dtype)) {
  case 1:
    return PD_GPU_LAUNCH_N(c, p.numel, perm_fwd<uint8_t>, p, (const uint8_t *)in, (uint8_t *)o);
  case 4:
    return PD_GPU_LAUNCH_N(c, p.numel, perm_fwd<uint32_t>, p, (const uint32_t *)in, (uint32_t *)o);
  default:
    return PD_GPU_LAUNCH_N(c, p.numel, perm_fwd<uint64_t>, p, (const uint64_t *)in, (uint64_t *)o);
  }
}

/* Grad op slots: inputs X Out dOut, output dX. */
extern "C" pd_status pd_gpu_transpose_bwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, G_X), *dout = pd_in(c, G_DOUT);
  pd_tensor *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  pd_perm_map p = map_of(c, x);
  if (!dout) return pd_gpu_zero(c, PD_DATA(dx, float), (size_t)p.numel * sizeof(float));
  return PD_GPU_LAUNCH_N(c, p.numel, perm_bwd, p, PD_DATA(dout, float), PD_DATA(dx, float));
}
