/* conv2d_avx512.c — conv2d's float fast paths for AVX-512 (conv2d.c picks
 * them when pd_cpu_avx512f() says yes): the stride-1 row copies of im2col
 * and col2im, the direct forward and dFilter for few taps, and the packed
 * forward. Not built without x86 (base/arch.h); see conv2d_avx512.h. */
#include "conv2d_avx512.h"

#ifdef PD_X86
#include <immintrin.h>

/* The first min(n, 16) lanes of a 16-float vector */
static inline __mmask16 tail_mask(int64_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

/* im2col of one padded image with stride 1: each output row's taps are one
 * run of Wo floats, moved 16 at a time; the last piece of a row's last run
 * is masked. Runs of 8 to 15 floats are moved whole: what spills past a run
 * lands in the next run, written straight after (cheaper than a masked
 * store across a cache line). */
__attribute__((target("avx512f"))) void pd_conv2d_im2col_s1_avx512(const geom *g, const plan *pl, const float *xp,
                                                                   float *col) {
  const int64_t wo = g->wo, wp = pl->wp, full = wo & ~(int64_t)15, ho = g->ho, step = g->sh * wp;
  const __mmask16 m = tail_mask(wo - full);
  for (int64_t ch = 0; ch < g->c; ch++)
    for (int64_t i = 0; i < g->kh; i++)
      for (int64_t j = 0; j < g->kw; j++, col += pl->ld) {
        const float *s = xp + (ch * pl->hp + i * g->dh) * wp + j * g->dw;
        float *d = col;
        if (wo >= 8 && wo < 16) { /* one piece a run, whole but for the last (whose spill the next run overwrites) */
          for (int64_t oh = 0; oh + 1 < ho; oh++, s += step, d += wo) _mm512_storeu_ps(d, _mm512_loadu_ps(s));
          _mm512_mask_storeu_ps(d, m, _mm512_maskz_loadu_ps(m, s));
          continue;
        }
        for (int64_t oh = 0; oh < ho; oh++, s += step, d += wo) {
          for (int64_t k = 0; k < full; k += 16) _mm512_storeu_ps(d + k, _mm512_loadu_ps(s + k));
          if (m) _mm512_mask_storeu_ps(d + full, m, _mm512_maskz_loadu_ps(m, s + full));
        }
      }
}

/* acc [C, hp, wp] += the taps of col, as conv2d_t.h's col2im (stride 1) */
__attribute__((target("avx512f"))) void pd_conv2d_col2im_s1_avx512(const geom *g, const plan *pl, const float *col,
                                                                   float *acc) {
  const int64_t wo = g->wo, wp = pl->wp, full = wo & ~(int64_t)15;
  const __mmask16 m = tail_mask(wo - full);
  for (int64_t ch = 0; ch < g->c; ch++)
    for (int64_t i = 0; i < g->kh; i++)
      for (int64_t j = 0; j < g->kw; j++, col += pl->ld) {
        float *a = acc + (ch * pl->hp + i * g->dh) * wp + j * g->dw;
        const float *s = col;
        for (int64_t oh = 0; oh < g->ho; oh++, a += g->sh * wp, s += wo) {
          for (int64_t k = 0; k < full; k += 16)
            _mm512_storeu_ps(a + k, _mm512_add_ps(_mm512_loadu_ps(a + k), _mm512_loadu_ps(s + k)));
          if (m)
            _mm512_mask_storeu_ps(
                a + full, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + full), _mm512_maskz_loadu_ps(m, s + full)));
        }
      }
}

/* The direct forward of one padded image xp into y [M, P] (conv2d.c: use_direct) */
__attribute__((target("avx512f"))) void pd_conv2d_direct_forward(const geom *g, const plan *pl, const float *xp,
                                                                 const float *w, const float *b, float *y) {
  const int64_t K = g->kg, M = g->m, wo = g->wo, P = g->p;
  int64_t off[DIRECT_MAX_K];
  pd_conv2d_tap_offsets(g, pl, off);
  for (int64_t oh = 0; oh < g->ho; oh++) {
    const float *xr = xp + oh * g->sh * pl->wp;
    for (int64_t ow = 0; ow < wo; ow += 16) {
      const __mmask16 mk = tail_mask(wo - ow);
      float *yo = y + oh * wo + ow;
      int64_t m0 = 0;
      for (; m0 + 8 <= M; m0 += 8) {
        __m512 acc[8];
#pragma GCC unroll 8
        for (int u = 0; u < 8; u++) acc[u] = _mm512_setzero_ps();
        for (int64_t t = 0; t < K; t++) {
          const __m512 xv = _mm512_maskz_loadu_ps(mk, xr + ow + off[t]);
#pragma GCC unroll 8
          for (int u = 0; u < 8; u++) acc[u] = _mm512_fmadd_ps(_mm512_set1_ps(w[(m0 + u) * K + t]), xv, acc[u]);
        }
#pragma GCC unroll 8
        for (int u = 0; u < 8; u++)
          _mm512_mask_storeu_ps(yo + (m0 + u) * P, mk, b ? _mm512_add_ps(acc[u], _mm512_set1_ps(b[m0 + u])) : acc[u]);
      }
      for (; m0 < M; m0++) {
        __m512 acc = _mm512_setzero_ps();
        for (int64_t t = 0; t < K; t++)
          acc = _mm512_fmadd_ps(_mm512_set1_ps(w[m0 * K + t]), _mm512_maskz_loadu_ps(mk, xr + ow + off[t]), acc);
        _mm512_mask_storeu_ps(yo + m0 * P, mk, b ? _mm512_add_ps(acc, _mm512_set1_ps(b[m0])) : acc);
      }
    }
  }
}

