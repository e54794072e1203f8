/* blisarch.h — the BLIS kernel set this process runs (see blisarch.c: on
 * an Intel CPU with two AVX-512 FMA units that BLIS cannot recognise,
 * paddle-run asks BLIS for its AVX-512 kernels before BLIS starts). */
#ifndef PD_BLISARCH_H
#define PD_BLISARCH_H

/* Measures the CPU, once (later calls return at once); pd_blis_arch_lock
 * calls it, so no process pays for it before its first product. */
void pd_blis_arch_choose(void);
/* The work ahead, before the first product: the mean FLOPs of a runner's
 * ops (large products take the AVX-512 kernels, small ones BLIS's AVX2
 * kernels and their small-matrix path). Ignored once BLIS has started. */
void pd_blis_arch_workload(double flops_per_op);
/* Makes the choice and starts BLIS; before BLIS's first call (blas.c). */
void pd_blis_arch_lock(void);
/* BLIS's name of the sub-configuration in use ("skx", "haswell", "zen3",
 * ...); starts BLIS if it has not started. */
const char *pd_blis_arch(void);
/* BLIS's version string. */
const char *pd_blis_version(void);
/* How it was chosen, in words. */
const char *pd_blis_arch_how(void);

#endif
