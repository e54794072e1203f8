/* bench_peak.c — the machine's float32 peak per core: independent chains of
 * fused multiply-adds that never leave the registers (no loads, no stores),
 * with 256-bit AVX2 FMA and, where the CPU has it, 512-bit AVX-512, on 1 and
 * on 2 threads at once (each thread its own chains). The bench divides each
 * throughput figure by this to show how close to the hardware it runs.
 * Prints, per run, `ISA THREADS GFLOP/s-per-core` (one thread's FLOPs over
 * the wall time of all of them).
 *   bench_peak RUNS */
#define _GNU_SOURCE /* pthread_setaffinity_np */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PEAK_X86 1
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#ifdef PEAK_X86
/* More chains than FMA latency x FMA units on any x86 core (4 x 2), so
 * the units never wait for a result; 12 of the 16 ymm and 16 of the 32 zmm
 * registers leave room for the constants. */
enum { AVX2_CHAINS = 12, AVX512_CHAINS = 16 };

/* The chains are named variables, not an array, so that they stay in
 * registers at -O2 (an array lives on the stack: every FMA would wait for a
 * store and a load). */
#define CHAINS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define CHAINS12(X) CHAINS8(X) X(8) X(9) X(10) X(11)
#define CHAINS16(X) CHAINS12(X) X(12) X(13) X(14) X(15)

__attribute__((target("avx2,fma"))) static float fma_avx2(long iters) {
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
#define INIT(k) __m256 a##k = _mm256_set1_ps((float)k);
#define STEP(k) a##k = _mm256_fmadd_ps(a##k, m, c);
#define SUM(k) s = _mm256_add_ps(s, a##k);
  CHAINS12(INIT)
  for (long i = 0; i < iters; i++) {
    CHAINS12(STEP)
  }
  __m256 s = _mm256_setzero_ps();
  CHAINS12(SUM)
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
#undef INIT
#undef STEP
#undef SUM
}

__attribute__((target("avx512f"))) static float fma_avx512(long iters) {
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
#define INIT(k) __m512 a##k = _mm512_set1_ps((float)k);
#define STEP(k) a##k = _mm512_fmadd_ps(a##k, m, c);
#define SUM(k) s = _mm512_add_ps(s, a##k);
  CHAINS16(INIT)
  for (long i = 0; i < iters; i++) {
    CHAINS16(STEP)
  }
  __m512 s = _mm512_setzero_ps();
  CHAINS16(SUM)
  return _mm512_reduce_add_ps(s);
#undef INIT
#undef STEP
#undef SUM
}
#endif

typedef struct job {
  int wide; /* 512-bit */
  long iters;
  int cpu; /* the CPU to run on, -1 for anywhere */
  float sink;
} job;

/* The cpu-th CPU this process may run on, or -1. Each thread is pinned to
 * its own core: the figure is per core, and a scheduler that starts a new
 * thread beside its parent could otherwise halve it. */
static int nth_cpu(int n) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set) && n-- == 0) return c;
  return -1;
}

static void *work(void *p) {
  job *j = p;
  if (j->cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(j->cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set); /* best effort */
  }
#ifdef PEAK_X86
  j->sink = j->wide ? fma_avx512(j->iters) : fma_avx2(j->iters);
#endif
  return NULL;
}

/* seconds for `threads` threads to run `iters` iterations each, all at once */
static double timed(int wide, int threads, long iters) {
  pthread_t t[2];
  job j[2];
  double t0 = now();
  for (int i = 0; i < threads; i++) {
    j[i] = (job){wide, iters, nth_cpu(i), 0};
    if (pthread_create(&t[i], NULL, work, &j[i]) != 0) exit(1);
  }
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  double dt = now() - t0;
  if (j[0].sink == 12345.678f) printf("#\n"); /* keeps the sums live */
  return dt;
}

int main(int argc, char **argv) {
  if (argc != 2 || atoi(argv[1]) < 1) {
    fprintf(stderr, "usage: bench_peak RUNS\n");
    return 2;
  }
  int runs = atoi(argv[1]);
#ifndef PEAK_X86
  (void)runs;
  printf("# no x86 FMA loop for this architecture\n");
  return 0;
#else
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    printf("# no AVX2 FMA on this CPU\n");
    return 0;
  }
  int isas = __builtin_cpu_supports("avx512f") ? 2 : 1;
  for (int wide = 0; wide < isas; wide++) {
    const char *name = wide ? "avx512" : "avx2";
    int lanes = wide ? 16 : 8, chains = wide ? AVX512_CHAINS : AVX2_CHAINS;
    long iters = 1 << 16; /* grown until one thread's run lasts ~0.1 s */
    while (timed(wide, 1, iters) < 0.1 && iters < (1L << 40)) iters *= 2;
    printf("# %s: %d chains of %d-lane FMAs, %ld iterations a run\n", name, chains, lanes, iters);
    for (int threads = 1; threads <= 2; threads++)
      for (int r = 0; r < runs; r++) {
        double dt = timed(wide, threads, iters);
        printf("%s %d %.3f\n", name, threads, 2.0 * lanes * chains * (double)iters / dt * 1e-9);
        fflush(stdout);
      }
  }
  return 0;
#endif
}
