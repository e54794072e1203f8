/* blisarch.c — which of BLIS's kernel sets (its "sub-configuration") a
 * process uses, decided before BLIS starts.
 *
 * BLIS picks its sub-configuration when it first runs. On an Intel CPU with
 * AVX-512 it takes the AVX-512 kernels ('skx') only when it knows the CPU
 * has two AVX-512 FMA units, which it learns from the model name; a virtual
 * machine's CPU often names no model ("Intel(R) Xeon(R) Processor"), and
 * then BLIS falls back to its AVX2 kernels ('haswell'), markedly slower on
 * such a core. So where BLIS would fall back, we count the units ourselves
 * (once, just before BLIS starts: pd_blis_arch_lock): the core's rate of
 * independent 512-bit FMAs against its rate of 256-bit ones (about 2x with
 * two AVX-512 units, about 1x with one), timed for well under a millisecond.
 *
 * The AVX-512 kernels are not better for every net: BLIS 0.9 has no
 * small-matrix path for them, so small products pay for packing and set-up
 * that the AVX2 kernels' small-matrix path avoids; large ones are faster. So
 * the choice waits for the work: a runner, once it knows its shapes, passes
 * the mean FLOPs of its ops (pd_blis_arch_workload), and the AVX-512 kernels
 * are taken from PD_BLIS_BIG_OP_FLOPS an op up. The first product locks the
 * choice (pd_blis_arch_lock: BLIS starts then, reading BLIS_ARCH_TYPE, which
 * is set for it and removed again); without a workload (a test, a benchmark's
 * bare products) two units mean 'skx'. AMD's cores with AVX-512 are measured
 * the same way (Zen 4's 512-bit FMAs run at the 256-bit rate: BLIS's 'zen3'
 * stays, and measured faster there). A BLIS_ARCH_TYPE the user set is
 * obeyed, and every other CPU runs BLIS's own choice. */
#include "cpu/blisarch.h"

#include <blis.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/arch.h"

#if defined(PD_X86) && defined(__x86_64__)
#include <immintrin.h>
#define PD_PROBE_X86 1
#endif

/* Mean FLOPs of a runner's ops from which the AVX-512 kernels pay. */
#define PD_BLIS_BIG_OP_FLOPS 1e6

static const char *g_how = "BLIS's own choice";
#ifdef PD_PROBE_X86
static char g_how_buf[256];
static bool g_two;             /* two AVX-512 FMA units measured */
static double g_ratio;         /* 512-bit / 256-bit FMA rate, floats per second */
static double g_workload = -1; /* mean FLOPs an op; -1: no runner said */
static bool g_locked;          /* BLIS has started */
#endif

const char *pd_blis_arch_how(void) { return g_how; }

const char *pd_blis_version(void) { return bli_info_get_version_str(); }

const char *pd_blis_arch(void) {
  pd_blis_arch_lock();
  bli_init();
  return bli_arch_string(bli_arch_query_id());
}

#ifdef PD_PROBE_X86

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 12 independent chains of FMAs, so that latency (4 cycles) x units (2)
 * never limits the rate; the result is returned so none is optimized out. */
#define CHAINS(V, FMA, SET1, ADD)                                                                           \
  V a0 = SET1(1.0f), a1 = SET1(1.1f), a2 = SET1(1.2f), a3 = SET1(1.3f), a4 = SET1(1.4f), a5 = SET1(1.5f);   \
  V a6 = SET1(1.6f), a7 = SET1(1.7f), a8 = SET1(1.8f), a9 = SET1(1.9f), a10 = SET1(2.0f), a11 = SET1(2.1f); \
  const V m = SET1(0.999f), c = SET1(0.001f);                                                               \
  for (long i = 0; i < iters; i++) {                                                                        \
    a0 = FMA(a0, m, c), a1 = FMA(a1, m, c), a2 = FMA(a2, m, c), a3 = FMA(a3, m, c);                         \
    a4 = FMA(a4, m, c), a5 = FMA(a5, m, c), a6 = FMA(a6, m, c), a7 = FMA(a7, m, c);                         \
    a8 = FMA(a8, m, c), a9 = FMA(a9, m, c), a10 = FMA(a10, m, c), a11 = FMA(a11, m, c);                     \
  }                                                                                                         \
  V s = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7)));                                  \
  s = ADD(s, ADD(ADD(a8, a9), ADD(a10, a11)));

