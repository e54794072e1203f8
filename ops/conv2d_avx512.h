/* conv2d_avx512.h — what conv2d.c shares with its AVX-512 fast paths
 * (conv2d_avx512.c): the sizes of a run (geom), its scratch (plan), and the
 * paths themselves. Private to conv2d's CPU files. */
#ifndef PD_OPS_CONV2D_AVX512_H
#define PD_OPS_CONV2D_AVX512_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arch.h"
#include "base/assert.h"
#include "cpu/blas.h"
#include "kmath.h"

/* The convolution's sizes; K = Cg kh kw is the inner dimension of the
 * products, P = Ho Wo the output positions of one image. */
typedef pd_conv_geom geom;

/* The scratch of one run, for each of its `parts` (the images of the batch
 * are split among threads, each part with scratch of its own): col, the
 * column matrix [C kh kw, ld] (none for a pointwise kernel); stage, the
 * products' output [M, ld] when a chunk holds several images; pad, one
 * zero-padded image [C, H + 2 ph, W + 2 pw] when there is padding; and, in
 * backward, the part's own dFilter sum, transposed ([kg, mg] per group: see
 * conv2d_t.h), and dBias sum (part 0 sums dBias straight into it); the
 * parts' sums are added in part order, so the result is the same on every
 * run with the same thread count. */
typedef struct plan {
  int64_t nb, ld, hp, wp;
  int parts;
  bool direct;            /* the direct small-K path (conv2d.c: use_direct) */
  bool packed;            /* the packed forward (conv2d.c: use_packed) */
  pd_ukr uk;              /* its micro-kernel */
  int64_t col_n, extra_n; /* elements of work[0] and work[1] per part */
  void *col, *stage, *pad, *dw, *db, *dacc;
  float *wpack;  /* packed: Filter in micro-panels, shared by the parts */
  int64_t *offs; /* packed: each tap's offset in a padded image */
} plan;

/* The direct path's most taps per output (K) */
#define DIRECT_MAX_K 32

/* tap t = (c, i, j)'s offset in a padded image */
static inline void pd_conv2d_tap_offsets(const geom *g, const plan *pl, int64_t *off) {
  int64_t t = 0;
  for (int64_t c = 0; c < g->c; c++)
    for (int64_t i = 0; i < g->kh; i++)
      for (int64_t j = 0; j < g->kw; j++) off[t++] = (c * pl->hp + i * g->dh) * pl->wp + j * g->dw;
}

#ifdef PD_X86
/* Float only (the double kernels are for gradient checks); each needs
 * pd_cpu_avx512f(). */
void pd_conv2d_im2col_s1_avx512(const geom *g, const plan *pl, const float *xp, float *col);
void pd_conv2d_col2im_s1_avx512(const geom *g, const plan *pl, const float *col, float *acc);
void pd_conv2d_direct_forward(const geom *g, const plan *pl, const float *xp, const float *w, const float *b, float *y);
void pd_conv2d_packed_forward(const geom *g, const plan *pl, const float *xp, const float *b, float *bp, float *ct,
                              float *y);
void pd_conv2d_direct_dfilter(const geom *g, const plan *pl, const float *xp, const float *dy, float *acc);
void pd_conv2d_direct_dfilter_sum(const geom *g, const float *acc, float *dwt);
#else
/* Without x86 (-DPD_NO_X86, or another CPU) pd_cpu_avx512f() is false:
 * use_packed, use_direct and the stride-1 copies never take the AVX-512
 * paths, which are not built. */
static inline void pd_conv2d_no_avx512(int unused, ...) {
  (void)unused;
  PD_ASSERT(!"an AVX-512 path in a build without x86");
}
#define pd_conv2d_im2col_s1_avx512(...) pd_conv2d_no_avx512(0, __VA_ARGS__)
#define pd_conv2d_col2im_s1_avx512(...) pd_conv2d_no_avx512(0, __VA_ARGS__)
#define pd_conv2d_direct_forward(...) pd_conv2d_no_avx512(0, __VA_ARGS__)
#define pd_conv2d_packed_forward(...) pd_conv2d_no_avx512(0, __VA_ARGS__)
#define pd_conv2d_direct_dfilter(...) pd_conv2d_no_avx512(0, __VA_ARGS__)
#define pd_conv2d_direct_dfilter_sum(...) pd_conv2d_no_avx512(0, __VA_ARGS__)
#endif

#endif
