/* blas.c — row-major GEMM through BLIS's typed API (strides let BLIS read
 * transposed operands in place, no copies). Small products run on one
 * thread: waking BLIS's threads costs more than they save below ~2^18
 * multiply-adds, and on a busy machine far more. */
#include "blas.h"

#include <blis.h>

#include "tensor.h"

#define PD_GEMM_SERIAL_BELOW (1 << 18)

#define GEMM(T, fn)                                                                                                    \
  void pd_gemm_##T(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t lda, const T *b,    \
                   int64_t ldb, T beta, T *c, int64_t ldc) {                                                           \
    if (m == 0 || n == 0) return;                                                                                      \
    rntm_t rntm = BLIS_RNTM_INITIALIZER;                                                                               \
    double work = (double)m * (double)n * (double)k;                                                                   \
    bli_rntm_set_num_threads(work < PD_GEMM_SERIAL_BELOW ? 1 : pd_get_threads(), &rntm);                               \
    fn(ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, k, &alpha, (T *)a, lda, \
       1, (T *)b, ldb, 1, &beta, c, ldc, 1, NULL, &rntm);                                                              \
  }
GEMM(float, bli_sgemm_ex)
GEMM(double, bli_dgemm_ex)
