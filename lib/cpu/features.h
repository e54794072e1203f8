/* features.h — what the CPU this process runs on can do. */
#ifndef PD_FEATURES_H
#define PD_FEATURES_H

#include <stdbool.h>

/* Whether the CPU runs AVX-512F (the float kernels written for it check
 * this and fall back where it is false). Asked once, then cached.
 * PADDLE_RUN_AVX512=off says no (the tests run the fallbacks so). */
bool pd_cpu_avx512f(void);

/* Whether the CPU runs AVX2 with FMA (the 8-float kernels). Cached. */
bool pd_cpu_avx2_fma(void);

#endif
