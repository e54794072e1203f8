/* slice.cu — GPU kernels of slice: one thread per Out element forward (the
 * element it reads), one per X element backward (dOut of the element that
 * read it, or 0: a gather, no atomics). The math is slice.h's, as on the
 * CPU. Starts computed at run time are read by each thread from device
 * memory; a window that does not fit makes NaN and raises the fault record
 * (fault.h), which the runner's next fetch reports as the CPU's message. */
#include "gpu_common.cuh"
#include "slice.h"

/* This thread's first indices; false (the fault raised) when a window of
 * Starts does not fit. */
__device__ static bool slice_firsts(const pd_slice_geom &g, const int64_t *starts, int64_t *first, pd_gpu_fault *f,
                                    unsigned long long op, int slot) {
  int k = pd_slice_firsts(&g, starts, first);
  if (k < 0) return true;
  int a = pd_slice_axis_of(&g, k);
  if (atomicCAS(&f->raised, 0u, 1u) == 0u)
    f->code = PD_GPU_FAULT_WINDOW, f->slot = slot, f->op = op, f->label = starts[k], f->row = k, f->limit = g.in[a],
    f->per_row = g.out[a], f->value = a;
  return false;
}

static __global__ void slice_fwd(pd_slice_geom g, const int64_t *starts, const float *x, float *y, pd_gpu_fault *f,
                                 unsigned long long op) {
  int64_t first[PD_MAX_DIMS];
  bool ok = slice_firsts(g, starts, first, f, op, STARTS);
  PD_GPU_FOR(o, g.numel_out) y[o] = ok ? x[pd_slice_src(&g, first, o)] : NAN;
}

static __global__ void slice_bwd(pd_slice_geom g, const int64_t *starts, const float *dy, float *dx, pd_gpu_fault *f,
                                 unsigned long long op) {
  int64_t first[PD_MAX_DIMS];
  bool ok = slice_firsts(g, starts, first, f, op, G_STARTS);
  PD_GPU_FOR(i, g.numel_in) {
    int64_t o = ok ? pd_slice_dst(&g, first, i) : -1;
    dx[i] = !ok ? NAN : o < 0 ? 0.f : dy[o];
  }
}

static const int64_t *starts_of(pd_ctx *c, int slot) {
  const pd_tensor *s = pd_in(c, slot);
  return s ? PD_DATA(s, int64_t) : NULL;
}

extern "C" pd_status pd_gpu_slice_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  pd_slice_geom g = pd_slice_geom_of(c, x);
  return PD_GPU_LAUNCH_N(c, g.numel_out, slice_fwd, g, starts_of(c, STARTS), PD_DATA(x, float),
                         PD_DATA(pd_out(c, OUT), float), pd_gpu_fault_record(c), (unsigned long long)(uintptr_t)c->op);
}

/* Grad op slots: inputs X Starts Out dOut, output dX. */
extern "C" pd_status pd_gpu_slice_bwd(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  pd_slice_geom g = pd_slice_geom_of(c, dx);
  return PD_GPU_LAUNCH_N(c, g.numel_in, slice_bwd, g, starts_of(c, G_STARTS), PD_DATA(pd_in(c, G_DOUT), float),
                         PD_DATA(dx, float), pd_gpu_fault_record(c), (unsigned long long)(uintptr_t)c->op);
}
