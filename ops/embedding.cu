/* embedding.cu — GPU kernels of embedding. Forward: one thread per element
 * of Out. Backward, dense or row-sparse as the CPU's: the positions sorted
 * by id with CUB's stable radix sort (equal ids stay in position order),
 * then one thread per (distinct id, column) adds its dOut rows in that
 * order, the CPU kernel's sum bit for bit; the row-sparse form's index of
 * each distinct id is a scan of the first-of-id flags. An id outside
 * [0, V), which the CPU kernel reports, is never read through (its output
 * is NaN, its gradient dropped) and the lowest such position raises the
 * fault record (fault.h) that the runner's next fetch reports. */
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "embedding.h"
#include "gpu_common.cuh"
#include "gpu_ops.h"

typedef unsigned long long emb_key;

/* Positions per batch row for the message, as the CPU's check_ids. */
static int64_t per_row(const pd_tensor *ids, int64_t n) {
  return ids->ndim > 1 && ids->dims[0] > 0 ? n / ids->dims[0] : 1;
}

static __global__ void emb_fwd(const int64_t *id, const float *w, float *out, int64_t n, int64_t d, int64_t v,
                               int64_t pad, pd_gpu_fault *fault, unsigned long long op, int64_t per) {
  int64_t bad = INT64_MAX;
  PD_GPU_FOR(e, n * d) {
    int64_t i = e / d, x = id[i];
    bool ok = x >= 0 && x < v;
    out[e] = !ok ? NAN : x == pad ? 0.f : w[x * d + e % d];
    if (!ok && i < bad) bad = i;
  }
  pd_gpu_raise_first(fault, op, PD_GPU_FAULT_ID, IDS, id, bad, v, per);
}

/* The sort's input: key = the id, or V (sorted last, then skipped) for
 * padding_idx and bad ids; value = the position. */
static __global__ void emb_keys(const int64_t *id, int64_t n, int64_t v, int64_t pad, emb_key *key, int64_t *pos,
                                pd_gpu_fault *fault, unsigned long long op, int64_t per) {
  int64_t bad = INT64_MAX;
  PD_GPU_FOR(i, n) {
    int64_t x = id[i];
    bool ok = x >= 0 && x < v;
    key[i] = (emb_key)(ok && x != pad ? x : v);
    pos[i] = i;
    if (!ok && i < bad) bad = i;
  }
  pd_gpu_raise_first(fault, op, PD_GPU_FAULT_ID, G_IDS, id, bad, v, per);
}

/* Whether sorted entry k starts the run of a used id. */
__device__ static inline bool emb_head(const emb_key *key, int64_t k, emb_key v) {
  return key[k] < v && (k == 0 || key[k - 1] != key[k]);
}

static __global__ void emb_heads(const emb_key *key, int64_t n, emb_key v, int *flag) {
  PD_GPU_FOR(k, n) flag[k] = emb_head(key, k, v);
}

/* Thread (k, j) of a run's first entry k writes column j of its id's sum;
 * dense (rows NULL): at row id of dW (zeroed before); row-sparse: at entry
 * incl[k] - 1, the id in rows there, and entries from u (the number of
 * ids used) on are zero with row -1. Every element is written once. */
static __global__ void emb_grad(const emb_key *key, const int64_t *pos, const int *incl, const float *dout, int64_t n,
                                int64_t d, emb_key v, float *dw, int64_t *rows) {
  int64_t u = rows ? incl[n - 1] : 0;
  PD_GPU_FOR(e, n * d) {
    int64_t k = e / d, j = e % d;
    if (rows && k >= u) {
      dw[e] = 0;
      if (j == 0) rows[k] = -1;
    }
    if (!emb_head(key, k, v)) continue;
    float s = 0;
    for (int64_t q = k; q < n && key[q] == key[k]; q++) s += dout ? dout[pos[q] * d + j] : 0.f;
    int64_t dst = rows ? incl[k] - 1 : (int64_t)key[k];
    dw[dst * d + j] = s;
    if (rows && j == 0) rows[dst] = (int64_t)key[k];
  }
}

extern "C" pd_status pd_gpu_embedding_fwd(pd_ctx *c) {
  pd_tensor *ids = pd_in(c, IDS), *w = pd_in(c, W);
  int64_t n = pd_tensor_numel(ids), d = w->dims[1];
  return PD_GPU_LAUNCH_N(c, n * d, emb_fwd, PD_DATA(ids, int64_t), PD_DATA(w, float), PD_DATA(pd_out(c, OUT), float), n,
                         d, w->dims[0], pd_attr_i(c, A_PADDING), pd_gpu_fault_record(c),
                         (unsigned long long)(uintptr_t)c->op, per_row(ids, n));
}

