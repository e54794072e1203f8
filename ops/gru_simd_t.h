/* gru_simd_t.h — the GRU cell's float gate passes on the vectors of
 * rnn_simd.h, W = PD_T(PD_RV_WIDTH) units at a time, for T = v8 and v16
 * (gru.c includes it once for each). Each function does the whole vectors
 * of units from j0 and returns the first unit it left (fewer than W before
 * the end), which the caller gives to the next width down and then to the
 * scalar gru_t.h row. Without a clip (bound at infinity) the bounding is
 * left out: it changes no value, a NaN included. */
#include "base/tmpl.h"

/* gru_rz_row's formulas */
PD_T(PD_RV_OP)
int64_t PD_T(gru_rz_cols_with)(float *restrict g, float *restrict ex, const float *restrict hp, const float *rbn,
                               float bound, int64_t H, int64_t j0, int64_t j1, int variant, const bool CLIP) {
  enum { W = PD_T(PD_RV_WIDTH) };
  typedef PD_T(pd_rv) V;
  const V b = PD_T(pd_rv_set1)(bound), nb = PD_T(pd_rv_set1)(-bound);
#define GRU_PRE(x) (CLIP ? PD_T(pd_rv_bound)(x, b, nb) : (x))
  int64_t j = j0;
  for (; j + W <= j1; j += W) {
    V r = PD_T(pd_rv_sigmoid)(GRU_PRE(PD_T(pd_rv_load)(g + j)));
    V z = PD_T(pd_rv_sigmoid)(GRU_PRE(PD_T(pd_rv_load)(g + H + j)));
    PD_T(pd_rv_store)(g + j, r), PD_T(pd_rv_store)(g + H + j, z);
    if (variant) {
      V e = PD_T(pd_rv_add)(PD_T(pd_rv_load)(ex + j), rbn ? PD_T(pd_rv_load)(rbn + j) : PD_T(pd_rv_zero)());
      PD_T(pd_rv_store)(ex + j, e);
      V an = PD_T(pd_rv_add)(PD_T(pd_rv_load)(g + 2 * H + j), PD_T(pd_rv_mul)(r, e));
      PD_T(pd_rv_store)(g + 2 * H + j, PD_T(pd_rv_tanh)(GRU_PRE(an)));
    } else
      PD_T(pd_rv_store)(ex + j, PD_T(pd_rv_mul)(r, PD_T(pd_rv_load)(hp + j)));
  }
  return j;
}

PD_T(PD_RV_TARGET)
static int64_t PD_T(gru_rz_cols)(float *restrict g, float *restrict ex, const float *restrict hp, const float *rbn,
                                 float bound, int64_t H, int64_t j0, int64_t j1, int variant) {
  return bound < INFINITY ? PD_T(gru_rz_cols_with)(g, ex, hp, rbn, bound, H, j0, j1, variant, true)
                          : PD_T(gru_rz_cols_with)(g, ex, hp, rbn, bound, H, j0, j1, variant, false);
}

/* gru_h_row's formulas (n's activation here where act_n) */
PD_T(PD_RV_OP)
int64_t PD_T(gru_h_cols_with)(float *restrict g, float *restrict h, float *restrict y, const float *restrict hp,
                              float bound, int64_t H, int64_t j0, int64_t j1, bool act_n, const bool CLIP) {
  enum { W = PD_T(PD_RV_WIDTH) };
  typedef PD_T(pd_rv) V;
  const V b = PD_T(pd_rv_set1)(bound), nb = PD_T(pd_rv_set1)(-bound), one = PD_T(pd_rv_set1)(1.0f);
  int64_t j = j0;
  for (; j + W <= j1; j += W) {
    V z = PD_T(pd_rv_load)(g + H + j), n = PD_T(pd_rv_load)(g + 2 * H + j);
    if (act_n) {
      n = PD_T(pd_rv_tanh)(GRU_PRE(n));
      PD_T(pd_rv_store)(g + 2 * H + j, n);
    }
    V hv = PD_T(pd_rv_add)(PD_T(pd_rv_mul)(PD_T(pd_rv_sub)(one, z), n), PD_T(pd_rv_mul)(z, PD_T(pd_rv_load)(hp + j)));
    PD_T(pd_rv_store)(h + j, hv), PD_T(pd_rv_store)(y + j, hv);
  }
  return j;
}
#undef GRU_PRE

