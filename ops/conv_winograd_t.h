/* conv_winograd_t.h — conv_winograd.c's kernels for one element type T
 * (base/tmpl.h). Tiles are numbered across the batch (image n, tile row,
 * tile column) and handled LN at a time, one lane each: every transform is
 * a chain of vector operations over LN tiles, its result stored where the
 * products read it. Per chunk of tiles:
 *   V [a a][C][ld]  = BT d BT^T of each input tile d (zeros outside the image),
 *   Z [a a][M][ld]  = U [a a][M][C] . V, one product per tile position,
 *   y               = AT Z AT^T + bias, the m x m tile clipped to the output.
 * Backward is the adjoint of the same chain: Z = AT^T dY AT, dU += Z V^T,
 * V = U^T Z, dX += BT^T V BT (tiles overlap: added), dW = G^T dU G. */

#define LN ((int)(64 / sizeof(T)))

/* out = X in X^T, or with tr X^T in X, over LN lanes; X [R, S] row-major;
 * element (i, j) of the square `in` at in[(i D + j) is + lane], of out at
 * out[(p E + q) os + lane] (D, E: the in and out sizes). */
static inline __attribute__((always_inline)) void
PD_T(wx_body)(const double *mx, int R, int S, bool tr, const T *restrict in, int64_t is, T *restrict out, int64_t os) {
  const int E = tr ? S : R, D = tr ? R : S;
  T tmp[8 * 8 * LN];
#pragma GCC unroll 8
  for (int p = 0; p < E; p++)
#pragma GCC unroll 8
    for (int j = 0; j < D; j++) {
      T acc[LN];
      for (int l = 0; l < LN; l++) acc[l] = 0;
#pragma GCC unroll 8
      for (int i = 0; i < D; i++) {
        const double cf = tr ? mx[i * S + p] : mx[p * S + i];
        if (cf == 0) continue;
        const T k = (T)cf, *v = in + (i * D + j) * is;
        for (int l = 0; l < LN; l++) acc[l] += k * v[l];
      }
      for (int l = 0; l < LN; l++) tmp[(p * D + j) * LN + l] = acc[l];
    }
#pragma GCC unroll 8
  for (int p = 0; p < E; p++)
#pragma GCC unroll 8
    for (int q = 0; q < E; q++) {
      T acc[LN];
      for (int l = 0; l < LN; l++) acc[l] = 0;
#pragma GCC unroll 8
      for (int j = 0; j < D; j++) {
        const double cf = tr ? mx[j * S + q] : mx[q * S + j];
        if (cf == 0) continue;
        const T k = (T)cf, *v = tmp + (p * D + j) * LN;
        for (int l = 0; l < LN; l++) acc[l] += k * v[l];
      }
      T *o = out + (p * E + q) * os;
      for (int l = 0; l < LN; l++) o[l] = acc[l];
    }
}

/* The 4x4-tile forms' input and output transforms written out with their
 * common terms shared (the pairs of rows for the points +-p are the sum and
 * the difference of the same even and odd parts), about a third of wx_body's
 * operations. One 1-D transform over LN lanes: y(k) = y + k ys from x(k) =
 * x + k xs, each LN lanes held as one vector (GCC splits it into the
 * target's registers). */
typedef T PD_T(vec) __attribute__((vector_size(64)));
#define V PD_T(vec)
#define XK(k)                           \
  __extension__({                       \
    V v_;                               \
    memcpy(&v_, x + (k)*xs, sizeof v_); \
    v_;                                 \
  })
#define YK(k, v)                        \
  do {                                  \
    const V v_ = (v);                   \
    memcpy(y + (k)*ys, &v_, sizeof v_); \
  } while (0)