__attribute__((target("avx512f"))) static float fma512(long iters) {
  CHAINS(__m512, _mm512_fmadd_ps, _mm512_set1_ps, _mm512_add_ps)
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float fma256(long iters) {
  CHAINS(__m256, _mm256_fmadd_ps, _mm256_set1_ps, _mm256_add_ps)
  float v[8];
  _mm256_storeu_ps(v, s);
  return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

static volatile float g_sink;

/* The fastest of a few timings (a descheduled one only comes out slower). */
static double best_seconds(float (*f)(long), long iters, int tries) {
  double best = 1e30;
  for (int t = 0; t < tries; t++) {
    double t0 = now();
    g_sink = f(iters);
    double dt = now() - t0;
    if (dt < best) best = dt;
  }
  return best;
}

/* Whether the core does 512-bit FMAs at least 1.6x as fast, in floats per
 * second, as 256-bit ones: two AVX-512 FMA units (2x), not one (1x). */
static bool two_avx512_fma_units(double *ratio) {
  const long iters = 2000; /* 24k FMAs: ~5-10 us a timing */
  /* the upper halves of the vector units are powered up on first use and
   * run slowly for some microseconds: warm up first */
  best_seconds(fma512, 20 * iters, 1);
  double t512 = best_seconds(fma512, iters, 7), t256 = best_seconds(fma256, iters, 7);
  *ratio = t512 > 0 ? 2.0 * t256 / t512 : 0;
  return *ratio >= 1.6;
}

/* The AVX-512 subsets BLIS's 'skx' kernels use. */
static bool avx512_for_skx(void) {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
}

static void measure(void) {
  const char *set = getenv("BLIS_ARCH_TYPE");
  if (set && *set) {
    /* BLIS 0.9 reads it as a number (its arch_t): "zen3" is 0, 'skx' */
    char *end;
    strtol(set, &end, 10);
    if (*end) {
      snprintf(g_how_buf, sizeof g_how_buf,
               "BLIS_ARCH_TYPE=%.32s from the environment, which BLIS 0.9 reads as a number: a name counts as 0", set);
      g_how = g_how_buf;
    } else
      g_how = "BLIS_ARCH_TYPE from the environment";
    return;
  }
  __builtin_cpu_init();
  /* AMD's Zen 4 runs a 512-bit FMA as two 256-bit halves (ratio about 1):
   * BLIS picks its AVX2 'zen3' kernels there, and they measured faster than
   * 'skx' (1 thread, 2-core EPYC, 2026-11-25: sgemm 1024^3 104 against
   * 97 GFLOP/s, 2048^3 105 against 96; fashion_mlp's products 5% less time).
   * A core that measures two full-rate units takes 'skx' by the rule below,
   * Intel's or AMD's. */
  bool intel = __builtin_cpu_is("intel"), amd = __builtin_cpu_is("amd");
  if (!(intel || amd) || !avx512_for_skx()) return;
  g_two = two_avx512_fma_units(&g_ratio);
  if (!g_two) {
    snprintf(g_how_buf, sizeof g_how_buf,
             "BLIS's own choice; %s measured: 512-bit FMAs at %.2fx the rate of 256-bit ones",
             amd ? "AVX-512 at half width" : "one AVX-512 FMA unit", g_ratio);
    g_how = g_how_buf;
  }
}

void pd_blis_arch_workload(double flops_per_op) {
  if (!g_locked) g_workload = flops_per_op;
}

void pd_blis_arch_choose(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, measure);
}

void pd_blis_arch_lock(void) {
  if (g_locked) return;
  pd_blis_arch_choose();
  g_locked = true;
  if (!g_two) return;
  bool big = g_workload < 0 || g_workload >= PD_BLIS_BIG_OP_FLOPS;
  char size[64] = "no net's sizes given";
  if (g_workload >= 0) snprintf(size, sizeof size, "%.3g MFLOP an op", g_workload * 1e-6);
  snprintf(g_how_buf, sizeof g_how_buf,
           "%s; two AVX-512 FMA units measured (512-bit FMAs at %.2fx the rate of 256-bit ones), %s",
           big ? "chosen by paddle-run" : "BLIS's own choice kept for small products", g_ratio, size);
  g_how = g_how_buf;
  if (!big) return;
  char id[16];
  snprintf(id, sizeof id, "%d", (int)BLIS_ARCH_SKX);
  setenv("BLIS_ARCH_TYPE", id, 1);
  bli_init(); /* reads it */
  unsetenv("BLIS_ARCH_TYPE");
}

#else

void pd_blis_arch_choose(void) {}
void pd_blis_arch_workload(double flops_per_op) { (void)flops_per_op; }
void pd_blis_arch_lock(void) {}

#endif