PD_T(PD_RV_TARGET)
static int64_t PD_T(gru_h_cols)(float *restrict g, float *restrict h, float *restrict y, const float *restrict hp,
                                float bound, int64_t H, int64_t j0, int64_t j1, bool act_n) {
  return bound < INFINITY ? PD_T(gru_h_cols_with)(g, h, y, hp, bound, H, j0, j1, act_n, true)
                          : PD_T(gru_h_cols_with)(g, h, y, hp, bound, H, j0, j1, act_n, false);
}

/* gru_bwd_row's formulas for units j0 .. H-1. keep(a) is 0 where the clip
 * bounded a gate, as pd_rnn_keep; without a clip (CLIP false) it is 1
 * everywhere (no gate value reaches the bounds then) and left out: the
 * same bits. */
PD_T(PD_RV_OP)
int64_t PD_T(gru_bwd_cols_with)(const float *restrict g, const float *restrict hp, const float *restrict ex,
                                const float *restrict dy, float *restrict dg, float *restrict dh, float *restrict dex,
                                const float *bounds, int64_t H, int64_t j0, int variant, const bool CLIP) {
  enum { W = PD_T(PD_RV_WIDTH) };
  typedef PD_T(pd_rv) V;
  const V one = PD_T(pd_rv_set1)(1.0f);
  const V lo_s = PD_T(pd_rv_set1)(bounds[0]), hi_s = PD_T(pd_rv_set1)(bounds[1]);
  const V lo_t = PD_T(pd_rv_set1)(bounds[2]), hi_t = PD_T(pd_rv_set1)(bounds[3]);
  int64_t j = j0;
  for (; j + W <= H; j += W) {
    V r = PD_T(pd_rv_load)(g + j), z = PD_T(pd_rv_load)(g + H + j), n = PD_T(pd_rv_load)(g + 2 * H + j);
    V dhv = PD_T(pd_rv_add)(PD_T(pd_rv_load)(dh + j), PD_T(pd_rv_load)(dy + j));
    V omz = PD_T(pd_rv_sub)(one, z);
    V dnp = PD_T(pd_rv_mul)(PD_T(pd_rv_mul)(dhv, omz), PD_T(pd_rv_sub)(one, PD_T(pd_rv_mul)(n, n)));
    V dz = PD_T(pd_rv_mul)(PD_T(pd_rv_mul)(PD_T(pd_rv_mul)(dhv, PD_T(pd_rv_sub)(PD_T(pd_rv_load)(hp + j), n)), z), omz);
    if (CLIP) {
      dnp = PD_T(pd_rv_mul)(dnp, PD_T(pd_rv_keep)(n, lo_t, hi_t));
      dz = PD_T(pd_rv_mul)(dz, PD_T(pd_rv_keep)(z, lo_s, hi_s));
    }
    PD_T(pd_rv_store)(dg + H + j, dz), PD_T(pd_rv_store)(dg + 2 * H + j, dnp);
    PD_T(pd_rv_store)(dh + j, PD_T(pd_rv_mul)(dhv, z));
    if (variant) {
      V dr =
          PD_T(pd_rv_mul)(PD_T(pd_rv_mul)(PD_T(pd_rv_mul)(dnp, PD_T(pd_rv_load)(ex + j)), r), PD_T(pd_rv_sub)(one, r));
      if (CLIP) dr = PD_T(pd_rv_mul)(dr, PD_T(pd_rv_keep)(r, lo_s, hi_s));
      PD_T(pd_rv_store)(dex + j, PD_T(pd_rv_mul)(dnp, r)), PD_T(pd_rv_store)(dg + j, dr);
    } else
      PD_T(pd_rv_store)(dex + j, PD_T(pd_rv_zero)());
  }
  return j;
}

PD_T(PD_RV_TARGET)
static int64_t PD_T(gru_bwd_cols)(const float *restrict g, const float *restrict hp, const float *restrict ex,
                                  const float *restrict dy, float *restrict dg, float *restrict dh, float *restrict dex,
                                  const float *bounds, int64_t H, int64_t j0, int variant, bool clip) {
  return clip ? PD_T(gru_bwd_cols_with)(g, hp, ex, dy, dg, dh, dex, bounds, H, j0, variant, true)
              : PD_T(gru_bwd_cols_with)(g, hp, ex, dy, dg, dh, dex, bounds, H, j0, variant, false);
}