/* BT of F(4x4, 3x3) (and F(2x2, 5x5)), 6 points, and its transpose */
static inline __attribute__((always_inline)) void PD_T(bt6)(const T *restrict x, int64_t xs, T *restrict y,
                                                            int64_t ys) {
  const V d0 = XK(0), d1 = XK(1), d2 = XK(2), d3 = XK(3), d4 = XK(4), d5 = XK(5);
  const V t1 = d4 - (T)4 * d2, t2 = d3 - (T)4 * d1, t3 = d4 - d2, t4 = (T)2 * (d3 - d1);
  YK(0, (T)4 * d0 - (T)5 * d2 + d4);
  YK(1, t1 + t2);
  YK(2, t1 - t2);
  YK(3, t3 + t4);
  YK(4, t3 - t4);
  YK(5, (T)4 * d1 - (T)5 * d3 + d5);
}
static inline __attribute__((always_inline)) void PD_T(bt6t)(const T *restrict x, int64_t xs, T *restrict y,
                                                             int64_t ys) {
  const V v0 = XK(0), v1 = XK(1), v2 = XK(2), v3 = XK(3), v4 = XK(4), v5 = XK(5);
  const V s12 = v1 + v2, d21 = v2 - v1, s34 = v3 + v4, d43 = v4 - v3;
  YK(0, (T)4 * v0);
  YK(1, (T)4 * d21 + (T)2 * d43 + (T)4 * v5);
  YK(2, -(T)5 * v0 - (T)4 * s12 - s34);
  YK(3, -(d21 + (T)2 * d43) - (T)5 * v5);
  YK(4, v0 + s12 + s34);
  YK(5, v5);
}
/* AT of F(4x4, 3x3) [4, 6] and its transpose */
static inline __attribute__((always_inline)) void PD_T(at46)(const T *restrict x, int64_t xs, T *restrict y,
                                                             int64_t ys) {
  const V s12 = XK(1) + XK(2), d12 = XK(1) - XK(2), s34 = XK(3) + XK(4), d34 = XK(3) - XK(4);
  YK(0, XK(0) + s12 + s34);
  YK(1, d12 + (T)2 * d34);
  YK(2, s12 + (T)4 * s34);
  YK(3, d12 + (T)8 * d34 + XK(5));
}
static inline __attribute__((always_inline)) void PD_T(at46t)(const T *restrict x, int64_t xs, T *restrict y,
                                                              int64_t ys) {
  const V y0 = XK(0), y1 = XK(1), y2 = XK(2), y3 = XK(3);
  const V e1 = y0 + y2, o1 = y1 + y3, e2 = y0 + (T)4 * y2, o2 = (T)2 * y1 + (T)8 * y3;
  YK(0, y0);
  YK(1, e1 + o1);
  YK(2, e1 - o1);
  YK(3, e2 + o2);
  YK(4, e2 - o2);
  YK(5, y3);
}
/* BT of F(4x4, 5x5), 8 points, and its transpose */
static inline __attribute__((always_inline)) void PD_T(bt8)(const T *restrict x, int64_t xs, T *restrict y,
                                                            int64_t ys) {
  const V d0 = XK(0), d1 = XK(1), d2 = XK(2), d3 = XK(3), d4 = XK(4), d5 = XK(5), d6 = XK(6), d7 = XK(7);
  const V e1 = d2 - (T)4.25 * d4 + d6, o1 = d1 - (T)4.25 * d3 + d5;
  const V e2 = (T)0.25 * d2 - (T)1.25 * d4 + d6, o2 = (T)0.5 * d1 - (T)2.5 * d3 + (T)2 * d5;
  const V e3 = (T)4 * d2 - (T)5 * d4 + d6, o3 = (T)2 * d1 - (T)2.5 * d3 + (T)0.5 * d5;
  YK(0, (d6 - d0) + (T)5.25 * (d2 - d4));
  YK(1, e1 + o1);
  YK(2, e1 - o1);
  YK(3, e2 + o2);
  YK(4, e2 - o2);
  YK(5, e3 + o3);
  YK(6, e3 - o3);
  YK(7, (d7 - d1) + (T)5.25 * (d3 - d5));
}
static inline __attribute__((always_inline)) void PD_T(bt8t)(const T *restrict x, int64_t xs, T *restrict y,
                                                             int64_t ys) {
  const V v0 = XK(0), v7 = XK(7);
  const V s12 = XK(1) + XK(2), d12 = XK(1) - XK(2), s34 = XK(3) + XK(4), d34 = XK(3) - XK(4);
  const V s56 = XK(5) + XK(6), d56 = XK(5) - XK(6);
  YK(0, -v0);
  YK(1, d12 + (T)0.5 * d34 + (T)2 * d56 - v7);
  YK(2, (T)5.25 * v0 + s12 + (T)0.25 * s34 + (T)4 * s56);
  YK(3, -(T)4.25 * d12 - (T)2.5 * d34 - (T)2.5 * d56 + (T)5.25 * v7);
  YK(4, -(T)5.25 * v0 - (T)4.25 * s12 - (T)1.25 * s34 - (T)5 * s56);
  YK(5, d12 + (T)2 * d34 + (T)0.5 * d56 - (T)5.25 * v7);
  YK(6, v0 + s12 + s34 + s56);
  YK(7, v7);
}
/* AT of F(4x4, 5x5) [4, 8] and its transpose */
static inline __attribute__((always_inline)) void PD_T(at48)(const T *restrict x, int64_t xs, T *restrict y,
                                                             int64_t ys) {
  const V s12 = XK(1) + XK(2), d12 = XK(1) - XK(2), s34 = XK(3) + XK(4), d34 = XK(3) - XK(4);
  const V s56 = XK(5) + XK(6), d56 = XK(5) - XK(6);
  YK(0, XK(0) + s12 + s34 + s56);
  YK(1, d12 + (T)2 * d34 + (T)0.5 * d56);
  YK(2, s12 + (T)4 * s34 + (T)0.25 * s56);
  YK(3, d12 + (T)8 * d34 + (T)0.125 * d56 + XK(7));
}
static inline __attribute__((always_inline)) void PD_T(at48t)(const T *restrict x, int64_t xs, T *restrict y,
                                                              int64_t ys) {
  const V y0 = XK(0), y1 = XK(1), y2 = XK(2), y3 = XK(3);
  const V e1 = y0 + y2, o1 = y1 + y3, e2 = y0 + (T)4 * y2, o2 = (T)2 * y1 + (T)8 * y3;
  const V e3 = y0 + (T)0.25 * y2, o3 = (T)0.5 * y1 + (T)0.125 * y3;
  YK(0, y0);
  YK(1, e1 + o1);
  YK(2, e1 - o1);
  YK(3, e2 + o2);
  YK(4, e2 - o2);
  YK(5, e3 + o3);
  YK(6, e3 - o3);
  YK(7, y3);
}
#undef XK
#undef YK
#undef V