/* The packed forward of one padded image xp into y [M, P] (conv2d.c: use_packed):
 * bp holds K nr + 16 floats, ct mr nr, both 64-byte aligned. */
__attribute__((target("avx512f"))) void pd_conv2d_packed_forward(const geom *g, const plan *pl, const float *xp,
                                                                 const float *b, float *bp, float *ct, float *y) {
  const pd_ukr *uk = &pl->uk;
  const int64_t K = g->kg, M = g->m, P = g->p, wo = g->wo, mr = uk->mr, nr = uk->nr;
  const int64_t *offs = pl->offs;
  for (int64_t p0 = 0; p0 < P; p0 += nr) {
    const int64_t np = P - p0 < nr ? P - p0 : nr;
    /* the strip's positions: one run in an output row, or two (wo >= nr) */
    const int64_t oh = p0 / wo, ow = p0 % wo, n1 = wo - ow < np ? wo - ow : np;
    const int64_t pos1 = oh * g->sh * pl->wp + ow, pos2 = (oh + 1) * g->sh * pl->wp - n1; /* lane 0's address */
    const __mmask16 m1 = tail_mask(n1), m2 = (__mmask16)(tail_mask(np) & ~m1);
    for (int64_t l = 0; l < K; l++) { /* whole 16-float stores: the spill lands in the next tap's slot */
      __m512 v = _mm512_maskz_loadu_ps(m1, xp + offs[l] + pos1);
      if (m2) v = _mm512_mask_loadu_ps(v, m2, xp + offs[l] + pos2);
      _mm512_storeu_ps(bp + l * nr, v);
    }
    for (int64_t pi = 0; pi * mr < M; pi++) {
      pd_ukr_run_float(uk, K, pl->wpack + pi * K * mr, bp, ct);
      const int64_t rows = M - pi * mr < mr ? M - pi * mr : mr;
      for (int64_t i = 0; i < rows; i++) {
        const int64_t m = pi * mr + i;
        const float bm = b ? b[m] : 0;
        float *yo = y + m * P + p0;
        for (int64_t j = 0; j < np; j++) yo[j] = ct[i + j * mr] + bm;
      }
    }
  }
}

/* dFilter's lanes acc [M, K, 16] += one image's products: dy [M, P] against
 * the padded image xp (lanes beyond a row's end add 0); 8 taps of a filter at
 * a time in registers over the whole image */
__attribute__((target("avx512f"))) void pd_conv2d_direct_dfilter(const geom *g, const plan *pl, const float *xp,
                                                                 const float *dy, float *acc) {
  const int64_t K = g->kg, M = g->m, wo = g->wo, P = g->p;
  int64_t off[DIRECT_MAX_K];
  pd_conv2d_tap_offsets(g, pl, off);
  for (int64_t m = 0; m < M; m++) {
    const float *gm = dy + m * P;
    float *am = acc + m * K * 16;
    int64_t t0 = 0;
    for (; t0 + 8 <= K; t0 += 8) {
      __m512 a[8];
#pragma GCC unroll 8
      for (int u = 0; u < 8; u++) a[u] = _mm512_loadu_ps(am + (t0 + u) * 16);
      for (int64_t oh = 0; oh < g->ho; oh++) {
        const float *xr = xp + oh * g->sh * pl->wp;
        for (int64_t ow = 0; ow < wo; ow += 16) {
          const __mmask16 mk = tail_mask(wo - ow);
          const __m512 gv = _mm512_maskz_loadu_ps(mk, gm + oh * wo + ow);
#pragma GCC unroll 8
          for (int u = 0; u < 8; u++)
            a[u] = _mm512_fmadd_ps(gv, _mm512_maskz_loadu_ps(mk, xr + ow + off[t0 + u]), a[u]);
        }
      }
#pragma GCC unroll 8
      for (int u = 0; u < 8; u++) _mm512_storeu_ps(am + (t0 + u) * 16, a[u]);
    }
    for (; t0 < K; t0++) {
      __m512 a = _mm512_loadu_ps(am + t0 * 16);
      for (int64_t oh = 0; oh < g->ho; oh++) {
        const float *xr = xp + oh * g->sh * pl->wp;
        for (int64_t ow = 0; ow < wo; ow += 16) {
          const __mmask16 mk = tail_mask(wo - ow);
          a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, gm + oh * wo + ow),
                              _mm512_maskz_loadu_ps(mk, xr + ow + off[t0]), a);
        }
      }
      _mm512_storeu_ps(am + t0 * 16, a);
    }
  }
}

/* dwt [K, M] (the part's dFilter, transposed as the products' path keeps it)
 * = the lanes of acc [M, K, 16] added up */
__attribute__((target("avx512f"))) void pd_conv2d_direct_dfilter_sum(const geom *g, const float *acc, float *dwt) {
  for (int64_t m = 0; m < g->m; m++)
    for (int64_t t = 0; t < g->kg; t++)
      dwt[t * g->m + m] = _mm512_reduce_add_ps(_mm512_loadu_ps(acc + (m * g->kg + t) * 16));
}

#endif /* PD_X86 */
