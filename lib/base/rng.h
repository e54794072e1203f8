/* rng.h — the random numbers of random ops and initialisers: a splitmix64
 * stream, which is counter-based: the i-th number of the stream that starts
 * at state s is mix(s + (i + 1) G). So a GPU thread draws element i directly
 * (pd_rng_uniform_at) and gets the very number the CPU's sequential loop
 * (pd_rng_uniform) gets; the functions are PD_HD, built by both compilers.
 * Included at the end of op.h. */
#ifndef PD_RNG_H
#define PD_RNG_H

#include <math.h>
#include <stdint.h>

#include "base/hostdev.h"

#define PD_RNG_GOLDEN 0x9e3779b97f4a7c15ull

/* splitmix64's output function. */
PD_HD uint64_t pd_rng_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/* Number i (from 0) of the stream starting at state s. */
PD_HD uint64_t pd_rng_at(uint64_t s, uint64_t i) { return pd_rng_mix(s + (i + 1) * PD_RNG_GOLDEN); }
/* Uniform in [0, 1) with 53 random bits, from number i. */
PD_HD double pd_rng_uniform_at(uint64_t s, uint64_t i) { return (double)(pd_rng_at(s, i) >> 11) * 0x1.0p-53; }
/* Standard normal value i: Box-Muller on numbers 2i and 2i+1 (two uniforms
 * per value, so value i needs no state). */
PD_HD double pd_rng_gaussian_at(uint64_t s, uint64_t i) {
  double u1 = pd_rng_uniform_at(s, 2 * i), u2 = pd_rng_uniform_at(s, 2 * i + 1);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* The state of the stream of op `op` at training step `step` of a run with
 * seed `seed` (pd_ctx_rng_seed): each mixing step is written out, so its
 * order of evaluation is fixed (what gcc computed for the former
 * `h ^= pd_rng_next(&h) + ...`, whose order C leaves unspecified). */
PD_HD uint64_t pd_rng_op_seed(uint64_t seed, uint64_t op, uint64_t step) {
  uint64_t h = seed ^ 0x5851f42d4c957f2dull;
  uint64_t r = pd_rng_at(h, 0);
  h = (h + PD_RNG_GOLDEN) ^ (r + op * PD_RNG_GOLDEN);
  r = pd_rng_at(h, 0);
  h = (h + PD_RNG_GOLDEN) ^ (r + step);
  return pd_rng_at(h, 0);
}

/* The same stream drawn sequentially: each call takes the next number. */
static inline uint64_t pd_rng_next(uint64_t *s) {
  uint64_t z = pd_rng_at(*s, 0);
  *s += PD_RNG_GOLDEN;
  return z;
}
/* Uniform in [0, 1) with 53 random bits. */
static inline double pd_rng_uniform(uint64_t *s) { return (double)(pd_rng_next(s) >> 11) * 0x1.0p-53; }
/* Standard normal; takes two numbers. */
static inline double pd_rng_gaussian(uint64_t *s) {
  double v = pd_rng_gaussian_at(*s, 0);
  *s += 2 * PD_RNG_GOLDEN;
  return v;
}

#endif