/* out = X in X^T over LN lanes by a 1-D transform F of X [E, D]: down the
 * columns of in [D, D] into tmp [E, D], then along tmp's rows into out
 * [E, E]; element layout as wx_body's. */
#define WX_SEP_BODY(F, D, E)                                                                                   \
  do {                                                                                                         \
    T tmp[8 * 8 * LN];                                                                                         \
    _Pragma("GCC unroll 8") for (int j = 0; j < (D); j++) PD_T(F)(in + j * is, (D)*is, tmp + j * LN, (D)*LN);  \
    _Pragma("GCC unroll 8") for (int p = 0; p < (E); p++) PD_T(F)(tmp + p * (D)*LN, LN, out + p * (E)*os, os); \
  } while (0)

/* wx_body for one matrix and direction: the coefficients are constants, so
 * the zero ones drop out and the loops unroll into straight vector code;
 * built for AVX2 and AVX-512 too where the CPU has them. */
typedef void (*PD_T(wx_fn))(const T *, int64_t, T *, int64_t);
#ifdef PD_X86
#define WX_ISA(name, BODY)                                                                                         \
  __attribute__((target("avx512f,prefer-vector-width=512"))) static void PD_T(name##_512)(const T *in, int64_t is, \
                                                                                          T *out, int64_t os) {    \
    BODY;                                                                                                          \
  }                                                                                                                \
  __attribute__((target("avx2,fma"))) static void PD_T(name##_256)(const T *in, int64_t is, T *out, int64_t os) {  \
    BODY;                                                                                                          \
  }
