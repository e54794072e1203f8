/* hostdev.h — PD_HD, for the math that both the C compiler and nvcc build.
 * Here in base/ so that base code (rng.h) uses it without the GPU layer. */
#ifndef PD_HOSTDEV_H
#define PD_HOSTDEV_H

/* PD_HD marks the per-element and per-row math that both compilers build:
 * __host__ __device__ under nvcc, a plain static inline function under the
 * C compiler (so tests check it on machines without a GPU). */
#ifdef __CUDACC__
#define PD_HD __host__ __device__ static inline
#else
#define PD_HD static inline
#endif

#endif
