/* blas.c — row-major GEMM through BLIS's typed API (strides let BLIS read
 * transposed operands in place, no copies). */
#include "blas.h"

#include <blis.h>

#define GEMM(T, fn)                                                                            \
  void pd_gemm_##T(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a,   \
                   int64_t lda, const T *b, int64_t ldb, T beta, T *c, int64_t ldc) {        \
    if (m == 0 || n == 0) return;                                                              \
    fn(ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, \
       k, &alpha, (T *)a, lda, 1, (T *)b, ldb, 1, &beta, c, ldc, 1);                          \
  }
GEMM(float, bli_sgemm)
GEMM(double, bli_dgemm)