#else
#define WX_ISA(name, BODY)
#endif
#define WX_ANY(name, BODY)                                                             \
  static void PD_T(name##_base)(const T *in, int64_t is, T *out, int64_t os) { BODY; } \
  WX_ISA(name, BODY)
#define WX(name, MX, R, S, TR) WX_ANY(name, PD_T(wx_body)(MX, R, S, TR, in, is, out, os))
#define WX_SEP(name, F, D, E) WX_ANY(name, WX_SEP_BODY(F, D, E))
/* a form's output and filter transforms by wx_body */
#define WX_AG(id, AT, G, M, R, A) \
  WX(id##_af, AT, M, A, false)    \
  WX(id##_at, AT, M, A, true)     \
  WX(id##_gf, G, A, R, false)     \
  WX(id##_gt, G, A, R, true)
#define WX_FORM(id, AT, G, BT, M, R, A) \
  WX(id##_bf, BT, A, A, false)          \
  WX(id##_bt, BT, A, A, true)           \
  WX_AG(id, AT, G, M, R, A)
/* the 4x4-tile forms: the filter's by wx_body (once a call), the rest by their 1-D transforms */
#define WX_FORM4(id, G, R, A, BT1, BT1T, AT1, AT1T) \
  WX_SEP(id##_bf, BT1, A, A)                        \
  WX_SEP(id##_bt, BT1T, A, A)                       \
  WX_SEP(id##_af, AT1, A, 4)                        \
  WX_SEP(id##_at, AT1T, 4, A)                       \
  WX(id##_gf, G, A, R, false)                       \
  WX(id##_gt, G, A, R, true)
WX_FORM(w23, at2, g2, bt2, 2, 3, 4)
WX_FORM4(w43, g4, 3, 6, bt6, bt6t, at46, at46t)
WX_AG(w25, at25, g25, 2, 5, 6) /* BT is F(4x4, 3x3)'s: w43's input transforms */
WX_FORM4(w45, g45, 5, 8, bt8, bt8t, at48, at48t)

/* a form's transforms: BT d BT^T and its adjoint, AT z AT^T and its adjoint, G w G^T and its adjoint */
typedef struct PD_T(wxset) {
  PD_T(wx_fn) bf, bt, af, at, gf, gt;
} PD_T(wxset);
/* bid: the form whose input transforms (BT) id shares */
#define WX_SET(bid, id, sfx)                                                                                   \
  {                                                                                                            \
    PD_T(bid##_bf_##sfx), PD_T(bid##_bt_##sfx), PD_T(id##_af_##sfx), PD_T(id##_at_##sfx), PD_T(id##_gf_##sfx), \
        PD_T(id##_gt_##sfx)                                                                                    \
  }
#define WX_SETS(sfx) \
  { WX_SET(w23, w23, sfx), WX_SET(w43, w43, sfx), WX_SET(w43, w25, sfx), WX_SET(w45, w45, sfx) }
static const PD_T(wxset) PD_T(wx_sets)[][4] = {
    WX_SETS(base),
#ifdef PD_X86
    WX_SETS(256),
    WX_SETS(512),
#endif
};
static const PD_T(wxset) * PD_T(wx_pick)(const pd_wino_form *f) {
  int isa = 0;
#ifdef PD_X86
  isa = pd_cpu_avx512f() ? 2 : pd_cpu_avx2_fma() ? 1 : 0;
#endif
  return &PD_T(wx_sets)[isa][(f->r == 5) * 2 + (f->m == 4)];
}
#undef WX_SET
#undef WX_SETS
#undef WX_AG
#undef WX_FORM
#undef WX_FORM4
#undef WX
#undef WX_SEP
#undef WX_SEP_BODY
#undef WX_ANY
#undef WX_ISA

/* U [a a][ldu] (element (m, c) of plane xi at m C + c) = G w G^T */
static void PD_T(filter_xform)(const wplan *p, const T *w, T *u) {
  const pd_wino_form *f = p->f;
  const int r = f->r;
  const int64_t mc = p->g->m * p->g->c;
  const PD_T(wxset) *ws = PD_T(wx_pick)(p->f);
  T in[5 * 5 * LN];
  for (int64_t e0 = 0; e0 < mc; e0 += LN) {
    for (int l = 0; l < LN; l++)
      for (int k = 0; k < r * r; k++) in[k * LN + l] = e0 + l < mc ? w[(e0 + l) * r * r + k] : 0;
    ws->gf(in, LN, u + e0, p->ldu);
  }
}

/* dw = G^T dU G, from dU [a a][ldu] */
static void PD_T(filter_grad)(const wplan *p, const T *du, T *dw) {
  const pd_wino_form *f = p->f;
  const int r = f->r;
  const int64_t mc = p->g->m * p->g->c;
  const PD_T(wxset) *ws = PD_T(wx_pick)(p->f);
  T out[5 * 5 * LN];
  for (int64_t e0 = 0; e0 < mc; e0 += LN) {
    ws->gt(du + e0, p->ldu, out, LN);
    for (int l = 0; l < LN && e0 + l < mc; l++)
      for (int k = 0; k < r * r; k++) dw[(e0 + l) * r * r + k] = out[k * LN + l];
  }
}

/* The images n0 .. n1 of x [N, C, H, W] into xp [.][C][hp][wp], zeros
 * around (ph rows and pw columns before, the rest after). */
static void PD_T(pad_input)(const wplan *p, const T *x, int64_t n0, int64_t n1, T *xp) {
  const pd_conv_geom *g = p->g;
  const int64_t H = g->h, W = g->w, hp = p->hp, wp = p->wp, ph = g->ph, pw = g->pw;
  for (int64_t n = n0; n <= n1; n++)
    for (int64_t ch = 0; ch < g->c; ch++) {
      const T *s = x + (n * g->c + ch) * H * W;
      T *d = xp + ((n - n0) * g->c + ch) * hp * wp;
      memset(d, 0, sizeof(T) * (size_t)(ph * wp));
      for (int64_t i = 0; i < H; i++) {
        T *row = d + (ph + i) * wp;
        memset(row, 0, sizeof(T) * (size_t)pw);
        memcpy(row + pw, s + i * W, sizeof(T) * (size_t)W);
        memset(row + pw + W, 0, sizeof(T) * (size_t)(wp - pw - W));
      }
      memset(d + (ph + H) * wp, 0, sizeof(T) * (size_t)((hp - ph - H) * wp));
    }
}

/* dx (images n0 .. n1) += the inside of the padded sums dxp */
static void PD_T(unpad_add)(const wplan *p, const T *dxp, int64_t n0, int64_t n1, T *dx) {
  const pd_conv_geom *g = p->g;
  const int64_t H = g->h, W = g->w, hp = p->hp, wp = p->wp;
  for (int64_t n = n0; n <= n1; n++)
    for (int64_t ch = 0; ch < g->c; ch++) {
      const T *s = dxp + ((n - n0) * g->c + ch) * hp * wp + g->ph * wp + g->pw;
      T *d = dx + (n * g->c + ch) * H * W;
      for (int64_t i = 0; i < H; i++)
        for (int64_t j = 0; j < W; j++) d[i * W + j] += s[i * wp + j];
    }
}

/* The images n0 .. n1 of dy [N, M, Ho, Wo] into dyp [.][M][hq][wq], zeros
 * past the output */
static void PD_T(pad_doutput)(const wplan *p, const T *dy, int64_t n0, int64_t n1, T *dyp) {
  const pd_conv_geom *g = p->g;
  const int64_t Ho = g->ho, Wo = g->wo, hq = p->hq, wq = p->wq;
  for (int64_t n = n0; n <= n1; n++)
    for (int64_t k = 0; k < g->m; k++) {
      const T *s = dy + (n * g->m + k) * Ho * Wo;
      T *d = dyp + ((n - n0) * g->m + k) * hq * wq;
      for (int64_t i = 0; i < Ho; i++) {
        memcpy(d + i * wq, s + i * Wo, sizeof(T) * (size_t)Wo);
        memset(d + i * wq + Wo, 0, sizeof(T) * (size_t)(wq - Wo));
      }
      memset(d + Ho * wq, 0, sizeof(T) * (size_t)((hq - Ho) * wq));
    }
}

/* Each lane's tile of the group t0 .. t0 + LN (global tiles from tg) in a
 * padded plane of row stride rs, images of istride from image n0: the
 * offset of its top-left element (lanes past nt: 0, their values unused). */
static void PD_T(lanes)(const wplan *p, int64_t tg, int64_t t0, int64_t nt, int64_t n0, int64_t rs, int64_t istride,
                        int64_t off[LN]) {
  const int m = p->f->m;
  int64_t t = tg + t0, n = t / p->tiles, tt = t % p->tiles;
  for (int l = 0; l < LN; l++, tt++) {
    if (tt == p->tiles) tt = 0, n++;
    off[l] = t0 + l < nt ? (n - n0) * istride + tt / p->tw * m * rs + tt % p->tw * m : 0;
  }
}

/* d (lane-ordered, element (i, j) at d[(i size + j) LN]) = the size x size
 * window at x, row stride ws */
static inline __attribute__((always_inline)) void PD_T(win_get)(const T *x, int64_t ws, const int size, T *d) {
#pragma GCC unroll 8
  for (int i = 0; i < size; i++)
#pragma GCC unroll 8
    for (int j = 0; j < size; j++) d[(i * size + j) * LN] = x[i * ws + j];
}

/* The LN lanes' a x a windows at plane + off[l] into d as win_get puts
 * them, 8 lanes at a time (float with AVX2: wplan.gather8) */
static inline void PD_T(gather)(const T *plane, const int64_t *off, int64_t ws, int a, T *d) {
#ifdef PD_X86
  for (int l0 = 0; l0 < LN; l0 += 8) {
    const float *base[8];
    for (int k = 0; k < 8; k++) base[k] = (const float *)(plane + off[l0 + k]);
    gather8(base, ws, a, (float *)d + l0);
  }
#else
  (void)plane, (void)off, (void)ws, (void)a, (void)d;
#endif
}
/* and back: each lane's window at plane + off[l] += its values in d
 * (wplan.scatter8) */
static inline void PD_T(scatter)(T *plane, const int64_t *off, int64_t ws, int a, const T *d) {
#ifdef PD_X86
  for (int l0 = 0; l0 < LN; l0 += 8) {
    float *base[8];
    for (int k = 0; k < 8; k++) base[k] = (float *)(plane + off[l0 + k]);
    scatter_add8(base, ws, a, (const float *)d + l0);
  }
#else
  (void)plane, (void)off, (void)ws, (void)a, (void)d;
#endif
}

/* V's columns t0 .. t0 + nt (chunk tiles from global tile tg) of channel-major
 * planes: V[xi][ch][t] = (BT d BT^T)[xi] for the input tiles, from the
 * chunk's padded images xp (the first is image n0) */
static inline __attribute__((always_inline)) void PD_T(input_xform_a)(const wplan *p, const PD_T(wxset) * ws,
                                                                      const T *xp, int64_t n0, int64_t tg, int64_t nt,
                                                                      T *v, const int a) {
  const int64_t C = p->g->c, wp = p->wp, plane = p->hp * p->wp;
  T d[8 * 8 * LN];
  int64_t off[LN];
  for (int64_t t0 = 0; t0 < nt; t0 += LN) {
    PD_T(lanes)(p, tg, t0, nt, n0, wp, C * plane, off);
    for (int64_t ch = 0; ch < C; ch++) {
      if (sizeof(T) == 4 && p->gather8)
        PD_T(gather)(xp + ch * plane, off, wp, a, d);
      else
        for (int l = 0; l < LN; l++) PD_T(win_get)(xp + ch * plane + off[l], wp, a, d + l);
      ws->bf(d, LN, v + ch * p->ld + t0, C * p->ld);
    }
  }
}
static void PD_T(input_xform)(const wplan *p, const PD_T(wxset) * ws, const T *xp, int64_t n0, int64_t tg, int64_t nt,
                              T *v) {
  if (p->f->a == 4)
    PD_T(input_xform_a)(p, ws, xp, n0, tg, nt, v, 4);
  else if (p->f->a == 6)
    PD_T(input_xform_a)(p, ws, xp, n0, tg, nt, v, 6);
  else
    PD_T(input_xform_a)(p, ws, xp, n0, tg, nt, v, 8);
}

/* y: the m x m output tiles of tiles t0 .. t0 + nt, clipped to the output */
static inline __attribute__((always_inline)) void PD_T(output_xform_m)(const wplan *p, const PD_T(wxset) * ws,
                                                                       const T *z, int64_t tg, int64_t nt, const T *b,
                                                                       T *y, const int m) {
  const pd_conv_geom *g = p->g;
  const int64_t M = g->m, Ho = g->ho, Wo = g->wo;
  T o[4 * 4 * LN];
  int64_t off[LN];
  int ur[LN], uc[LN];
  for (int64_t t0 = 0; t0 < nt; t0 += LN) {
    PD_T(lanes)(p, tg, t0, nt, 0, Wo, M * Ho * Wo, off);
    for (int l = 0; l < LN; l++) {
      const int64_t tt = (tg + t0 + l) % p->tiles, r0 = tt / p->tw * m, c0 = tt % p->tw * m;
      ur[l] = Ho - r0 < m ? (int)(Ho - r0) : m, uc[l] = Wo - c0 < m ? (int)(Wo - c0) : m;
    }
    for (int64_t k = 0; k < M; k++) {
      ws->af(z + k * p->ld + t0, M * p->ld, o, LN);
      const T bk = b ? b[k] : 0;
      for (int l = 0; l < LN && t0 + l < nt; l++) {
        T *yo = y + k * Ho * Wo + off[l];
        if (ur[l] == m && uc[l] == m) {
#pragma GCC unroll 4
          for (int u = 0; u < m; u++)
#pragma GCC unroll 4
            for (int q = 0; q < m; q++) yo[u * Wo + q] = o[(u * m + q) * LN + l] + bk;
        } else
          for (int u = 0; u < ur[l]; u++)
            for (int q = 0; q < uc[l]; q++) yo[u * Wo + q] = o[(u * m + q) * LN + l] + bk;
      }
    }
  }
}
static void PD_T(output_xform)(const wplan *p, const PD_T(wxset) * ws, const T *z, int64_t tg, int64_t nt, const T *b,
                               T *y) {
  if (p->f->m == 2)
    PD_T(output_xform_m)(p, ws, z, tg, nt, b, y, 2);
  else
    PD_T(output_xform_m)(p, ws, z, tg, nt, b, y, 4);
}

/* Z[xi][k][t] = (AT^T dy AT)[xi] of dy's m x m tiles, from the chunk's
 * padded dOutput dyp (the first is image n0) */
static inline __attribute__((always_inline)) void PD_T(doutput_xform_m)(const wplan *p, const PD_T(wxset) * ws,
                                                                        const T *dyp, int64_t n0, int64_t tg,
                                                                        int64_t nt, T *z, const int m) {
  const int64_t M = p->g->m, wq = p->wq, plane = p->hq * p->wq;
  T o[4 * 4 * LN];
  int64_t off[LN];
  for (int64_t t0 = 0; t0 < nt; t0 += LN) {
    PD_T(lanes)(p, tg, t0, nt, n0, wq, M * plane, off);
    for (int64_t k = 0; k < M; k++) {
      for (int l = 0; l < LN; l++) PD_T(win_get)(dyp + k * plane + off[l], wq, m, o + l);
      ws->at(o, LN, z + k * p->ld + t0, M * p->ld);
    }
  }
}
static void PD_T(doutput_xform)(const wplan *p, const PD_T(wxset) * ws, const T *dyp, int64_t n0, int64_t tg,
                                int64_t nt, T *z) {
  if (p->f->m == 2)
    PD_T(doutput_xform_m)(p, ws, dyp, n0, tg, nt, z, 2);
  else
    PD_T(doutput_xform_m)(p, ws, dyp, n0, tg, nt, z, 4);
}

/* dxp += BT^T V BT of each tile, into the chunk's padded sums (image n0 first) */
static inline __attribute__((always_inline)) void PD_T(dinput_xform_a)(const wplan *p, const PD_T(wxset) * ws,
                                                                       const T *v, int64_t n0, int64_t tg, int64_t nt,
                                                                       T *dxp, const int a) {
  const int64_t C = p->g->c, wp = p->wp, plane = p->hp * p->wp;
  T d[8 * 8 * LN];
  int64_t off[LN];
  for (int64_t t0 = 0; t0 < nt; t0 += LN) {
    PD_T(lanes)(p, tg, t0, nt, n0, wp, C * plane, off);
    for (int64_t ch = 0; ch < C; ch++) {
      ws->bt(v + ch * p->ld + t0, C * p->ld, d, LN);
      if (sizeof(T) == 4 && p->scatter8 && t0 + LN <= nt) {
        PD_T(scatter)(dxp + ch * plane, off, wp, a, d);
        continue;
      }
      for (int l = 0; l < LN && t0 + l < nt; l++) {
        T *x = dxp + ch * plane + off[l];
#pragma GCC unroll 8
        for (int i = 0; i < a; i++)
#pragma GCC unroll 8
          for (int j = 0; j < a; j++) x[i * wp + j] += d[(i * a + j) * LN + l];
      }
    }
  }
}
static void PD_T(dinput_xform)(const wplan *p, const PD_T(wxset) * ws, const T *v, int64_t n0, int64_t tg, int64_t nt,
                               T *dxp) {
  if (p->f->a == 4)
    PD_T(dinput_xform_a)(p, ws, v, n0, tg, nt, dxp, 4);
  else if (p->f->a == 6)
    PD_T(dinput_xform_a)(p, ws, v, n0, tg, nt, dxp, 6);
  else
    PD_T(dinput_xform_a)(p, ws, v, n0, tg, nt, dxp, 8);
}

/* sum of n values in 16 interleaved partial sums (vectorised, fixed order) */
static T PD_T(wsum)(const T *v, int64_t n) {
  T part[16] = {0}, s = 0;
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    for (int l = 0; l < 16; l++) part[l] += v[k + l];
  for (; k < n; k++) s += v[k];
  for (int l = 0; l < 16; l++) s += part[l];
  return s;
}

typedef struct PD_T(wjob) {
  const wplan *p;
  const T *x, *u, *b, *dy;
  T *y, *dx;
  bool dw, db;
} PD_T(wjob);

static void PD_T(forward_part)(void *arg, int t, int nt) {
  const PD_T(wjob) *j = arg;
  const wplan *p = j->p;
  const pd_conv_geom *g = p->g;
  const int64_t aa = (int64_t)p->f->a * p->f->a, M = g->m, C = g->c;
  T *v = (T *)p->part[t], *z = v + aa * C * p->ld, *xp = (T *)p->part[t] + p->pad_off;
  const PD_T(wxset) *ws = PD_T(wx_pick)(p->f);
  int64_t lo, hi;
  pd_parallel_range(g->n, t, nt, &lo, &hi);
  for (int64_t t0 = lo * p->tiles; t0 < hi * p->tiles; t0 += p->chunk) {
    const int64_t cnt = hi * p->tiles - t0 < p->chunk ? hi * p->tiles - t0 : p->chunk;
    const int64_t n0 = t0 / p->tiles, n1 = (t0 + cnt - 1) / p->tiles;
    PD_T(pad_input)(p, j->x, n0, n1, xp);
    PD_T(input_xform)(p, ws, xp, n0, t0, cnt, v);
    for (int64_t xi = 0; xi < aa; xi++)
      PD_T(wgemm)(false, M, cnt, C, j->u + xi * p->ldu, C, v + xi * C * p->ld, p->ld, z + xi * M * p->ld, p->ld);
    PD_T(output_xform)(p, ws, z, t0, cnt, j->b, j->y);
  }
}

static void PD_T(backward_part)(void *arg, int t, int nt) {
  const PD_T(wjob) *j = arg;
  const wplan *p = j->p;
  const pd_conv_geom *g = p->g;
  const int64_t aa = (int64_t)p->f->a * p->f->a, M = g->m, C = g->c;
  T *v = (T *)p->part[t], *z = v + aa * C * p->ld, *du = z + aa * M * p->ld, *db = du + aa * p->ldu;
  T *vt = db + (M + LN - 1) / LN * LN;
  T *xp = (T *)p->part[t] + p->pad_off, *dxp = xp + p->xpad, *dyp = dxp + p->xpad;
  const PD_T(wxset) *ws = PD_T(wx_pick)(p->f);
  int64_t lo, hi;
  pd_parallel_range(g->n, t, nt, &lo, &hi);
  if (j->dw) memset(du, 0, sizeof(T) * (size_t)(aa * p->ldu));
  if (j->db)
    for (int64_t k = 0; k < M; k++) {
      T s = 0;
      for (int64_t n = lo; n < hi; n++) s += PD_T(wsum)(j->dy + (n * M + k) * g->p, g->p);
      db[k] = s;
    }
  if (j->dx) memset(j->dx + lo * C * g->h * g->w, 0, sizeof(T) * (size_t)((hi - lo) * C * g->h * g->w));
  for (int64_t t0 = lo * p->tiles; t0 < hi * p->tiles; t0 += p->chunk) {
    const int64_t cnt = hi * p->tiles - t0 < p->chunk ? hi * p->tiles - t0 : p->chunk;
    const int64_t n0 = t0 / p->tiles, n1 = (t0 + cnt - 1) / p->tiles;
    PD_T(pad_doutput)(p, j->dy, n0, n1, dyp);
    PD_T(doutput_xform)(p, ws, dyp, n0, t0, cnt, z);
    if (j->dw) {
      PD_T(pad_input)(p, j->x, n0, n1, xp);
      PD_T(input_xform)(p, ws, xp, n0, t0, cnt, v);
      for (int64_t xi = 0; xi < aa; xi++)
        PD_T(wgemm_nt)(M, C, cnt, z + xi * M * p->ld, p->ld, v + xi * C * p->ld, p->ld, du + xi * p->ldu, C, vt);
    }
    if (j->dx) {
      for (int64_t xi = 0; xi < aa; xi++)
        PD_T(wgemm)(true, C, cnt, M, j->u + xi * p->ldu, C, z + xi * M * p->ld, p->ld, v + xi * C * p->ld, p->ld);
      memset(dxp, 0, sizeof(T) * (size_t)((n1 - n0 + 1) * C * p->hp * p->wp));
      PD_T(dinput_xform)(p, ws, v, n0, t0, cnt, dxp);
      PD_T(unpad_add)(p, dxp, n0, n1, j->dx);
    }
  }
}

pd_status PD_T(pd_wino_forward)(pd_ctx *c, const pd_conv_geom *g, const pd_wino_form *f, int parts, const T *x,
                                const T *w, const T *b, T *y) {
  wplan p;
  pd_status st = make_wplan(c, g, f, parts, sizeof(T), false, &p);
  if (st) return st;
  PD_T(filter_xform)(&p, w, (T *)p.u);
  PD_T(wjob) j = {.p = &p, .x = x, .u = p.u, .b = b, .y = y};
  pd_parallel_run(p.parts, PD_T(forward_part), &j);
  return PD_OK;
}

pd_status PD_T(pd_wino_backward)(pd_ctx *c, const pd_conv_geom *g, const pd_wino_form *f, int parts, const T *x,
                                 const T *w, const T *dy, T *dx, T *dw, T *db) {
  wplan p;
  pd_status st = make_wplan(c, g, f, parts, sizeof(T), true, &p);
  if (st) return st;
  if (dx) PD_T(filter_xform)(&p, w, (T *)p.u);
  PD_T(wjob) j = {.p = &p, .x = x, .u = p.u, .dy = dy, .dx = dx, .dw = dw != NULL, .db = db != NULL};
  pd_parallel_run(p.parts, PD_T(backward_part), &j);
  /* the parts' sums in part order: dU into part 0's, then dW = G^T dU G */
  const int64_t aa = (int64_t)f->a * f->a, off = aa * (g->c + g->m) * p.ld;
  T *du0 = (T *)p.part[0] + off, *db0 = du0 + aa * p.ldu;
  for (int t = 1; t < p.parts; t++) {
    const T *du = (const T *)p.part[t] + off, *dbt = du + aa * p.ldu;
    if (dw)
      for (int64_t i = 0; i < aa * p.ldu; i++) du0[i] += du[i];
    if (db)
      for (int64_t k = 0; k < g->m; k++) db0[k] += dbt[k];
  }
  if (dw) PD_T(filter_grad)(&p, du0, dw);
  if (db) memcpy(db, db0, sizeof(T) * (size_t)g->m);
  return PD_OK;
}

#undef LN
