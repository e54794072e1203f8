/* allreduce.c — data parallelism as an op: the mean over ranks of each
 * gradient, weighted by the rows each rank held in this step, so that N
 * ranks step exactly like one process with their combined batch (each rank's
 * loss is the mean over its rows; the global mean is the row-weighted mean
 * of those): Out = (sum over ranks r, in rank order, of w_r X_r) / (sum of
 * w_r), a rank without rows (w = 0, X not computed) adding 0. With the sum
 * go the ranks' stop requests (SIGINT or SIGTERM), so every rank learns in
 * the same step that one wants to stop. Two ways:
 *
 * - Where every rank runs on one machine, the op's bind (called by the
 *   runner once the variables have storage) places every X in memory the
 *   ranks share (dist.h), at the same offsets on every rank, with the rank's
 *   row count and stop request after them. A step then needs no copy: the
 *   ranks meet; each computes the means of its share of every X's elements
 *   (1/N of them) from all ranks' X and writes them into all ranks' X; they
 *   meet again, and every rank holds the means. Each element is computed
 *   once, so every rank has the same bits.
 * - Elsewhere (ranks on several machines, PADDLE_RUN_ALLREDUCE=mpi), all
 *   w_r X_r go in one fused buffer with the row count and the stop request,
 *   summed by one MPI allreduce, and each Out is its part over the total
 *   (on 2 ranks the same bits as the shared way: a + b either way).
 *
 * AddOptimizerOps puts it before the update ops when training on more than
 * one rank; on a single rank Out = X. No gradient. The kernels are written
 * once, for any element type, in allreduce_t.h. */
#include "allreduce.h"

#include <string.h>

#include "base/tmpl.h"
#include "dist/dist.h"
#include "optim.h"

static const pd_slot_def inputs[] = {
    [X] = {"X", "the gradients of this rank, of one float dtype", PD_SLOT_DUPLICABLE | PD_SLOT_NO_GRAD},
};
static const pd_slot_def outputs[] = {
    [OUT] = {"Out", "the means over all ranks, one per X in the same order; usually the X variables themselves",
             PD_SLOT_DUPLICABLE},
};

/* The fused buffer of the MPI way: op scratch work[0], grown once and kept. */
static void *fused(pd_ctx *c, pd_dtype dt, int64_t n, pd_status *st) {
  pd_tensor *t = &c->op->work[0];
  t->dtype = dt;
  *st = pd_tensor_set_dims(t, 1, &n, c->err);
  if (!*st) *st = pd_ctx_alloc(c, t);
  return *st ? NULL : pd_tensor_data(t);
}

/* The layout of a rank's shared memory: X i at offset off(i) (64-byte
 * aligned, in order), then the row count and the stop request (two
 * elements) at header_off. */
static int64_t align64(int64_t b) { return (b + 63) / 64 * 64; }
static int64_t x_bytes(pd_ctx *c, int i) {
  const pd_tensor *t = pd_in_at(c, X, i);
  return pd_tensor_numel(t) * (int64_t)pd_dtype_size(t->dtype);
}
static int64_t header_off(pd_ctx *c) {
  int64_t off = 0;
  for (int i = 0; i < pd_in_count(c, X); i++) off = align64(off) + x_bytes(c, i);
  return align64(off);
}

/* Whether every X sits at its place in this rank's shared memory (then
 * bases holds every rank's). */
static bool placed(pd_ctx *c, char **bases) {
  if (pd_dist_size() > PD_DIST_MAX_SHARED || !pd_dist_shared_bases((void **)bases)) return false;
  int64_t off = 0;
  for (int i = 0; i < pd_in_count(c, X); i++) {
    off = align64(off);
    if ((char *)pd_tensor_data(pd_in_at(c, X, i)) != bases[pd_dist_rank()] + off) return false;
    off += x_bytes(c, i);
  }
  return true;
}

/* The runner's call (op.h): puts every X in the shared memory, once. */
static pd_status bind(pd_ctx *c) {
  if (pd_dist_size() == 1 || pd_dist_size() > PD_DIST_MAX_SHARED) return PD_OK;
  char *bases[PD_DIST_MAX_SHARED];
  if (placed(c, bases)) return PD_OK;
  pd_status st = pd_dist_shared_region(header_off(c) + 64, (void **)bases, c->err);
  if (st || !bases[0]) return st;
  int64_t off = 0;
  for (int i = 0; i < pd_in_count(c, X) && !st; i++) {
    off = align64(off);
    st = pd_tensor_borrow(pd_in_at(c, X, i), bases[pd_dist_rank()] + off, (size_t)x_bytes(c, i), c->err);
    off += x_bytes(c, i);
  }
  return st;
}

/* Each Out that is not its X takes X's values (on one rank, and after the
 * shared way, which averages in X). */
static void out_from_x(pd_ctx *c) {
  for (int i = 0; i < pd_in_count(c, X); i++) {
    const pd_tensor *xt = pd_in_at(c, X, i);
    void *out = pd_tensor_data(pd_out_at(c, OUT, i));
    if (out != pd_tensor_data(xt)) memcpy(out, pd_tensor_data(xt), pd_tensor_bytes(xt));
  }
}

#define T float
#define DT PD_F32
#include "allreduce_t.h"
#undef DT
#undef T
#define T double
#define DT PD_F64
#include "allreduce_t.h"
#undef DT
#undef T

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_allreduce_fwd),
#endif
};

const pd_op_def pd_op_allreduce = {
    .type = "allreduce",
    .flags = PD_OP_COLLECTIVE,
    .comment = "Data-parallel training: each Out is the mean of its X over all MPI ranks, weighted by the rows "
               "each rank held in the step (so N ranks equal one process with the combined batch). On one "
               "machine the X live in memory the ranks share and each rank averages a share of the elements "
               "for all; between machines all X travel in one fused buffer, one MPI allreduce per step. On a "
               "single rank Out = X.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .infer_shape = pd_optim_infer_list,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .bind = bind,
};
