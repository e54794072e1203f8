/* smallgemm.h — float products too small for BLIS's packing to pay (the
 * Winograd convolution's 36 products a chunk of tiles: 32-64 rows, 32-64
 * deep, 128 columns), on AVX2 with FMA without copying either operand. */
#ifndef PD_SMALLGEMM_H
#define PD_SMALLGEMM_H

#include <stdbool.h>
#include <stdint.h>

/* C = A B for A [m, k] (element (i, p) at a[i rsa + p csa]: rsa k, csa 1
 * is A as stored, rsa 1, csa m its transpose), B [k, n] with rows ldb
 * apart and C [m, n] rows ldc apart (not read: beta 0). Each element is
 * its k products summed in order p = 0 .. k-1 with fused multiply-adds, so
 * the bits depend on neither n nor where a column sits. m a multiple of 4.
 * False, with nothing done, where it does not apply: m not a multiple of
 * 4, no AVX2 and FMA, or not x86. */
bool pd_sgemm_small(int64_t m, int64_t n, int64_t k, const float *a, int64_t rsa, int64_t csa, const float *b,
                    int64_t ldb, float *c, int64_t ldc);

/* C += A B^T for A [m, k] rows lda apart, B [n, k] rows ldb apart and C
 * [m, n] rows ldc apart, through t (room for k n floats, overwritten: B^T
 * is laid out there first). Each element is C's value with its k products
 * added in order p = 0 .. k-1 by fused multiply-adds. m a multiple of 4, n
 * of 8; false, with nothing done, otherwise or where pd_sgemm_small would
 * not run. */
bool pd_sgemm_small_nt_add(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                           float *c, int64_t ldc, float *t);

/* Whether pd_sgemm_small runs on this CPU (for m a multiple of 4). */
bool pd_sgemm_small_ok(void);

#endif
