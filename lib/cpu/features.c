/* features.c — CPU features, asked of the CPU once. */
#include "cpu/features.h"

#include <stdlib.h>
#include <string.h>

#include "base/arch.h"

bool pd_cpu_avx512f(void) {
  static int have = -1; /* -1: not asked yet */
  int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
  if (h < 0) {
    const char *env = getenv("PADDLE_RUN_AVX512");
#ifdef PD_X86
    __builtin_cpu_init();
    h = __builtin_cpu_supports("avx512f") && !(env && strcmp(env, "off") == 0) ? 1 : 0;
#else
    (void)env;
    h = 0;
#endif
    __atomic_store_n(&have, h, __ATOMIC_RELAXED);
  }
  return h;
}

bool pd_cpu_avx2_fma(void) {
  static int have = -1; /* -1: not asked yet */
  int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
  if (h < 0) {
#ifdef PD_X86
    __builtin_cpu_init();
    h = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    h = 0;
#endif
    __atomic_store_n(&have, h, __ATOMIC_RELAXED);
  }
  return h;
}
