/* lstm_simd_t.h — the LSTM cell's float gate passes without peepholes on
 * the vectors of rnn_simd.h, W = PD_T(PD_RV_WIDTH) units at a time, for
 * T = v8 and v16 (lstm.c includes it once for each). Each function does
 * the whole vectors of units from j0 and returns the first unit it left
 * (fewer than W before the end), which the caller gives to the next width
 * down and then to the scalar lstm_row / lstm_bwd_row. */
#include "base/tmpl.h"

/* Forward, lstm_row's formulas. Two passes: the four gates of every unit
 * (independent chains of exp and division), then the cell (c, then tanh(c)
 * and h). In one pass a unit's work is one chain of ~120 cycles, longer
 * than the out-of-order window overlaps; apart, each pass's chains overlap
 * (the same operations, so the same bits). Without a clip (CLIP false) the
 * bound, at infinity, is left out: it changes no value, a NaN included. */
PD_T(PD_RV_OP)
int64_t PD_T(lstm_cols_with)(float *restrict g, float *restrict h, float *restrict c, float *restrict y,
                             const float *restrict cp, float bound, int64_t H, int64_t j0, int64_t j1,
                             const bool CLIP) {
  enum { W = PD_T(PD_RV_WIDTH) };
  typedef PD_T(pd_rv) V;
  const V b = PD_T(pd_rv_set1)(bound), nb = PD_T(pd_rv_set1)(-bound);
  const int64_t jv = j0 + (j1 - j0) / W * W;
#define LSTM_PRE(p) (CLIP ? PD_T(pd_rv_bound)(PD_T(pd_rv_load)(p), b, nb) : PD_T(pd_rv_load)(p))
  for (int64_t j = j0; j < jv; j += W) {
    PD_T(pd_rv_store)(g + j, PD_T(pd_rv_sigmoid)(LSTM_PRE(g + j)));
    PD_T(pd_rv_store)(g + H + j, PD_T(pd_rv_sigmoid)(LSTM_PRE(g + H + j)));
    PD_T(pd_rv_store)(g + 2 * H + j, PD_T(pd_rv_tanh)(LSTM_PRE(g + 2 * H + j)));
    PD_T(pd_rv_store)(g + 3 * H + j, PD_T(pd_rv_sigmoid)(LSTM_PRE(g + 3 * H + j)));
  }
#undef LSTM_PRE
  for (int64_t j = j0; j < jv; j += W) {
    V i = PD_T(pd_rv_load)(g + j), f = PD_T(pd_rv_load)(g + H + j);
    V gg = PD_T(pd_rv_load)(g + 2 * H + j), o = PD_T(pd_rv_load)(g + 3 * H + j);
    V cn = PD_T(pd_rv_fmadd)(f, PD_T(pd_rv_load)(cp + j), PD_T(pd_rv_mul)(i, gg));
    PD_T(pd_rv_store)(c + j, cn);
    V hv = PD_T(pd_rv_mul)(o, PD_T(pd_rv_tanh)(cn));
    PD_T(pd_rv_store)(h + j, hv), PD_T(pd_rv_store)(y + j, hv);
  }
  return jv;
}

PD_T(PD_RV_TARGET)
static int64_t PD_T(lstm_cols)(float *restrict g, float *restrict h, float *restrict c, float *restrict y,
                               const float *restrict cp, float bound, int64_t H, int64_t j0, int64_t j1) {
  return bound < INFINITY ? PD_T(lstm_cols_with)(g, h, c, y, cp, bound, H, j0, j1, true)
                          : PD_T(lstm_cols_with)(g, h, c, y, cp, bound, H, j0, j1, false);
}

/* Backward, lstm_bwd_row's formulas for units j0 .. H-1 (tanh(c) as the
 * forward computed it). keep(a) is 0 where the clip bounded a gate (a <= lo
 * or a >= hi), as pd_rnn_keep; without a clip (CLIP false) it is 1
 * everywhere and left out: the same bits. The next row's lines are fetched
 * as this row's go (GH, ldy: 0 for none). */
