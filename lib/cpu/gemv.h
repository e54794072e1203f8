/* gemv.h — the one-row float product on AVX-512 or AVX2 with FMA (gemv.c). */
#ifndef PD_GEMV_H
#define PD_GEMV_H

#include <stdbool.h>
#include <stdint.h>

/* c[0:n] = alpha x B + beta c for one row x (element i at x[i incx]) and
 * B [k, n] with row stride ldb, in float on AVX-512 or else AVX2 with FMA;
 * false, with nothing done, where the CPU has neither (or the build is not
 * for x86). Each call walks B in the
 * opposite direction to the thread's previous one (to start where the last
 * left the cache); the result is the same bits either way. beta 0: c is not
 * read. */
bool pd_gemv_rows_float(int64_t n, int64_t k, float alpha, const float *x, int64_t incx, const float *b, int64_t ldb,
                        float beta, float *c);

/* c[j] = alpha B[j, :] x + beta c[j] for j < n: B [n, k] with row stride
 * ldb, x contiguous; the same terms as pd_gemv_rows_float (float,
 * AVX-512 or AVX2, false where the CPU has neither). Each row's sum is the same bits
 * whichever way the walk goes. */
bool pd_gemv_dots_float(int64_t n, int64_t k, float alpha, const float *x, const float *b, int64_t ldb, float beta,
                        float *c);

#endif
