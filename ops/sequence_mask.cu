/* sequence_mask.cu — GPU kernel of sequence_mask: one thread per element
 * of Mask, in any of its dtypes. A length outside [0, time], which the CPU
 * kernel reports, raises the fault record (fault.h) for the lowest such
 * row, which the runner's next fetch reports with the CPU kernel's
 * message. */
#include "gpu_common.cuh"
#include "gpu_ops.h"
#include "sequence_mask.h"

/* Threads walk batch * max(time, 1) indices, so that a mask of no step
 * still checks every length. */
template <typename T>
static __global__ void mask_k(const int64_t *len, T *m, int64_t batch, int64_t time, pd_gpu_fault *fault,
                              unsigned long long op) {
  int64_t bad = INT64_MAX, per = time > 0 ? time : 1;
  PD_GPU_FOR(e, batch * per) {
    int64_t r = e / per, t = e % per, l = len[r];
    if (t == 0 && (l < 0 || l > time) && r < bad) bad = r;
    if (t < time) m[r * time + t] = (T)(t < l ? 1 : 0);
  }
  pd_gpu_raise_first(fault, op, PD_GPU_FAULT_LENGTH, LENGTHS, len, bad, time, 0);
}

template <typename T> static pd_status launch(pd_ctx *c, pd_tensor *mt, int64_t batch, int64_t time) {
  int64_t n = batch * (time > 0 ? time : 1);
  return PD_GPU_LAUNCH_N(c, n, mask_k<T>, PD_DATA(pd_in(c, LENGTHS), int64_t), PD_DATA(mt, T), batch, time,
                         pd_gpu_fault_record(c), (unsigned long long)(uintptr_t)c->op);
}

extern "C" pd_status pd_gpu_sequence_mask_fwd(pd_ctx *c) {
  pd_tensor *mt = pd_out(c, MASK);
  int64_t batch = mt->dims[0], time = mt->dims[1];
  switch (mt->dtype) {
  case PD_F32:
    return launch<float>(c, mt, batch, time);
  case PD_F64:
    return launch<double>(c, mt, batch, time);
  case PD_I32:
    return launch<int32_t>(c, mt, batch, time);
  case PD_I64:
    return launch<int64_t>(c, mt, batch, time);
  case PD_U8:
    return launch<uint8_t>(c, mt, batch, time);
  default:
    return pd_ctx_fail(c, PD_ERR_INPUT, "Mask's dtype %s has no GPU kernel", pd_dtype_name(mt->dtype));
  }
}
