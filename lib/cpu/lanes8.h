/* lanes8.h — the AVX2 lane mask the float kernels' tails share (x86 only;
 * include inside #ifdef PD_X86, from a function compiled for AVX2). */
#ifndef PD_LANES8_H
#define PD_LANES8_H

#include <immintrin.h>
#include <stdint.h>

/* the lanes below w of 8 as a mask for maskload / maskstore (w <= 0: none, w >= 8: all) */
__attribute__((target("avx2"))) static inline __m256i pd_lanes_below8(int64_t w) {
  int n = w < 0 ? 0 : w > 8 ? 8 : (int)w;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#endif
