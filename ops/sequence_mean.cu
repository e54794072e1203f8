/* sequence_mean.cu — GPU kernels of sequence_mean: the masked sum by the
 * deterministic whole-tensor sum of gpu_reduce.cuh, then one block counts
 * the valid steps and divides; backward one thread per element of dX. A
 * length outside [0, time] or no valid step at all, which the CPU kernel
 * reports, gives NaN and raises the fault record (fault.h) that the
 * runner's next fetch reports with the CPU kernel's message. */
#include "gpu_common.cuh"
#include "gpu_ops.h"
#include "gpu_reduce.cuh"
#include "sequence.h"
#include "sequence_mean.h"

/* X [batch, time, inner]'s element e if its step is valid, else 0. */
struct masked {
  const int64_t *len;
  int64_t time, inner;
  __device__ double operator()(int64_t e, const float *x, const float *) const {
    return !len || e / inner % time < len[e / (inner * time)] ? (double)x[e] : 0.0;
  }
};

/* The number of valid steps, summed by every block alike (batch is small
 * next to the tensor); call from all threads of a block. */
__device__ static long long valid_steps(const int64_t *len, int64_t batch, int64_t time) {
  long long s = 0;
  for (int64_t r = threadIdx.x; r < batch; r += blockDim.x) s += len ? len[r] : time;
  return pd_block_sum(s);
}

/* One block: checks the lengths (the lowest bad row raises), then Out. */
static __global__ void mean_out(const double *sum, const int64_t *len, float *out, int64_t batch, int64_t time,
                                int64_t inner, pd_gpu_fault *fault, unsigned long long op) {
  int64_t bad = INT64_MAX;
  for (int64_t r = threadIdx.x; len && r < batch; r += blockDim.x)
    if ((len[r] < 0 || len[r] > time) && r < bad) bad = r;
  long long steps = valid_steps(len, batch, time), nbad = pd_block_sum((long long)(bad != INT64_MAX));
  if (len) pd_gpu_raise_first(fault, op, PD_GPU_FAULT_LENGTH, LENGTHS, len, bad, time, 0);
  if (threadIdx.x != 0) return;
  if (nbad || steps == 0) {
    out[0] = NAN;
    if (!nbad) pd_gpu_raise(fault, op, PD_GPU_FAULT_NO_STEP, LENGTHS, 0);
    return;
  }
  out[0] = (float)(sum[0] / (double)(steps * inner));
}

/* dX = dOut / count at the valid steps, 0 past a row's length. */
static __global__ void mean_bwd(const float *dy, const int64_t *len, float *dx, int64_t batch, int64_t time,
                                int64_t inner) {
  long long steps = valid_steps(len, batch, time);
  float g = dy ? (float)((double)dy[0] / (double)(steps * inner)) : 0.f;
  PD_GPU_FOR(e, batch * time * inner) dx[e] = !len || e / inner % time < len[e / (inner * time)] ? g : 0.f;
}

static const int64_t *lengths(pd_ctx *c) {
  pd_tensor *len = pd_in(c, LENGTHS);
  return len ? PD_DATA(len, int64_t) : NULL;
}

extern "C" pd_status pd_gpu_sequence_mean_fwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  int64_t batch, time, inner;
  pd_seq_dims(x, &batch, &time, &inner);
  const int64_t *len = lengths(c);
  if (inner == 0 || (!len && batch * time == 0)) /* known here; the CPU's message */
    return pd_ctx_fail(c, PD_ERR_INPUT, "no valid step to average: %s", len ? "every length is 0" : "X is empty");
  double *sum = pd_gpu_sum_all(c, batch * time * inner, masked{len, time, inner}, PD_DATA(x, float), NULL);
  if (!sum) return PD_ERR_RUNTIME;
  mean_out<<<1, PD_GPU_THREADS, 0, pd_gpu_stream(c)>>>(sum, len, PD_DATA(pd_out(c, OUT), float), batch, time, inner,
                                                       pd_gpu_fault_record(c), (unsigned long long)(uintptr_t)c->op);
  return PD_GPU_LAUNCHED(c, "mean_out");
}

extern "C" pd_status pd_gpu_sequence_mean_bwd(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  int64_t batch, time, inner;
  pd_seq_dims(x, &batch, &time, &inner);
  return PD_GPU_LAUNCH_N(c, batch * time * inner, mean_bwd, pd_gpu_f32(pd_in(c, G_DOUT)), lengths(c),
                         PD_DATA(dx, float), batch, time, inner);
}
