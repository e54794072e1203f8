/* pool2d.cu — GPU kernels of pool2d: one thread per output (kmath.h's
 * pd_pool_out: the window's max or average, windows as the CPU kernel clips
 * them) and, backward, one thread per input element gathering from every
 * window that holds it (pd_pool_grad_at: max pooling's gradient goes to the
 * window's first largest element in row-major order, as on the CPU), so no
 * atomics and the same result every run. */
#include "gpu_common.cuh"
#include "gpu_ops.h" /* pd_pool2d_geom */
#include "pool2d.h"

static __global__ void pool_fwd(pd_pool_geom g, const float *x, float *y) {
  int64_t per = g.ho * g.wo;
  PD_GPU_FOR(e, g.n * g.c * per) {
    int64_t pl = e / per, o = e % per;
    y[e] = pd_pool_out(x + pl * g.h * g.w, &g, o / g.wo, o % g.wo);
  }
}
static __global__ void pool_bwd(pd_pool_geom g, const float *x, const float *dy, float *dx) {
  int64_t per = g.h * g.w;
  PD_GPU_FOR(e, g.n * g.c * per) {
    int64_t pl = e / per, i = e % per;
    dx[e] = pd_pool_grad_at(x + pl * per, dy + pl * g.ho * g.wo, &g, i / g.w, i % g.w);
  }
}

extern "C" pd_status pd_gpu_pool2d_fwd(pd_ctx *c) {
  pd_pool_geom g;
  pd_status st = pd_pool2d_geom(c, pd_in(c, X), &g);
  if (st) return st;
  return PD_GPU_LAUNCH_N(c, g.n * g.c * g.ho * g.wo, pool_fwd, g, PD_DATA(pd_in(c, X), float),
                         PD_DATA(pd_out(c, OUT), float));
}

/* Grad op slots: inputs X Out dOut, output dX. */
extern "C" pd_status pd_gpu_pool2d_bwd(pd_ctx *c) {
  pd_pool_geom g;
  pd_tensor *dx = pd_out(c, G_DX);
  pd_status st = pd_pool2d_geom(c, pd_in(c, G_X), &g);
  if (st || !dx) return st;
  return PD_GPU_LAUNCH_N(c, g.n * g.c * g.h * g.w, pool_bwd, g, PD_DATA(pd_in(c, G_X), float),
                         PD_DATA(pd_in(c, G_DOUT), float), PD_DATA(dx, float));
}