/* The backward's scratch in op work slot 0, each part 256-byte aligned. */
typedef struct emb_work {
  emb_key *key_in, *key;
  int64_t *pos_in, *pos;
  int *flag, *incl;
  void *temp;
  size_t temp_bytes;
} emb_work;

static size_t align_up(size_t b) { return (b + 255) & ~(size_t)255; }

static pd_status work_of(pd_ctx *c, int64_t n, int bits, emb_work *wk) {
  size_t sort_bytes = 0, scan_bytes = 0;
  pd_status st = pd_gpu_check(c,
                              cub::DeviceRadixSort::SortPairs(NULL, sort_bytes, (const emb_key *)NULL, (emb_key *)NULL,
                                                              (const int64_t *)NULL, (int64_t *)NULL, (int)n, 0, bits,
                                                              pd_gpu_stream(c)),
                              "cub::DeviceRadixSort");
  if (!st)
    st = pd_gpu_check(
        c, cub::DeviceScan::InclusiveSum(NULL, scan_bytes, (const int *)NULL, (int *)NULL, (int)n, pd_gpu_stream(c)),
        "cub::DeviceScan");
  if (st) return st;
  size_t keys = align_up(sizeof(emb_key) * (size_t)n), poss = align_up(sizeof(int64_t) * (size_t)n),
         flags = align_up(sizeof(int) * (size_t)n);
  wk->temp_bytes = sort_bytes > scan_bytes ? sort_bytes : scan_bytes;
  char *p = (char *)pd_gpu_work(c, 0, 2 * keys + 2 * poss + 2 * flags + wk->temp_bytes + 1);
  if (!p) return PD_ERR_RUNTIME;
  wk->key_in = (emb_key *)p, wk->key = (emb_key *)(p + keys);
  wk->pos_in = (int64_t *)(p + 2 * keys), wk->pos = (int64_t *)(p + 2 * keys + poss);
  wk->flag = (int *)(p + 2 * keys + 2 * poss), wk->incl = (int *)(p + 2 * keys + 2 * poss + flags);
  wk->temp = p + 2 * keys + 2 * poss + 2 * flags;
  return PD_OK;
}

/* Grad op slots: inputs Ids W Out dOut, outputs dW and (row-sparse) its rows. */
extern "C" pd_status pd_gpu_embedding_bwd(pd_ctx *c) {
  pd_tensor *ids = pd_in(c, G_IDS), *w = pd_in(c, G_W), *dwt = pd_out(c, G_DW), *rowt = pd_out(c, G_ROWS);
  if (!dwt) return PD_OK;
  int64_t v = w->dims[0], d = w->dims[1], n = pd_tensor_numel(ids);
  float *dw = PD_DATA(dwt, float);
  int64_t *rows = rowt ? PD_DATA(rowt, int64_t) : NULL;
  pd_status st = rows ? PD_OK : pd_gpu_zero(c, dw, sizeof(float) * (size_t)(v * d));
  if (st || n == 0) return st;
  if (!pd_gpu_fits_int(n))
    return pd_ctx_fail(c, PD_ERR_RUNTIME, "%lld ids are too many for the GPU kernel's sort", (long long)n);
  int bits = 1; /* the keys are 0..V (V: skipped) */
  while (bits < 64 && ((emb_key)1 << bits) <= (emb_key)v) bits++;
  emb_work wk;
  if ((st = work_of(c, n, bits, &wk))) return st;
  cudaStream_t s = pd_gpu_stream(c);
  st = PD_GPU_LAUNCH_N(c, n, emb_keys, PD_DATA(ids, int64_t), n, v, pd_attr_i(c, A_PADDING), wk.key_in, wk.pos_in,
                       pd_gpu_fault_record(c), (unsigned long long)(uintptr_t)c->op, per_row(ids, n));
  if (!st)
    st = pd_gpu_check(c,
                      cub::DeviceRadixSort::SortPairs(wk.temp, wk.temp_bytes, wk.key_in, wk.key, wk.pos_in, wk.pos,
                                                      (int)n, 0, bits, s),
                      "cub::DeviceRadixSort");
  if (!st && rows) st = PD_GPU_LAUNCH_N(c, n, emb_heads, wk.key, n, (emb_key)v, wk.flag);
  if (!st && rows)
    st = pd_gpu_check(c, cub::DeviceScan::InclusiveSum(wk.temp, wk.temp_bytes, wk.flag, wk.incl, (int)n, s),
                      "cub::DeviceScan");
  if (!st)
    st = PD_GPU_LAUNCH_N(c, n * d, emb_grad, wk.key, wk.pos, wk.incl, pd_gpu_f32(pd_in(c, G_DOUT)), n, d, (emb_key)v,
                         dw, rows);
  return st;
}
