/* layer_norm.cu — GPU kernels of layer_norm, one block per row: the row's
 * mean and (biased) variance in double by fixed-order block reductions, two
 * passes as on the CPU, then Y. Backward: per row (one block each) the
 * statistics again, kept in the op's scratch, Σ g and Σ g xhat (g = dY
 * Scale) by block reductions and dX (layer_norm.h's pd_ln_grad); then
 * dScale and dBias, one thread per column summing the rows in row order. */
#include "gpu_common.cuh"
#include "layer_norm.h"

/* Row r's mean and 1 / sqrt(var + eps); every thread of the block gets them. */
__device__ static void row_stats(const float *x, int64_t d, double eps, double *mean, double *inv) {
  double s = 0;
  PD_GPU_FOR_COLS(k, d) s += x[k];
  double m = pd_block_sum(s) / (double)d;
  double q = 0;
  PD_GPU_FOR_COLS(k, d) {
    double v = x[k] - m;
    q += v * v;
  }
  *mean = m;
  *inv = 1 / sqrt(pd_block_sum(q) / (double)d + eps);
}

static __global__ void ln_fwd(pd_ln_dims n, const float *x, const float *scale, const float *bias, float *y,
                              double eps) {
  PD_GPU_FOR_ROWS(r, n.rows) {
    const float *xr = x + r * n.d;
    float *yr = y + r * n.d;
    double mean, inv;
    row_stats(xr, n.d, eps, &mean, &inv);
    PD_GPU_FOR_COLS(k, n.d) {
      double v = (xr[k] - mean) * inv;
      if (scale) v *= scale[k];
      if (bias) v += bias[k];
      yr[k] = (float)v;
    }
  }
}

static __global__ void ln_bwd_rows(pd_ln_dims n, const float *x, const float *scale, const float *dy, float *dx,
                                   double *stats, double eps) {
  PD_GPU_FOR_ROWS(r, n.rows) {
    const float *xr = x + r * n.d, *dyr = dy + r * n.d;
    double mean, inv;
    row_stats(xr, n.d, eps, &mean, &inv);
    if (threadIdx.x == 0) stats[2 * r] = mean, stats[2 * r + 1] = inv;
    if (!dx) continue; /* the same for every thread of the block */
    double sg = 0, sgx = 0;
    PD_GPU_FOR_COLS(k, n.d) {
      double g = scale ? (double)dyr[k] * scale[k] : dyr[k];
      sg += g;
      sgx += g * ((xr[k] - mean) * inv);
    }
    sg = pd_block_sum(sg);
    sgx = pd_block_sum(sgx);
    PD_GPU_FOR_COLS(k, n.d) {
      double g = scale ? (double)dyr[k] * scale[k] : dyr[k];
      dx[r * n.d + k] = (float)pd_ln_grad(g, (xr[k] - mean) * inv, inv, sg, sgx, (double)n.d);
    }
  }
}

static __global__ void ln_bwd_cols(pd_ln_dims n, const float *x, const float *dy, const double *stats, float *dscale,
                                   float *dbias) {
  PD_GPU_FOR(k, n.d) {
    double a = 0, b = 0;
    for (int64_t r = 0; r < n.rows; r++) {
      double g = dy[r * n.d + k];
      a += g * ((x[r * n.d + k] - stats[2 * r]) * stats[2 * r + 1]);
      b += g;
    }
    if (dscale) dscale[k] = (float)a;
    if (dbias) dbias[k] = (float)b;
  }
}

/* X as [rows, d] (layer_norm.c's dims_of, repeated: the axis from the attribute). */
static pd_ln_dims dims_of(pd_ctx *c, const pd_tensor *x) {
  int64_t a = pd_attr_i(c, A_AXIS);
  if (a < 0) a += x->ndim;
  pd_ln_dims r = {1, 1};
  for (int i = 0; i < x->ndim; i++) *(i < a ? &r.rows : &r.d) *= x->dims[i];
  return r;
}

extern "C" pd_status pd_gpu_layer_norm_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  pd_ln_dims n = dims_of(c, x);
  if (n.d == 0) return PD_OK;
  return PD_GPU_LAUNCH_ROWS(c, n.rows, ln_fwd, n, PD_DATA(x, float), pd_gpu_f32(pd_in(c, SCALE)),
                            pd_gpu_f32(pd_in(c, BIAS)), PD_DATA(pd_out(c, Y), float), pd_attr_f(c, A_EPSILON));
}

extern "C" pd_status pd_gpu_layer_norm_bwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, G_X);
  pd_tensor *dx = pd_out(c, G_DX), *ds = pd_out(c, G_DSCALE), *db = pd_out(c, G_DBIAS);
  pd_ln_dims n = dims_of(c, x);
  if (n.d == 0 || n.rows == 0) return PD_OK;
  double *stats = (double *)pd_gpu_work(c, 0, (size_t)(2 * n.rows) * sizeof(double));
  if (!stats) return PD_ERR_RUNTIME;
  const float *xp = PD_DATA(x, float), *dy = PD_DATA(pd_in(c, G_DY), float);
  pd_status st = PD_GPU_LAUNCH_ROWS(c, n.rows, ln_bwd_rows, n, xp, pd_gpu_f32(pd_in(c, G_SCALE)), dy, pd_gpu_f32(dx),
                                    stats, pd_attr_f(c, A_EPSILON));
  if (st || (!ds && !db)) return st;
  return PD_GPU_LAUNCH_N(c, n.d, ln_bwd_cols, n, xp, dy, stats, pd_gpu_f32(ds), pd_gpu_f32(db));
}
