/* recurrent.cu — the recurrent op's own work on the GPU: the moves of rows
 * between the sequences and the step values (pd_rec_rows, recurrent.h) and
 * the check of the lengths, on the op's stream. The lengths stay in device
 * memory: a row's mask is read by the kernel, never by the host, so the op
 * queues its steps without waiting for the device. */
#include "gpu_common.cuh"
#include "gpu_ops.h"
#include "recurrent.h"

/* Element i of the launch is unit e of row r; U: the unit copied (4 bytes
 * when every address and size allows it, else 1). */
template <typename U>
static __global__ void rows_k(char *dst, const char *src, const char *alt, size_t dp, size_t sp, size_t ap, int64_t w,
                              int64_t rows, const int64_t *len, int64_t p) {
  PD_GPU_FOR(i, rows * w) {
    int64_t r = i / w, e = i % w;
    bool keep = !len || p < len[r];
    const char *s = keep ? src : alt;
    const U *sr = s ? (const U *)(s + (size_t)r * (keep ? sp : ap)) : NULL;
    ((U *)(dst + (size_t)r * dp))[e] = sr ? sr[e] : (U)0;
  }
}

static __global__ void rows_add_k(char *dst, const char *src, const char *alt, size_t dp, size_t sp, size_t ap,
                                  int64_t w, int64_t rows, const int64_t *len, int64_t p) {
  PD_GPU_FOR(i, rows * w) {
    int64_t r = i / w, e = i % w;
    bool keep = !len || p < len[r];
    const char *s = keep ? src : alt;
    if (s) ((float *)(dst + (size_t)r * dp))[e] += ((const float *)(s + (size_t)r * (keep ? sp : ap)))[e];
  }
}

static bool aligned4(const void *a, size_t n) { return (uintptr_t)a % 4 == 0 && n % 4 == 0; }

extern "C" pd_status pd_gpu_recurrent_rows(pd_ctx *c, const pd_rec_rows *m) {
  if (!m->rows || !m->width) return PD_OK;
  size_t dp = m->rows == 1 ? m->width : m->dpitch, sp = m->rows == 1 ? m->width : m->spitch,
         ap = m->rows == 1 ? m->width : m->apitch;
  char *dst = (char *)m->dst;
  const char *src = (const char *)m->src, *alt = (const char *)m->alt;
  if (m->add) {
    if (m->dtype != PD_F32) return pd_ctx_fail(c, PD_ERR_RUNTIME, "the GPU sums float32 gradients only");
    int64_t w = (int64_t)(m->width / sizeof(float));
    return PD_GPU_LAUNCH_N(c, m->rows * w, rows_add_k, dst, src, alt, dp, sp, ap, w, m->rows, m->len, m->p);
  }
  const size_t big = (size_t)1 << 30; /* the copy engine's pitches stay well inside its limits */
  if (!m->len && dp < big && sp < big) {
    if (src == dst && sp == dp) return PD_OK;
    if (!src) return pd_gpu_copy2d(c, dst, dp, NULL, 0, m->width, (size_t)m->rows);
    return pd_gpu_copy2d(c, dst, dp, src, sp, m->width, (size_t)m->rows);
  }
  bool by4 = aligned4(dst, dp) && aligned4(src, sp) && aligned4(alt, ap) && m->width % 4 == 0;
  if (by4) {
    int64_t w = (int64_t)(m->width / 4);
    return PD_GPU_LAUNCH_N(c, m->rows * w, rows_k<uint32_t>, dst, src, alt, dp, sp, ap, w, m->rows, m->len, m->p);
  }
  int64_t w = (int64_t)m->width;
  return PD_GPU_LAUNCH_N(c, m->rows * w, rows_k<uint8_t>, dst, src, alt, dp, sp, ap, w, m->rows, m->len, m->p);
}

/* A length outside [0, T] fails the op with the CPU's message, naming the
 * lowest such row (PD_GPU_FAULT_LENGTH, fault.c). */
static __global__ void lengths_k(const int64_t *len, int64_t n, int64_t T, pd_gpu_fault *f, unsigned long long op) {
  int64_t bad = INT64_MAX;
  PD_GPU_FOR(i, n) {
    if ((len[i] < 0 || len[i] > T) && i < bad) bad = i;
  }
  pd_gpu_raise_first(f, op, PD_GPU_FAULT_LENGTH, LENGTHS, len, bad, T, 0);
}

extern "C" pd_status pd_gpu_recurrent_check_lengths(pd_ctx *c, const int64_t *len, int64_t rows, int64_t T) {
  return PD_GPU_LAUNCH_N(c, rows, lengths_k, len, rows, T, pd_gpu_fault_record(c),
                         (unsigned long long)(uintptr_t)c->op);
}
