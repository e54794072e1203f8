/* softmax_with_cross_entropy.cu — GPU kernels, one block per row: max, sum
 * of exp(z - max) (pd_block_row_sumexp, as softmax's: a NaN in the row
 * makes it all NaN, as on the CPU) and (soft labels) the label mass and
 * loss by fixed-order block reductions; the per-element terms are kmath.h's
 * pd_swce_*. A label outside [0, C), which the CPU kernel reports, is never
 * read through: its row's loss and gradient are NaN, and the lowest such
 * row raises the fault record (fault.h) that the runner's next fetch
 * reports with the CPU kernel's message. */
#include "gpu_common.cuh"
#include "softmax_with_cross_entropy.h"

static __global__ void swce_fwd(const float *z, const int64_t *label, const float *soft, float *s, float *loss,
                                int64_t n, int64_t k, int64_t per_row, pd_gpu_fault *fault, unsigned long long op) {
  int64_t bad = INT64_MAX;
  PD_GPU_FOR_ROWS(i, n) {
    const float *zr = z + i * k;
    float *sr = s + i * k;
    float m, sum = pd_block_row_sumexp(zr, k, &m), log_sum = logf(sum), inv = 1 / sum;
    PD_GPU_FOR_COLS(j, k) sr[j] = expf(zr[j] - m) * inv;
    if (soft) {
      float acc = 0;
      PD_GPU_FOR_COLS(j, k) acc += soft[i * k + j] * pd_swce_term_float(m, zr[j], log_sum);
      acc = pd_block_sum(acc);
      if (threadIdx.x == 0) loss[i] = acc;
    } else if (threadIdx.x == 0) {
      int64_t l = label[i];
      bool ok = l >= 0 && l < k;
      loss[i] = ok ? pd_swce_term_float(m, zr[l], log_sum) : NAN;
      if (!ok && i < bad) bad = i;
    }
  }
  if (!soft) pd_gpu_raise_label(fault, op, LABEL, label, bad, k, per_row);
}

static __global__ void swce_bwd(const float *s, const int64_t *label, const float *soft, const float *ds,
                                const float *dloss, float *dz, int64_t n, int64_t k, int64_t per_row,
                                pd_gpu_fault *fault, unsigned long long op) {
  int64_t bad = INT64_MAX;
  PD_GPU_FOR_ROWS(i, n) {
    const float *sr = s + i * k;
    float *dzr = dz + i * k;
    float g = dloss ? dloss[i] : 0, mass = 0, dot = 0;
    if (soft) {
      float a = 0;
      PD_GPU_FOR_COLS(j, k) a += soft[i * k + j];
      mass = pd_block_sum(a);
    }
    if (ds) {
      float a = 0;
      PD_GPU_FOR_COLS(j, k) a += ds[i * k + j] * sr[j];
      dot = pd_block_sum(a);
    }
    int64_t l = soft ? 0 : label[i];
    bool ok = soft || (l >= 0 && l < k);
    if (!ok && i < bad) bad = i;
    PD_GPU_FOR_COLS(j, k) {
      float v =
          soft ? pd_swce_soft_grad_float(sr[j], soft[i * k + j], mass, g) : pd_swce_hard_grad_float(sr[j], g, j == l);
      if (ds) v += pd_softmax_grad_float(sr[j], ds[i * k + j], dot);
      dzr[j] = ok ? v : NAN;
    }
  }
  if (!soft) pd_gpu_raise_label(fault, op, G_LABEL, label, bad, k, per_row);
}

/* For Logits [batch, time, ..., C] the CPU's message names the batch row and the position in it
 * (softmax_with_cross_entropy.c's check_range): the rows per batch entry, else 0. */
static int64_t rows_per_entry(const pd_tensor *z, int64_t rows) {
  return z->ndim == 2 ? 0 : z->dims[0] > 0 ? rows / z->dims[0] : 1;
}

extern "C" pd_status pd_gpu_softmax_with_cross_entropy_fwd(pd_ctx *c) {
  pd_tensor *zt = pd_in(c, LOGITS), *lt = pd_in(c, LABEL);
  int64_t k = zt->dims[zt->ndim - 1], n = k ? pd_tensor_numel(zt) / k : 0; /* [..., C] as rows */
  bool soft = pd_attr_b(c, A_SOFT);
  return PD_GPU_LAUNCH_ROWS(c, n, swce_fwd, PD_DATA(zt, float), soft ? NULL : PD_DATA(lt, int64_t),
                            soft ? PD_DATA(lt, float) : NULL, PD_DATA(pd_out(c, SOFTMAX), float),
                            PD_DATA(pd_out(c, LOSS), float), n, k, rows_per_entry(zt, n), pd_gpu_fault_record(c),
                            (unsigned long long)(uintptr_t)c->op);
}

/* Grad op slots: inputs Logits Label Softmax Loss dSoftmax dLoss, output dLogits. */
extern "C" pd_status pd_gpu_softmax_with_cross_entropy_bwd(pd_ctx *c) {
  pd_tensor *st = pd_in(c, G_SOFTMAX), *lt = pd_in(c, G_LABEL), *dz = pd_out(c, G_DLOGITS);
  if (!dz) return PD_OK;
  int64_t k = st->dims[st->ndim - 1], n = k ? pd_tensor_numel(st) / k : 0;
  bool soft = pd_attr_b(c, A_SOFT);
  return PD_GPU_LAUNCH_ROWS(c, n, swce_bwd, PD_DATA(st, float), soft ? NULL : PD_DATA(lt, int64_t),
                            soft ? PD_DATA(lt, float) : NULL, pd_gpu_f32(pd_in(c, G_DSOFTMAX)),
                            pd_gpu_f32(pd_in(c, G_DLOSS)), PD_DATA(dz, float), n, k, rows_per_entry(st, n),
                            pd_gpu_fault_record(c), (unsigned long long)(uintptr_t)c->op);
}
