/* blas.h — the matrix products every op uses: row-major GEMM on BLIS, in
 * float and double, so a kernel body written once for T calls pd_gemm_T. */
#ifndef PD_BLAS_H
#define PD_BLAS_H

#include <stdbool.h>
#include <stdint.h>

/* C[m,n] = alpha * op(A) op(B) + beta * C, row-major; op(X) = X^T when
 * the flag is set. lda/ldb/ldc are row strides of the stored matrices. */
void pd_gemm_float(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
void pd_gemm_double(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
                    const double *b, int64_t ldb, double beta, double *c, int64_t ldc);

/* pd_gemm with an epilogue: ep(ep_arg, ...) is applied to each block of C
 * right after the block's product, by the thread that computed it (while
 * the block is still in that core's cache): rows r0 .. r0 + rows - 1 and
 * columns c0 .. c0 + cols - 1 of C, c pointing at element (r0, c0). The
 * blocks tile C; each element is in exactly one. (fc adds its bias and
 * applies its activation this way.) In the products profile an epilogue's
 * time counts as the product's. */
typedef void (*pd_gemm_epilogue)(void *ep_arg, void *c, int64_t ldc, int64_t r0, int64_t rows, int64_t c0,
                                 int64_t cols);
void pd_gemm_ep_float(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c, int64_t ldc, pd_gemm_epilogue ep,
                      void *ep_arg);
void pd_gemm_ep_double(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
                       const double *b, int64_t ldb, double beta, double *c, int64_t ldc, pd_gemm_epilogue ep,
                       void *ep_arg);

/* BLIS's float micro-kernel, for ops that pack their own operands (conv2d
 * writes its column matrix straight into the packed layout): c [mr, nr],
 * stored by columns (element (i, j) at c[i + j * mr]), = a b over k, where a
 * is a micro-panel of mr rows (element (i, l) at a[l * mr + i]) and b one of
 * nr columns (element (l, j) at b[l * nr + j]), both 64-byte aligned. Starts
 * BLIS (its kernel set chosen) if it has not started. mr and nr are
 * BLIS's packing sizes for the kernel set in use. */
typedef struct pd_ukr {
  int64_t mr, nr;
  void (*fn)(void); /* BLIS's sgemm_ukr_ft */
  void *cntx;       /* BLIS's context it came from (asked once: a call a tile costs) */
} pd_ukr;
void pd_ukr_float(pd_ukr *u);
void pd_ukr_run_float(const pd_ukr *u, int64_t k, const float *a, const float *b, float *c);
/* The same into any c: its first m <= mr rows and n <= nr columns only
 * (BLIS handles a part tile), c = a b + beta c, element (i, j) at
 * c[i * rs + j * cs]. */
void pd_ukr_run_ex_float(const pd_ukr *u, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float beta,
                         float *c, int64_t rs, int64_t cs);

/* Profile of the products (for `paddle-run time`): while on, every product
 * called outside a pd_parallel_run part adds its wall time, multiply-adds x2
 * and one call; those inside parts (a convolution's, whose threads overlap)
 * are counted in `calls_in_parts` only. Not for use from several threads'
 * own products at once. */
typedef struct pd_blas_profile {
  double seconds, flops;
  int64_t calls, calls_in_parts;
} pd_blas_profile;
void pd_blas_profile_start(void);
/* Stops counting and returns what was counted since the start. */
pd_blas_profile pd_blas_profile_stop(void);
/* Whether the profile is on, and a product done outside pd_gemm (a kernel's
 * own packed products, on pd_ukr) added to it: its wall time and FLOPs as
 * one call. */
bool pd_blas_profiling(void);
void pd_blas_profile_add(double seconds, double flops);
/* ... or one done inside a part of pd_parallel_run: counted, not timed. */
void pd_blas_profile_count_in_part(void);
double pd_blas_now(void); /* seconds, monotonic */

#endif
