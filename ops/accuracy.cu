/* accuracy.cu — GPU kernel of accuracy: one block; each thread judges rows
 * with kmath.h's pd_acc_row_float (the CPU kernel's rule), the count is a
 * block reduction (integers: exact in any order). A label outside [0, C),
 * which the CPU kernel reports, is never read through: Accuracy becomes NaN
 * and the lowest such row raises the fault record (fault.h) that the
 * runner's next fetch reports with the CPU kernel's message. */
#include "accuracy.h"
#include "gpu_common.cuh"
#include "gpu_ops.h"

static __global__ void acc_k(const float *x, const int64_t *label, int64_t n, int64_t k, int64_t topk, float *acc,
                             int64_t *correct, int64_t *total, pd_gpu_fault *fault, unsigned long long op) {
  long long right = 0, bad = 0;
  int64_t first = INT64_MAX;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    int64_t l = label[i];
    if (l < 0 || l >= k)
      bad++, first = first < i ? first : i;
    else
      right += pd_acc_row_float(x + i * k, k, l, topk);
  }
  pd_gpu_raise_label(fault, op, LABEL, label, first, k, 0);
  right = pd_block_sum(right);
  bad = pd_block_sum(bad);
  if (threadIdx.x == 0) {
    acc[0] = bad ? NAN : (float)(n > 0 ? (double)right / (double)n : 0);
    if (correct) correct[0] = right;
    if (total) total[0] = n;
  }
}

extern "C" pd_status pd_gpu_accuracy_fwd(pd_ctx *c) {
  pd_tensor *xt = pd_in(c, SCORES), *ct = pd_out(c, CORRECT), *tt = pd_out(c, TOTAL);
  int64_t n = xt->dims[0], k = xt->dims[1];
  acc_k<<<1, PD_GPU_THREADS, 0, pd_gpu_stream(c)>>>(PD_DATA(xt, float), PD_DATA(pd_in(c, LABEL), int64_t), n, k,
                                                    pd_attr_i(c, A_K), PD_DATA(pd_out(c, ACCURACY), float),
                                                    ct ? PD_DATA(ct, int64_t) : NULL, tt ? PD_DATA(tt, int64_t) : NULL,
                                                    pd_gpu_fault_record(c), (unsigned long long)(uintptr_t)c->op);
  return PD_GPU_LAUNCHED(c, "accuracy");
}
