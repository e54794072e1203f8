/* allreduce.c — data parallelism as an op: the mean over ranks of each
 * gradient, weighted by the rows each rank held in this step, so that N
 * ranks step exactly like one process with their combined batch (each rank's
 * loss is the mean over its rows; the global mean is the row-weighted mean
 * of those). All X go in one fused buffer, one collective per step, with
 * two more elements: the rank's row count and its stop request (SIGINT or
 * SIGTERM), so every rank learns in the same step that one wants to stop.
 * Where all ranks run on one machine the buffer is this rank's slot of
 * memory they share (dist.h): each rank fills its own, they meet, and each
 * sums all slots itself, in rank order (the same bits on every rank);
 * elsewhere it is summed by MPI's allreduce.
 * AddOptimizerOps puts it before the update ops when training on more than
 * one rank; on a single rank it leaves X as it is. No gradient. */
#include <string.h>

#include "dist.h"
#include "gpu_ops.h"
#include "optim.h"

enum { X, N_IN };
enum { OUT, N_OUT };

static const pd_slot_def inputs[] = {
    {"X", "the gradients of this rank, of one float dtype", PD_SLOT_DUPLICABLE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    {"Out", "the means over all ranks, one per X in the same order; usually the X variables themselves",
     PD_SLOT_DUPLICABLE},
};

/* The fused buffer: op scratch work[0], grown once and kept. */
static void *fused(pd_ctx *c, pd_dtype dt, int64_t n, pd_status *st) {
  pd_tensor *t = &c->op->work[0];
  t->dtype = dt;
  *st = pd_tensor_set_dims(t, 1, &n, c->err);
  if (!*st) *st = pd_ctx_alloc(c, t);
  return *st ? NULL : pd_tensor_data(t);
}

/* X times this rank's row count w (zeros for a rank without rows this
 * step: X was not computed), then w and the stop request, into buf. */
#define ALLREDUCE(T, DT)                                                                                 \
  static int64_t pack_##T(pd_ctx *c, T *buf) {                                                           \
    const T w = (T)pd_dist_local_rows();                                                                 \
    int64_t k = 0;                                                                                       \
    for (int i = 0; i < pd_in_count(c, X); i++) {                                                        \
      const pd_tensor *xt = pd_in_at(c, X, i);                                                           \
      const T *x = PD_DATA(xt, T);                                                                       \
      int64_t m = pd_tensor_numel(xt);                                                                   \
      if (w == 0)                                                                                        \
        memset(buf + k, 0, sizeof(T) * (size_t)m);                                                       \
      else                                                                                               \
        for (int64_t j = 0; j < m; j++) buf[k + j] = x[j] * w;                                           \
      k += m;                                                                                            \
    }                                                                                                    \
    buf[k] = w, buf[k + 1] = pd_dist_local_stop() ? 1 : 0;                                               \
    return k;                                                                                            \
  }                                                                                                      \
                                                                                                         \
  /* Out = the sum over the ranks' buffers (in rank order) / the total rows;                             \
   * with one buffer, one that already holds the sum. With two, this rank's                              \
   * part (bufs[me], unless me < 0) is taken as X * w again rather than read                             \
   * back from its buffer: the same floats, one pass of reading fewer. */                                \
  static pd_status unpack_##T(pd_ctx *c, T *const *bufs, int nbufs, int me, int64_t k) {                 \
    const T w = (T)pd_dist_local_rows();                                                                 \
    T total = 0, stop = 0;                                                                               \
    for (int r = 0; r < nbufs; r++) total += bufs[r][k], stop += bufs[r][k + 1];                         \
    pd_dist_set_global_stop(stop > 0);                                                                   \
    if (!(total > 0)) return pd_ctx_fail(c, PD_ERR_RUNTIME, "no rank held a row of the batch");          \
    k = 0;                                                                                               \
    for (int i = 0; i < pd_in_count(c, X); i++) {                                                        \
      T *out = PD_DATA(pd_out_at(c, OUT, i), T);                                                         \
      int64_t m = pd_tensor_numel(pd_in_at(c, X, i));                                                    \
      if (nbufs == 1) {                                                                                  \
        const T *b0 = bufs[0] + k;                                                                       \
        for (int64_t j = 0; j < m; j++) out[j] = b0[j] / total;                                          \
      } else if (nbufs == 2 && me >= 0 && w != 0) {                                                      \
        const T *x = PD_DATA(pd_in_at(c, X, i), T), *o = bufs[1 - me] + k;                               \
        if (me == 0)                                                                                     \
          for (int64_t j = 0; j < m; j++) out[j] = (x[j] * w + o[j]) / total;                            \
        else                                                                                             \
          for (int64_t j = 0; j < m; j++) out[j] = (o[j] + x[j] * w) / total;                            \
      } else if (nbufs == 2) {                                                                           \
        const T *b0 = bufs[0] + k, *b1 = bufs[1] + k;                                                    \
        for (int64_t j = 0; j < m; j++) out[j] = (b0[j] + b1[j]) / total;                                \
      } else {                                                                                           \
        for (int64_t j = 0; j < m; j++) {                                                                \
          T s = bufs[0][k + j];                                                                          \
          for (int r = 1; r < nbufs; r++) s += bufs[r][k + j];                                           \
          out[j] = s / total;                                                                            \
        }                                                                                                \
      }                                                                                                  \
      k += m;                                                                                            \
    }                                                                                                    \
    return PD_OK;                                                                                        \
  }                                                                                                      \
                                                                                                         \
  static pd_status forward_##T(pd_ctx *c) {                                                              \
    int n = pd_in_count(c, X);                                                                           \
    if (pd_dist_size() == 1) { /* the mean over one rank: X itself */                                    \
      for (int i = 0; i < n; i++) {                                                                      \
        const pd_tensor *xt = pd_in_at(c, X, i);                                                         \
        T *out = PD_DATA(pd_out_at(c, OUT, i), T);                                                       \
        if (out != PD_DATA(xt, T)) memcpy(out, PD_DATA(xt, T), sizeof(T) * (size_t)pd_tensor_numel(xt)); \
      }                                                                                                  \
      return PD_OK;                                                                                      \
    }                                                                                                    \
    int64_t len = 2;                                                                                     \
    for (int i = 0; i < n; i++) len += pd_tensor_numel(pd_in_at(c, X, i));                               \
    T *slots[PD_DIST_MAX_SHARED];                                                                        \
    pd_status st = PD_OK;                                                                                \
    if (pd_dist_size() <= PD_DIST_MAX_SHARED)                                                            \
      st = pd_dist_shared_slots((int64_t)sizeof(T) * len, (void **)slots, c->err);                       \
    else                                                                                                 \
      slots[0] = NULL;                                                                                   \
    if (st) return st;                                                                                   \
    if (slots[0]) { /* every rank's buffer readable here */                                              \
      int64_t k = pack_##T(c, slots[pd_dist_rank()]);                                                    \
      st = pd_dist_shared_wait("the gradients' allreduce", c->err);                                      \
      return st ? st : unpack_##T(c, slots, pd_dist_size(), pd_dist_rank(), k);                          \
    }                                                                                                    \
    T *buf = fused(c, DT, len, &st);                                                                     \
    if (!buf) return st;                                                                                 \
    int64_t k = pack_##T(c, buf);                                                                        \
    st = pd_dist_allreduce_sum(buf, len, DT, "the gradients' allreduce", c->err);                        \
    return st ? st : unpack_##T(c, &buf, 1, -1, k);                                                      \
  }
ALLREDUCE(float, PD_F32)
ALLREDUCE(double, PD_F64)

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_allreduce_fwd),
#endif
};

const pd_op_def pd_op_allreduce = {
    .type = "allreduce",
    .comment = "Data-parallel training: each Out is the mean of its X over all MPI ranks, weighted by the rows "
               "each rank held in the step (so N ranks equal one process with the combined batch). All X travel "
               "in one fused buffer, one collective per step. On a single rank Out = X.",
    .inputs = inputs,
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .infer_shape = pd_optim_infer_list,
    .kernels = kernels,
    .n_kernels = sizeof kernels / sizeof kernels[0],
};
