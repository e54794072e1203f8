/* allreduce.cu — the GPU kernel of allreduce (float32): the CPU kernel's
 * row-weighted mean with NCCL. Each X times this rank's row count (zeros for
 * a rank without rows) is packed into one fused device buffer, summed over
 * the ranks by one ncclAllReduce on the run's stream, and each Out is its
 * part divided by the total rows. The row counts and stop requests are host
 * values: they go through MPI on the host (pd_dist_allreduce_sum), as on the
 * CPU, before the NCCL call, so nothing waits for the device. A runner on
 * more than one rank never captures a CUDA graph (gpu.c), since this host
 * part must run every step. Under mpirun it runs with NCCL even on one rank
 * (train.c); otherwise one rank copies X. */
#include "allreduce.h"
#include "gpu_common.cuh"
#include "gpu_ops.h"
#include "dist/gpunccl.h"
#include "dist/dist.h"

static __global__ void pack_k(const float *x, float *buf, float w, int64_t n) {
  PD_GPU_FOR(i, n) buf[i] = w == 0 ? 0.0f : x[i] * w;
}

static __global__ void unpack_k(const float *buf, float *out, float total, int64_t n) {
  PD_GPU_FOR(i, n) out[i] = buf[i] / total;
}

extern "C" pd_status pd_gpu_allreduce_fwd(pd_ctx *c) {
  int n = pd_in_count(c, X);
  if (!pd_nccl_ready()) { /* one rank without NCCL: the mean is X itself */
    for (int i = 0; i < n; i++) {
      const pd_tensor *xt = pd_in_at(c, X, i);
      float *out = PD_DATA(pd_out_at(c, OUT, i), float);
      pd_status st = out == PD_DATA(xt, float)
                         ? PD_OK
                         : pd_gpu_copy(c, out, PD_DATA(xt, float), sizeof(float) * (size_t)pd_tensor_numel(xt));
      if (st) return st;
    }
    return PD_OK;
  }
  int64_t len = 0;
  for (int i = 0; i < n; i++) len += pd_tensor_numel(pd_in_at(c, X, i));
  float *buf = (float *)pd_gpu_work(c, 0, sizeof(float) * (size_t)(len > 0 ? len : 1));
  if (!buf) return PD_ERR_RUNTIME;
  /* the rows and stop requests of every rank, on the host as on the CPU */
  float w = (float)pd_dist_local_rows(), meta[2] = {w, pd_dist_local_stop() ? 1.0f : 0.0f};
  pd_status st = pd_dist_allreduce_sum(meta, 2, PD_F32, "the row counts' allreduce", c->err);
  if (st) return st;
  float total = meta[0];
  pd_dist_set_global_stop(meta[1] > 0);
  if (!(total > 0)) return pd_ctx_fail(c, PD_ERR_RUNTIME, "no rank held a row of the batch");
  int64_t k = 0;
  for (int i = 0; i < n && !st; i++) {
    const pd_tensor *xt = pd_in_at(c, X, i);
    int64_t m = pd_tensor_numel(xt);
    st = PD_GPU_LAUNCH_N(c, m, pack_k, PD_DATA(xt, float), buf + k, w, m);
    k += m;
  }
  if (!st && len > 0) st = pd_nccl_allreduce_f32(buf, (size_t)len, pd_gpu_stream(c), c->err);
  k = 0;
  for (int i = 0; i < n && !st; i++) {
    int64_t m = pd_tensor_numel(pd_in_at(c, X, i));
    st = PD_GPU_LAUNCH_N(c, m, unpack_k, buf + k, PD_DATA(pd_out_at(c, OUT, i), float), total, m);
    k += m;
  }
  return st;
}
