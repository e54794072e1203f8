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
  T tmp[6 * 6 * LN];
#pragma GCC unroll 6
  for (int p = 0; p < E; p++)
#pragma GCC unroll 6
    for (int j = 0; j < D; j++) {
      T acc[LN];
      for (int l = 0; l < LN; l++) acc[l] = 0;
#pragma GCC unroll 6
      for (int i = 0; i < D; i++) {
        const double cf = tr ? mx[i * S + p] : mx[p * S + i];
        if (cf == 0) continue;
        const T k = (T)cf, *v = in + (i * D + j) * is;
        for (int l = 0; l < LN; l++) acc[l] += k * v[l];
      }
      for (int l = 0; l < LN; l++) tmp[(p * D + j) * LN + l] = acc[l];
    }
#pragma GCC unroll 6
  for (int p = 0; p < E; p++)
#pragma GCC unroll 6
    for (int q = 0; q < E; q++) {
      T acc[LN];
      for (int l = 0; l < LN; l++) acc[l] = 0;
#pragma GCC unroll 6
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

/* wx_body for one matrix and direction: the coefficients are constants, so
 * the zero ones drop out and the loops unroll into straight vector code;
 * built for AVX-512 too where the CPU has it. */
typedef void (*PD_T(wx_fn))(const T *, int64_t, T *, int64_t);
#ifdef PD_X86
#define WX_512(name, MX, R, S, TR)                                                                                 \
  __attribute__((target("avx512f,prefer-vector-width=512"))) static void PD_T(name##_512)(const T *in, int64_t is, \
                                                                                          T *out, int64_t os) {    \
    PD_T(wx_body)(MX, R, S, TR, in, is, out, os);                                                                  \
  }
#else
#define WX_512(name, MX, R, S, TR)
#endif
#define WX(name, MX, R, S, TR)                                                 \
  static void PD_T(name##_base)(const T *in, int64_t is, T *out, int64_t os) { \
    PD_T(wx_body)(MX, R, S, TR, in, is, out, os);                              \
  }                                                                            \
  WX_512(name, MX, R, S, TR)
#define WX_FORM(id, AT, G, BT, M, R, A) \
  WX(id##_bf, BT, A, A, false)          \
  WX(id##_bt, BT, A, A, true)           \
  WX(id##_af, AT, M, A, false)          \
  WX(id##_at, AT, M, A, true)           \
  WX(id##_gf, G, A, R, false)           \
  WX(id##_gt, G, A, R, true)
WX_FORM(w23, at2, g2, bt2, 2, 3, 4)
WX_FORM(w43, at4, g4, bt4, 4, 3, 6)

/* a form's transforms: BT d BT^T and its adjoint, AT z AT^T and its adjoint, G w G^T and its adjoint */
typedef struct PD_T(wxset) {
  PD_T(wx_fn) bf, bt, af, at, gf, gt;
} PD_T(wxset);
#define WX_SET(id, sfx)                                                                                      \
  {                                                                                                          \
    PD_T(id##_bf_##sfx), PD_T(id##_bt_##sfx), PD_T(id##_af_##sfx), PD_T(id##_at_##sfx), PD_T(id##_gf_##sfx), \
        PD_T(id##_gt_##sfx)                                                                                  \
  }
static const PD_T(wxset) PD_T(wx_sets)[][2] = {
    {WX_SET(w23, base), WX_SET(w43, base)},
#ifdef PD_X86
    {WX_SET(w23, 512), WX_SET(w43, 512)},
#endif
};
static const PD_T(wxset) * PD_T(wx_pick)(const pd_wino_form *f) {
  int isa = 0;
#ifdef PD_X86
  isa = pd_cpu_avx512f();
#endif
  return &PD_T(wx_sets)[isa][f->m == 4];
}
#undef WX_SET
#undef WX_FORM
#undef WX
#undef WX_512

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

/* V's columns t0 .. t0 + nt (chunk tiles from global tile tg) of channel-major
 * planes: V[xi][ch][t] = (BT d BT^T)[xi] for the input tiles of src
 * ([N, C, H, W]) */
static void PD_T(input_xform)(const wplan *p, const PD_T(wxset) * ws, const T *src, int64_t tg, int64_t nt, T *v) {
  const pd_conv_geom *g = p->g;
  const pd_wino_form *f = p->f;
  const int a = f->a, m = f->m;
  const int64_t H = g->h, W = g->w, C = g->c;
  T d[6 * 6 * LN];
  for (int64_t t0 = 0; t0 < nt; t0 += LN)
    for (int64_t ch = 0; ch < C; ch++) {
      for (int l = 0; l < LN; l++) {
        const int64_t t = tg + t0 + l;
        if (t0 + l >= nt) {
          for (int k = 0; k < a * a; k++) d[k * LN + l] = 0;
          continue;
        }
        const int64_t n = t / p->tiles, tt = t % p->tiles;
        const int64_t r0 = tt / p->tw * m - g->ph, c0 = tt % p->tw * m - g->pw;
        const T *x = src + (n * C + ch) * H * W;
        if (r0 >= 0 && c0 >= 0 && r0 + a <= H && c0 + a <= W) {
          for (int i = 0; i < a; i++)
            for (int j = 0; j < a; j++) d[(i * a + j) * LN + l] = x[(r0 + i) * W + c0 + j];
        } else {
          for (int i = 0; i < a; i++)
            for (int j = 0; j < a; j++) {
              const int64_t rr = r0 + i, cc = c0 + j;
              d[(i * a + j) * LN + l] = rr >= 0 && rr < H && cc >= 0 && cc < W ? x[rr * W + cc] : 0;
            }
        }
      }
      ws->bf(d, LN, v + ch * p->ld + t0, C * p->ld);
    }
}

/* y (or, with tr, the adjoint: Z from dy): the m x m output tiles of tiles
 * t0 .. t0 + nt */
static void PD_T(output_xform)(const wplan *p, const PD_T(wxset) * ws, const T *z, int64_t tg, int64_t nt, const T *b,
                               T *y) {
  const pd_conv_geom *g = p->g;
  const pd_wino_form *f = p->f;
  const int m = f->m;
  const int64_t M = g->m, Ho = g->ho, Wo = g->wo;
  T o[4 * 4 * LN];
  for (int64_t t0 = 0; t0 < nt; t0 += LN)
    for (int64_t k = 0; k < M; k++) {
      ws->af(z + k * p->ld + t0, M * p->ld, o, LN);
      const T bk = b ? b[k] : 0;
      for (int l = 0; l < LN && t0 + l < nt; l++) {
        const int64_t t = tg + t0 + l, n = t / p->tiles, tt = t % p->tiles;
        const int64_t r0 = tt / p->tw * m, c0 = tt % p->tw * m;
        T *yo = y + (n * M + k) * Ho * Wo;
        const int ur = Ho - r0 < m ? (int)(Ho - r0) : m, uc = Wo - c0 < m ? (int)(Wo - c0) : m;
        for (int u = 0; u < ur; u++)
          for (int q = 0; q < uc; q++) yo[(r0 + u) * Wo + c0 + q] = o[(u * m + q) * LN + l] + bk;
      }
    }
}

/* Z[xi][k][t] = (AT^T dy AT)[xi], dy's m x m tile (zeros past the output) */
static void PD_T(doutput_xform)(const wplan *p, const PD_T(wxset) * ws, const T *dy, int64_t tg, int64_t nt, T *z) {
  const pd_conv_geom *g = p->g;
  const pd_wino_form *f = p->f;
  const int m = f->m;
  const int64_t M = g->m, Ho = g->ho, Wo = g->wo;
  T o[4 * 4 * LN];
  for (int64_t t0 = 0; t0 < nt; t0 += LN)
    for (int64_t k = 0; k < M; k++) {
      for (int l = 0; l < LN; l++) {
        const int64_t t = tg + t0 + l, n = t / p->tiles, tt = t % p->tiles;
        const int64_t r0 = tt / p->tw * m, c0 = tt % p->tw * m;
        const T *gy = dy + (n * M + k) * Ho * Wo;
        for (int u = 0; u < m; u++)
          for (int q = 0; q < m; q++)
            o[(u * m + q) * LN + l] = t0 + l < nt && r0 + u < Ho && c0 + q < Wo ? gy[(r0 + u) * Wo + c0 + q] : 0;
      }
      ws->at(o, LN, z + k * p->ld + t0, M * p->ld);
    }
}

/* dx += BT^T V BT of each tile, the a x a patch clipped to the image */
static void PD_T(dinput_xform)(const wplan *p, const PD_T(wxset) * ws, const T *v, int64_t tg, int64_t nt, T *dx) {
  const pd_conv_geom *g = p->g;
  const pd_wino_form *f = p->f;
  const int a = f->a, m = f->m;
  const int64_t H = g->h, W = g->w, C = g->c;
  T d[6 * 6 * LN];
  for (int64_t t0 = 0; t0 < nt; t0 += LN)
    for (int64_t ch = 0; ch < C; ch++) {
      ws->bt(v + ch * p->ld + t0, C * p->ld, d, LN);
      for (int l = 0; l < LN && t0 + l < nt; l++) {
        const int64_t t = tg + t0 + l, n = t / p->tiles, tt = t % p->tiles;
        const int64_t r0 = tt / p->tw * m - g->ph, c0 = tt % p->tw * m - g->pw;
        T *x = dx + (n * C + ch) * H * W;
        for (int i = 0; i < a; i++) {
          const int64_t rr = r0 + i;
          if (rr < 0 || rr >= H) continue;
          for (int j = 0; j < a; j++) {
            const int64_t cc = c0 + j;
            if (cc >= 0 && cc < W) x[rr * W + cc] += d[(i * a + j) * LN + l];
          }
        }
      }
    }
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
  T *v = (T *)p->part[t], *z = v + aa * C * p->ld;
  const PD_T(wxset) *ws = PD_T(wx_pick)(p->f);
  int64_t lo, hi;
  pd_parallel_range(g->n, t, nt, &lo, &hi);
  for (int64_t t0 = lo * p->tiles; t0 < hi * p->tiles; t0 += p->chunk) {
    const int64_t cnt = hi * p->tiles - t0 < p->chunk ? hi * p->tiles - t0 : p->chunk;
    PD_T(input_xform)(p, ws, j->x, t0, cnt, v);
    for (int64_t xi = 0; xi < aa; xi++) PD_T(pd_gemm)
    (false, false, M, cnt, C, 1, j->u + xi * p->ldu, C, v + xi * C * p->ld, p->ld, 0, z + xi * M * p->ld, p->ld);
    PD_T(output_xform)(p, ws, z, t0, cnt, j->b, j->y);
  }
}

static void PD_T(backward_part)(void *arg, int t, int nt) {
  const PD_T(wjob) *j = arg;
  const wplan *p = j->p;
  const pd_conv_geom *g = p->g;
  const int64_t aa = (int64_t)p->f->a * p->f->a, M = g->m, C = g->c;
  T *v = (T *)p->part[t], *z = v + aa * C * p->ld, *du = z + aa * M * p->ld, *db = du + aa * p->ldu;
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
    PD_T(doutput_xform)(p, ws, j->dy, t0, cnt, z);
    if (j->dw) {
      PD_T(input_xform)(p, ws, j->x, t0, cnt, v);
      for (int64_t xi = 0; xi < aa; xi++) PD_T(pd_gemm)
      (false, true, M, C, cnt, 1, z + xi * M * p->ld, p->ld, v + xi * C * p->ld, p->ld, 1, du + xi * p->ldu, C);
    }
    if (j->dx) {
      for (int64_t xi = 0; xi < aa; xi++) PD_T(pd_gemm)
      (true, false, C, cnt, M, 1, j->u + xi * p->ldu, C, z + xi * M * p->ld, p->ld, 0, v + xi * C * p->ld, p->ld);
      PD_T(dinput_xform)(p, ws, v, t0, cnt, j->dx);
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