PD_T(PD_RV_OP)
int64_t PD_T(lstm_bwd_cols_with)(const float *restrict g, const float *restrict c, const float *restrict cp,
                                 const float *restrict dy, float *restrict dg, float *restrict dh, float *restrict dc,
                                 const float *bounds, int64_t H, int64_t GH, int64_t ldy, int64_t j0, const bool CLIP) {
  enum { W = PD_T(PD_RV_WIDTH) };
  typedef PD_T(pd_rv) V;
  const V one = PD_T(pd_rv_set1)(1.0f), zero = PD_T(pd_rv_zero)();
  const V lo_s = PD_T(pd_rv_set1)(bounds[0]), hi_s = PD_T(pd_rv_set1)(bounds[1]);
  const V lo_t = PD_T(pd_rv_set1)(bounds[2]), hi_t = PD_T(pd_rv_set1)(bounds[3]);
  int64_t j = j0;
  for (; j + W <= H; j += W) {
    if (!(j & 15)) { /* a line of each */
      _mm_prefetch((const char *)(g + GH + j), _MM_HINT_T0);
      _mm_prefetch((const char *)(g + GH + H + j), _MM_HINT_T0);
      _mm_prefetch((const char *)(g + GH + 2 * H + j), _MM_HINT_T0);
      _mm_prefetch((const char *)(g + GH + 3 * H + j), _MM_HINT_T0);
      _mm_prefetch((const char *)(c + (GH ? H : 0) + j), _MM_HINT_T0);
      _mm_prefetch((const char *)(cp + (GH ? H : 0) + j), _MM_HINT_T0);
      _mm_prefetch((const char *)(dy + ldy + j), _MM_HINT_T0);
      _mm_prefetch((const char *)(dg + GH + j), _MM_HINT_T0);
      _mm_prefetch((const char *)(dg + GH + H + j), _MM_HINT_T0);
      _mm_prefetch((const char *)(dg + GH + 2 * H + j), _MM_HINT_T0);
      _mm_prefetch((const char *)(dg + GH + 3 * H + j), _MM_HINT_T0);
    }
    V i = PD_T(pd_rv_load)(g + j), f = PD_T(pd_rv_load)(g + H + j);
    V gg = PD_T(pd_rv_load)(g + 2 * H + j), o = PD_T(pd_rv_load)(g + 3 * H + j);
    V tc = PD_T(pd_rv_tanh)(PD_T(pd_rv_load)(c + j)), cpv = PD_T(pd_rv_load)(cp + j);
    V dhv = PD_T(pd_rv_add)(PD_T(pd_rv_load)(dh + j), PD_T(pd_rv_load)(dy + j));
    V dao = PD_T(pd_rv_mul)(PD_T(pd_rv_mul)(dhv, tc), PD_T(pd_rv_mul)(o, PD_T(pd_rv_sub)(one, o)));
    V dcv = PD_T(pd_rv_add)(PD_T(pd_rv_load)(dc + j),
                            PD_T(pd_rv_mul)(PD_T(pd_rv_mul)(dhv, o), PD_T(pd_rv_sub)(one, PD_T(pd_rv_mul)(tc, tc))));
    V dai = PD_T(pd_rv_mul)(PD_T(pd_rv_mul)(dcv, gg), PD_T(pd_rv_mul)(i, PD_T(pd_rv_sub)(one, i)));
    V daf = PD_T(pd_rv_mul)(PD_T(pd_rv_mul)(dcv, cpv), PD_T(pd_rv_mul)(f, PD_T(pd_rv_sub)(one, f)));
    V dag = PD_T(pd_rv_mul)(PD_T(pd_rv_mul)(dcv, i), PD_T(pd_rv_sub)(one, PD_T(pd_rv_mul)(gg, gg)));
    if (CLIP) {
      dao = PD_T(pd_rv_mul)(dao, PD_T(pd_rv_keep)(o, lo_s, hi_s));
      dai = PD_T(pd_rv_mul)(dai, PD_T(pd_rv_keep)(i, lo_s, hi_s));
      daf = PD_T(pd_rv_mul)(daf, PD_T(pd_rv_keep)(f, lo_s, hi_s));
      dag = PD_T(pd_rv_mul)(dag, PD_T(pd_rv_keep)(gg, lo_t, hi_t));
    }
    PD_T(pd_rv_store)(dc + j, PD_T(pd_rv_mul)(dcv, f));
    PD_T(pd_rv_store)(dg + j, dai), PD_T(pd_rv_store)(dg + H + j, daf);
    PD_T(pd_rv_store)(dg + 2 * H + j, dag), PD_T(pd_rv_store)(dg + 3 * H + j, dao);
    PD_T(pd_rv_store)(dh + j, zero);
  }
  return j;
}

PD_T(PD_RV_TARGET)
static int64_t PD_T(lstm_bwd_cols)(const float *restrict g, const float *restrict c, const float *restrict cp,
                                   const float *restrict dy, float *restrict dg, float *restrict dh, float *restrict dc,
                                   const float *bounds, int64_t H, int64_t GH, int64_t ldy, int64_t j0, bool clip) {
  return clip ? PD_T(lstm_bwd_cols_with)(g, c, cp, dy, dg, dh, dc, bounds, H, GH, ldy, j0, true)
              : PD_T(lstm_bwd_cols_with)(g, c, cp, dy, dg, dh, dc, bounds, H, GH, ldy, j0, false);
}
