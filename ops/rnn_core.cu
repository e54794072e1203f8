/* rnn_core.cu — GPU float32 kernels of the fused recurrent ops (lstm, gru,
 * rnn), the same computation as the CPU driver (rnn_core_t.h) and cells
 * (lstm_t.h, gru_t.h, rnn_t.h), into the same Reserve layout
 * (rnn_layout.h): the input projection of all steps one cuBLAS product, a
 * step's recurrent product a cuBLAS product into scratch, then one fused
 * element kernel for the step's gates; backward a fused kernel per step,
 * the dh products per step, and the weight gradients as products over all
 * steps after the loop. Lengths stay on the device: a one-thread kernel
 * checks them (a fault, fault.h, as the CPU's message) and notes whether
 * they are sorted; the gate kernels freeze rows past their length. No host
 * synchronisation and no allocation past the scratch's first growth, so a
 * step captures into a CUDA graph. */
#include "gpu_common.cuh"
#include "gpu_ops.h"
#include "rnn_layout.h"

/* ---- the cells' math (rnn_core.h's float versions) ---- */

/* Cephes' expf as rnn_core.h's pd_rnn_exp_float (its AVX2 form in lstm.c:
 * every multiply-add one fma, spelled out so that the compiler contracts
 * nothing differently from one caller to another, and a gate clipped to
 * +-clip is bit for bit rnn_keep_bounds' value); a NaN stays NaN. */
__device__ static inline float rnn_exp(float x) {
  float v = x != x ? 0.0f : x > 88.0f ? 88.0f : x < -88.0f ? -88.0f : x;
  float fn = rintf(__fmul_rn(v, 1.44269504088896341f));
  float r = __fmaf_rn(fn, 2.12194440e-4f, __fmaf_rn(-fn, 0.693359375f, v));
  float p = 1.9875691500e-4f;
  p = __fmaf_rn(p, r, 1.3981999507e-3f);
  p = __fmaf_rn(p, r, 8.3334519073e-3f);
  p = __fmaf_rn(p, r, 4.1665795894e-2f);
  p = __fmaf_rn(p, r, 1.6666665459e-1f);
  p = __fmaf_rn(p, r, 5.0000001201e-1f);
  p = __fmaf_rn(__fmul_rn(p, r), r, __fadd_rn(r, 1.0f));
  return x != x ? x : __fmul_rn(p, __int_as_float(((int)fn + 127) << 23));
}
__device__ static inline float rnn_sigmoid(float x) { return 1 / (1 + rnn_exp(-x)); }
__device__ static inline float rnn_tanh(float x) { return 1 - 2 / (1 + rnn_exp(2 * x)); }
/* bounded to [-b, b]; a NaN stays NaN */
__device__ static inline float rnn_bound(float x, float b) { return x < -b ? -b : x > b ? b : x; }
/* 0 where a kept gate value sits at a bound of the clip (rnn_step_t.h's pd_rnn_keep) */
__device__ static inline float rnn_keep(float a, float lo, float hi) { return (a <= lo || a >= hi) ? 0.0f : 1.0f; }

/* What a step's kernels read; passed by value. */
typedef struct gstep {
  int64_t B, H, GH, ldy, p, Tn;
  const int64_t *len; /* device lengths, or NULL */
  const int *sorted;  /* device flag: lengths non-increasing (frozen rows had no product on the CPU) */
  float *g;           /* [B, GH] gates of step p */
  const float *t;     /* [B, ldt] the step's recurrent product */
  int64_t ldt;
  const float *hp, *cp;
  float *h, *c, *ex, *y;
  const float *peep, *rb;
  float clip, bound;
  int variant;
  float *dg, *dh, *dc, *dex; /* backward */
  const float *dy;
} gstep;

__device__ static inline bool rnn_active(const gstep &s, int64_t b) { return !s.len || s.p < s.len[b]; }

/* The bounds a kept gate sits at when the clip bounded it: sigmoid and
 * tanh of -clip, clip, on the device so that they are the gates' own
 * rounding; without a clip, bounds no kept value reaches. */
__device__ static inline void rnn_keep_bounds(float clip, float *lo_s, float *hi_s, float *lo_t, float *hi_t) {
  *lo_s = clip > 0 ? rnn_sigmoid(-clip) : -1, *hi_s = clip > 0 ? rnn_sigmoid(clip) : 2;
  *lo_t = clip > 0 ? rnn_tanh(-clip) : -2, *hi_t = clip > 0 ? rnn_tanh(clip) : 2;
}

/* A frozen row's gates keep the projection, plus the step's product where
 * the CPU multiplied every row (lengths not sorted): gates [q0, q1) of H. */
__device__ static inline void rnn_frozen_gates(const gstep &s, int64_t b, int64_t j, int q0, int q1) {
  if (*s.sorted) return;
  for (int q = q0; q < q1; q++) s.g[b * s.GH + q * s.H + j] += s.t[b * s.ldt + q * s.H + j];
}

/* ---- small kernels ---- */

/* Checks the lengths as the CPU's prepare() does (the lowest bad row is
 * raised) and notes whether they are sorted; one thread, rows in order. */
static __global__ void check_lengths(const int64_t *len, int64_t B, int64_t Tn, int *sorted, pd_gpu_fault *f,
                                     unsigned long long op) {
  int ok = 1;
  int64_t bad = INT64_MAX;
  for (int64_t b = 0; b < B; b++) {
    if (bad == INT64_MAX && (len[b] < 1 || len[b] > Tn)) bad = b;
    if (b && len[b] > len[b - 1]) ok = 0;
  }
  *sorted = ok;
  /* per_row 1: the lowest length allowed (fault.h) */
  pd_gpu_raise_first(f, op, PD_GPU_FAULT_LENGTH, RNN_LENGTHS, len, bad, Tn, 1);
}
static __global__ void set_flag(int *flag, int v) { *flag = v; }

/* [B, T, n] -> [T, B, n] (to_tm) or back */
static __global__ void transpose_bt(float *dst, const float *src, int64_t B, int64_t Tn, int64_t n, bool to_tm) {
  PD_GPU_FOR(i, B * Tn * n) {
    int64_t e = i % n, r = i / n, b, p;
    if (to_tm)
      p = r / B, b = r % B;
    else
      b = r / Tn, p = r % Tn;
    dst[i] = src[(to_tm ? b * Tn + p : p * B + b) * n + e];
  }
}

/* g[M, GH] += Wb[q] + (q < fold ? Rb[q] : 0), as the CPU's epilogue */
static __global__ void add_bias(float *g, const float *wb, const float *rb, int64_t M, int64_t GH, int64_t fold) {
  PD_GPU_FOR(i, M * GH) {
    int64_t q = i % GH;
    g[i] += wb[q] + (q < fold ? rb[q] : 0);
  }
}

/* out[j] = sum of the rows of a [rows, n] (ld), rows in order */
static __global__ void col_sums(float *out, const float *a, int64_t rows, int64_t n, int64_t ld) {
  PD_GPU_FOR(j, n) {
    float s = 0;
    for (int64_t i = 0; i < rows; i++) s += a[i * ld + j];
    out[j] = s;
  }
}

/* ---- forward gate kernels, one thread per (row, hidden unit) ---- */

static __global__ void lstm_fwd_k(gstep s) {
  PD_GPU_FOR(i, s.B * s.H) {
    int64_t b = i / s.H, j = i % s.H, H = s.H, bh = b * H + j;
    float cp = s.cp[bh];
    if (!rnn_active(s, b)) {
      s.h[bh] = s.hp[bh], s.c[bh] = cp, s.y[b * s.ldy + j] = 0;
      rnn_frozen_gates(s, b, j, 0, 4);
      continue;
    }
    float *g = s.g + b * s.GH;
    const float *t = s.t + b * s.ldt;
    float ai = g[j] + t[j], af = g[H + j] + t[H + j], ag = g[2 * H + j] + t[2 * H + j];
    float ao = g[3 * H + j] + t[3 * H + j];
    if (s.peep) ai += s.peep[j] * cp, af += s.peep[2 * H + j] * cp;
    float ig = rnn_sigmoid(rnn_bound(ai, s.bound)), fg = rnn_sigmoid(rnn_bound(af, s.bound));
    float gg = rnn_tanh(rnn_bound(ag, s.bound));
    float cn = fg * cp + ig * gg;
    if (s.peep) ao += s.peep[H + j] * cn;
    float og = rnn_sigmoid(rnn_bound(ao, s.bound));
    g[j] = ig, g[H + j] = fg, g[2 * H + j] = gg, g[3 * H + j] = og;
    s.c[bh] = cn;
    float hv = og * rnn_tanh(cn);
    s.h[bh] = hv, s.y[b * s.ldy + j] = hv;
  }
}

static __global__ void rnn_fwd_k(gstep s) {
  PD_GPU_FOR(i, s.B * s.H) {
    int64_t b = i / s.H, j = i % s.H, bh = b * s.H + j;
    if (!rnn_active(s, b)) {
      s.h[bh] = s.hp[bh], s.y[b * s.ldy + j] = 0;
      rnn_frozen_gates(s, b, j, 0, 1);
      continue;
    }
    float a = rnn_bound(s.g[b * s.GH + j] + s.t[b * s.ldt + j], s.bound);
    float v = s.variant ? (a > 0 || a != a ? a : 0.0f) : rnn_tanh(a);
    s.g[b * s.GH + j] = v, s.h[bh] = v, s.y[b * s.ldy + j] = v;
  }
}

/* r and z; then n (linear_before_reset: ex holds h_prev R_n^T) or r * h_prev into ex */
static __global__ void gru_rz_k(gstep s) {
  PD_GPU_FOR(i, s.B * s.H) {
    int64_t b = i / s.H, j = i % s.H, H = s.H, bh = b * H + j;
    if (!rnn_active(s, b)) {
      s.ex[bh] = 0;
      rnn_frozen_gates(s, b, j, 0, 2);
      continue;
    }
    float *g = s.g + b * s.GH;
    const float *t = s.t + b * s.ldt;
    float r = rnn_sigmoid(rnn_bound(g[j] + t[j], s.bound));
    g[j] = r, g[H + j] = rnn_sigmoid(rnn_bound(g[H + j] + t[H + j], s.bound));
    if (s.variant) {
      float e = s.ex[bh] + (s.rb ? s.rb[2 * H + j] : 0);
      s.ex[bh] = e;
      g[2 * H + j] = rnn_tanh(rnn_bound(g[2 * H + j] + r * e, s.bound));
    } else
      s.ex[bh] = r * s.hp[bh];
  }
}

static __global__ void gru_h_k(gstep s) {
  PD_GPU_FOR(i, s.B * s.H) {
    int64_t b = i / s.H, j = i % s.H, H = s.H, bh = b * H + j;
    if (!rnn_active(s, b)) {
      s.h[bh] = s.hp[bh], s.y[b * s.ldy + j] = 0;
      continue;
    }
    float *g = s.g + b * s.GH;
    if (!s.variant) g[2 * H + j] = rnn_tanh(rnn_bound(g[2 * H + j], s.bound));
    float z = g[H + j], hv = (1 - z) * g[2 * H + j] + z * s.hp[bh];
    s.h[bh] = hv, s.y[b * s.ldy + j] = hv;
  }
}

/* ---- backward gate kernels: dh and dc from step p+1 in, for p-1 out
 * (dh's product after the kernel); frozen rows: no gate gradient ---- */

static __global__ void lstm_bwd_k(gstep s) {
  float lo_s, hi_s, lo_t, hi_t;
  rnn_keep_bounds(s.clip, &lo_s, &hi_s, &lo_t, &hi_t);
  PD_GPU_FOR(i, s.B * s.H) {
    int64_t b = i / s.H, j = i % s.H, H = s.H, bh = b * H + j;
    float *dg = s.dg + b * s.GH;
    if (!rnn_active(s, b)) {
      dg[j] = dg[H + j] = dg[2 * H + j] = dg[3 * H + j] = 0;
      continue;
    }
    const float *g = s.g + b * s.GH;
    float ig = g[j], fg = g[H + j], gg = g[2 * H + j], og = g[3 * H + j], cn = s.c[bh], cp = s.cp[bh];
    float tc = rnn_tanh(cn), dhv = s.dh[bh] + s.dy[b * s.ldy + j];
    float dao = dhv * tc * og * (1 - og) * rnn_keep(og, lo_s, hi_s);
    float dcv = s.dc[bh] + dhv * og * (1 - tc * tc);
    if (s.peep) dcv += dao * s.peep[H + j];
    float dai = dcv * gg * ig * (1 - ig) * rnn_keep(ig, lo_s, hi_s);
    float daf = dcv * cp * fg * (1 - fg) * rnn_keep(fg, lo_s, hi_s);
    float dag = dcv * ig * (1 - gg * gg) * rnn_keep(gg, lo_t, hi_t);
    float dcp = dcv * fg;
    if (s.peep) dcp += dai * s.peep[j] + daf * s.peep[2 * H + j];
    s.dc[bh] = dcp;
    dg[j] = dai, dg[H + j] = daf, dg[2 * H + j] = dag, dg[3 * H + j] = dao;
    s.dh[bh] = 0;
  }
}

static __global__ void rnn_bwd_k(gstep s) {
  float lo_s, hi_s, lo_t, hi_t;
  rnn_keep_bounds(s.clip, &lo_s, &hi_s, &lo_t, &hi_t);
  const float khi = s.variant ? (s.clip > 0 ? s.clip : INFINITY) : hi_t;
  PD_GPU_FOR(i, s.B * s.H) {
    int64_t b = i / s.H, j = i % s.H, bh = b * s.H + j;
    if (!rnn_active(s, b)) {
      s.dg[b * s.GH + j] = 0;
      continue;
    }
    float h = s.g[b * s.GH + j];
    float d = s.variant ? (h > 0 && h < khi ? 1.0f : 0.0f) : rnn_keep(h, lo_t, khi) * (1 - h * h);
    s.dg[b * s.GH + j] = (s.dh[bh] + s.dy[b * s.ldy + j]) * d;
    s.dh[bh] = 0;
  }
}

static __global__ void gru_zn_k(gstep s) {
  float lo_s, hi_s, lo_t, hi_t;
  rnn_keep_bounds(s.clip, &lo_s, &hi_s, &lo_t, &hi_t);
  PD_GPU_FOR(i, s.B * s.H) {
    int64_t b = i / s.H, j = i % s.H, H = s.H, bh = b * H + j;
    float *dg = s.dg + b * s.GH;
    if (!rnn_active(s, b)) {
      dg[j] = dg[H + j] = dg[2 * H + j] = 0;
      s.dex[bh] = 0;
      continue;
    }
    const float *g = s.g + b * s.GH;
    float r = g[j], z = g[H + j], n = g[2 * H + j], dhv = s.dh[bh] + s.dy[b * s.ldy + j];
    float dnp = dhv * (1 - z) * (1 - n * n) * rnn_keep(n, lo_t, hi_t);
    dg[H + j] = dhv * (s.hp[bh] - n) * z * (1 - z) * rnn_keep(z, lo_s, hi_s);
    dg[2 * H + j] = dnp;
    s.dh[bh] = dhv * z;
    if (s.variant) {
      s.dex[bh] = dnp * r;
      dg[j] = dnp * s.ex[bh] * r * (1 - r) * rnn_keep(r, lo_s, hi_s);
    } else
      s.dex[bh] = 0;
  }
}

/* without linear_before_reset: from d(r * h_prev) (in t), r's gradient and h_prev's share */
static __global__ void gru_r_k(gstep s) {
  float lo_s, hi_s, lo_t, hi_t;
  rnn_keep_bounds(s.clip, &lo_s, &hi_s, &lo_t, &hi_t);
  PD_GPU_FOR(i, s.B * s.H) {
    int64_t b = i / s.H, j = i % s.H, bh = b * s.H + j;
    if (!rnn_active(s, b)) continue;
    float r = s.g[b * s.GH + j], drh = s.t[b * s.ldt + j];
    s.dg[b * s.GH + j] = drh * s.hp[bh] * r * (1 - r) * rnn_keep(r, lo_s, hi_s);
    s.dh[bh] += drh * r;
  }
}

/* P's gradient of one direction: for gate i, o, f and unit j, the sum over
 * steps (in the backward's order) and rows (in order) as the CPU's. Frozen
 * rows' gate gradients are 0 and add nothing. */
static __global__ void lstm_dpeep_k(float *dp, const float *dg, const float *cs, int64_t B, int64_t Tn, int64_t H,
                                    bool rev) {
  PD_GPU_FOR(i, 3 * H) {
    int64_t q = i / H, j = i % H, GH = 4 * H;
    /* i: dG_i c_prev; o: dG_o c; f: dG_f c_prev */
    int64_t gate = q == 0 ? 0 : q == 1 ? 3 : 1;
    float sum = 0;
    for (int64_t qq = Tn - 1; qq >= 0; qq--) {
      int64_t p = rev ? Tn - 1 - qq : qq, slot = q == 1 ? p + 1 : rev ? p + 2 : p;
      for (int64_t b = 0; b < B; b++) sum += dg[(p * B + b) * GH + gate * H + j] * cs[(slot * B + b) * H + j];
    }
    dp[i] = sum;
  }
}

/* ---- the driver ---- */

static pd_status gpu_launch_step(pd_ctx *c, void (*k)(gstep), const gstep &s) {
  k<<<pd_gpu_blocks(s.B * s.H), PD_GPU_THREADS, 0, pd_gpu_stream(c)>>>(s);
  return PD_GPU_LAUNCHED(c, "recurrent gate kernel");
}

static pd_status gpu_dims(pd_ctx *c, const pd_rnn_cell *cell, rnn_dims *d) {
  rnn_dims_of(c, cell, pd_in(c, RNN_X), d);
  const pd_op_def *fwd = c->op->fwd >= 0 ? pd_op_forward_def(c->op->def) : c->op->def;
  d->n_in = fwd->n_inputs, d->n_out = fwd->n_outputs;
  if (d->Tn < 1) return pd_ctx_fail(c, PD_ERR_INPUT, "X \"%s\" has no time steps", pd_ctx_in_name(c, RNN_X, 0));
  return PD_OK;
}

/* The step struct's fields that stay from step to step. */
static void gstep_init(gstep *s, const rnn_dims *d, const int64_t *len, const int *sorted, const float *rb,
                       const float *peep) {
  memset(s, 0, sizeof *s);
  s->B = d->B, s->H = d->H, s->GH = d->GH, s->ldy = d->DH, s->Tn = d->Tn;
  s->len = len, s->sorted = sorted, s->rb = rb, s->peep = peep;
  s->clip = (float)d->clip, s->bound = d->clip > 0 ? (float)d->clip : INFINITY;
  s->variant = d->variant;
}

extern "C" pd_status pd_gpu_rnn_forward(pd_ctx *c) {
  const pd_rnn_cell *cell = rnn_cell_of(c);
  rnn_dims d;
  pd_status st = gpu_dims(c, cell, &d);
  if (st) return st;
  if (!pd_out(c, cell->out_reserve))
    return pd_ctx_fail(c, PD_ERR_INPUT, "output Reserve is missing (leave it out and it is named for you)");
  int64_t B = d.B, Tn = d.Tn, H = d.H, GH = d.GH, DH = d.DH, BH = B * H, M = Tn * B;
  const size_t fb = sizeof(float);
  /* scratch: a step's product [B, GH], then the sorted flag */
  float *tmp = (float *)pd_gpu_work(c, 0, (size_t)(B * GH) * fb + 16);
  if (!tmp) return PD_ERR_RUNTIME;
  int *sorted = (int *)(tmp + B * GH);
  pd_tensor *len_t = pd_in(c, RNN_LENGTHS);
  const int64_t *len = len_t ? PD_DATA(len_t, int64_t) : NULL;
  if (len) {
    check_lengths<<<1, 1, 0, pd_gpu_stream(c)>>>(len, B, Tn, sorted, pd_gpu_fault_record(c),
                                                 (unsigned long long)(uintptr_t)c->op);
    st = PD_GPU_LAUNCHED(c, "check_lengths");
  } else {
    set_flag<<<1, 1, 0, pd_gpu_stream(c)>>>(sorted, 1);
    st = PD_GPU_LAUNCHED(c, "set_flag");
  }
  if (st) return st;

  float *res = PD_DATA(pd_out_at(c, cell->out_reserve, 0), float);
  const float *x = PD_DATA(pd_in(c, RNN_X), float), *w0 = PD_DATA(pd_in(c, RNN_W), float);
  const float *rw = PD_DATA(pd_in(c, RNN_R), float);
  pd_tensor *wl_t = cell->in_wl >= 0 ? pd_in(c, cell->in_wl) : NULL, *b_t = pd_in(c, RNN_B);
  pd_tensor *p_t = cell->in_p >= 0 ? pd_in(c, cell->in_p) : NULL, *h0_t = pd_in(c, RNN_H0);
  pd_tensor *c0_t = cell->in_c0 >= 0 ? pd_in(c, cell->in_c0) : NULL;
  float *xtm = res + rnn_off_xtm(&d);
  st = PD_GPU_LAUNCH_N(c, M * d.I, transpose_bt, xtm, x, B, Tn, d.I, true);
  for (int64_t l = 0; l < d.L && !st; l++) {
    const float *in = l ? res + rnn_off_out(&d, l - 1) : xtm;
    int64_t nin = l ? DH : d.I;
    for (int64_t dir = 0; dir < d.dirs && !st; dir++) {
      int64_t k = l * d.dirs + dir;
      bool rev = d.reverse || dir == 1;
      const float *w = l ? PD_DATA(wl_t, float) + ((l - 1) * d.dirs + dir) * GH * DH : w0 + dir * GH * d.I;
      const float *wb = b_t ? PD_DATA(b_t, float) + k * 2 * GH : NULL, *r = rw + k * GH * H;
      float *g = res + rnn_off_g(&d, k), *hs = res + rnn_off_h(&d, k);
      float *cs = cell->has_c ? res + rnn_off_c(&d, k) : NULL, *ex = cell->extra ? res + rnn_off_ex(&d, k) : NULL;
      st = nin ? pd_gpu_gemm(c, false, true, M, GH, nin, 1, in, nin, w, nin, 0, g, GH)
               : pd_gpu_zero(c, g, (size_t)(M * GH) * fb);
      if (!st && wb) st = PD_GPU_LAUNCH_N(c, M * GH, add_bias, g, wb, wb + GH, M, GH, d.fold);
      int64_t init = rev ? Tn + 1 : 0, unused = rev ? 0 : Tn + 1;
      if (!st)
        st = h0_t ? pd_gpu_copy(c, hs + init * BH, PD_DATA(h0_t, float) + k * BH, (size_t)BH * fb)
                  : pd_gpu_zero(c, hs + init * BH, (size_t)BH * fb);
      if (!st) st = pd_gpu_zero(c, hs + unused * BH, (size_t)BH * fb);
      if (!st && cs)
        st = c0_t ? pd_gpu_copy(c, cs + init * BH, PD_DATA(c0_t, float) + k * BH, (size_t)BH * fb)
                  : pd_gpu_zero(c, cs + init * BH, (size_t)BH * fb);
      if (!st && cs) st = pd_gpu_zero(c, cs + unused * BH, (size_t)BH * fb);
      gstep s;
      gstep_init(&s, &d, len, sorted, wb ? wb + GH : NULL, p_t ? PD_DATA(p_t, float) + k * 3 * H : NULL);
      s.t = tmp;
      /* the last layer writes Y where it is, batch-major, as on the CPU */
      const bool last = l == d.L - 1;
      float *y = last ? PD_DATA(pd_out(c, RNN_Y), float) : res + rnn_off_out(&d, l);
      const int64_t ystep = last ? DH : B * DH;
      if (last) s.ldy = Tn * DH;
      for (int64_t q = 0; q < Tn && !st; q++) {
        int64_t p = rev ? Tn - 1 - q : q, prev = rev ? p + 2 : p;
        s.p = p;
        s.g = g + p * B * GH, s.hp = hs + prev * BH, s.h = hs + (p + 1) * BH;
        s.cp = cs ? cs + prev * BH : NULL, s.c = cs ? cs + (p + 1) * BH : NULL;
        s.ex = ex ? ex + p * BH : NULL;
        s.y = y + p * ystep + dir * H;
        if (d.G == 3) { /* gru: r and z's product first, n's after r (or beside, linear_before_reset) */
          s.ldt = 2 * H;
          st = pd_gpu_gemm(c, false, true, B, 2 * H, H, 1, s.hp, H, r, H, 0, tmp, 2 * H);
          if (!st && d.variant) st = pd_gpu_gemm(c, false, true, B, H, H, 1, s.hp, H, r + 2 * H * H, H, 0, s.ex, H);
          if (!st) st = gpu_launch_step(c, gru_rz_k, s);
          if (!st && !d.variant)
            st = pd_gpu_gemm(c, false, true, B, H, H, 1, s.ex, H, r + 2 * H * H, H, 1, s.g + 2 * H, GH);
          if (!st) st = gpu_launch_step(c, gru_h_k, s);
        } else {
          s.ldt = GH;
          st = pd_gpu_gemm(c, false, true, B, GH, H, 1, s.hp, H, r, H, 0, tmp, GH);
          if (!st) st = gpu_launch_step(c, d.G == 4 ? lstm_fwd_k : rnn_fwd_k, s);
        }
      }
    }
  }
  /* the final states last: HT may be the very variable H0 is (read above) */
  pd_tensor *ht = pd_out(c, RNN_HT), *ct = cell->out_ct >= 0 ? pd_out(c, cell->out_ct) : NULL;
  for (int64_t k = 0; k < d.L * d.dirs && !st; k++) {
    int64_t last = (d.reverse || k % d.dirs == 1) ? 1 : Tn;
    if (ht) st = pd_gpu_copy(c, PD_DATA(ht, float) + k * BH, res + rnn_off_h(&d, k) + last * BH, (size_t)BH * fb);
    if (!st && ct)
      st = pd_gpu_copy(c, PD_DATA(ct, float) + k * BH, res + rnn_off_c(&d, k) + last * BH, (size_t)BH * fb);
  }
  return st;
}

/* The weight gradients of direction k of layer l as products over all
 * T*B rows, once its step loop has filled dG (and dEx): rnn_core_t.h's. */
static pd_status gpu_weight_grads(pd_ctx *c, const pd_rnn_cell *cell, const rnn_dims *d, int64_t l, int64_t k,
                                  const float *in, int64_t nin, const float *hprev, const float *ex, const float *dg,
                                  const float *dex) {
  int64_t M = d->Tn * d->B, GH = d->GH, H = d->H, sp = d->split;
  pd_tensor *dw_t = l ? (cell->in_wl >= 0 ? pd_out(c, cell->in_wl) : NULL) : pd_out(c, RNN_W);
  pd_tensor *dr_t = pd_out(c, RNN_R), *db_t = pd_out(c, RNN_B);
  int64_t dir = k % d->dirs;
  pd_status st = PD_OK;
  if (dw_t) {
    float *dw = PD_DATA(dw_t, float) + (l ? ((l - 1) * d->dirs + dir) * GH * d->DH : dir * GH * d->I);
    st = pd_gpu_gemm(c, true, false, GH, nin, M, 1, dg, GH, in, nin, 0, dw, nin);
  }
  /* the rows past split (gru's n): with linear_before_reset the product
   * was h_prev R_n^T (its gradient dEx), without it (r * h_prev) R_n^T */
  const float *ta = d->variant ? dex : dg + sp, *tb = d->variant ? hprev : ex;
  int64_t tlda = d->variant ? H : GH;
  if (!st && dr_t) {
    float *dr = PD_DATA(dr_t, float) + k * GH * H;
    st = pd_gpu_gemm(c, true, false, sp, H, M, 1, dg, GH, hprev, H, 0, dr, H);
    if (!st && sp < GH) st = pd_gpu_gemm(c, true, false, GH - sp, H, M, 1, ta, tlda, tb, H, 0, dr + sp * H, H);
  }
  if (!st && db_t) {
    float *db = PD_DATA(db_t, float) + k * 2 * GH;
    st = PD_GPU_LAUNCH_N(c, GH, col_sums, db, dg, M, GH, GH);
    if (!st) st = PD_GPU_LAUNCH_N(c, sp, col_sums, db + GH, dg, M, sp, GH);
    if (!st && sp < GH) st = PD_GPU_LAUNCH_N(c, GH - sp, col_sums, db + GH + sp, ta, M, GH - sp, tlda);
  }
  return st;
}

extern "C" pd_status pd_gpu_rnn_backward(pd_ctx *c) {
  const pd_rnn_cell *cell = rnn_cell_of(c);
  rnn_dims d;
  pd_status st = gpu_dims(c, cell, &d);
  if (st) return st;
  int64_t B = d.B, Tn = d.Tn, H = d.H, GH = d.GH, DH = d.DH, BH = B * H, M = Tn * B;
  const size_t fb = sizeof(float);
  int ni = d.n_in, no = d.n_out;
  const float *res = PD_DATA(pd_in(c, ni + cell->out_reserve), float);
  const float *w0 = PD_DATA(pd_in(c, RNN_W), float), *rw = PD_DATA(pd_in(c, RNN_R), float);
  pd_tensor *wl_t = cell->in_wl >= 0 ? pd_in(c, cell->in_wl) : NULL, *b_t = pd_in(c, RNN_B);
  pd_tensor *p_t = cell->in_p >= 0 ? pd_in(c, cell->in_p) : NULL, *len_t = pd_in(c, RNN_LENGTHS);
  pd_tensor *dy_t = pd_in(c, ni + no + RNN_Y), *dht_t = pd_in(c, ni + no + RNN_HT);
  pd_tensor *dct_t = cell->out_ct >= 0 ? pd_in(c, ni + no + cell->out_ct) : NULL;
  pd_tensor *dx_t = pd_out(c, RNN_X), *dh0_t = pd_out(c, RNN_H0);
  pd_tensor *dc0_t = cell->in_c0 >= 0 ? pd_out(c, cell->in_c0) : NULL;
  pd_tensor *dp_t = cell->in_p >= 0 ? pd_out(c, cell->in_p) : NULL;
  /* scratch: dG, dEx, two [T, B, max(I, DH)] gradients of layer inputs and
   * outputs used in turn, dh, dc, a [B, H] product */
  int64_t nmax = d.I > DH ? d.I : DH;
  int64_t total = M * GH + (cell->extra ? M * H : 0) + 2 * M * nmax + 3 * BH;
  float *dg = (float *)pd_gpu_work(c, 0, (size_t)total * fb);
  if (!dg) return PD_ERR_RUNTIME;
  float *dex = cell->extra ? dg + M * GH : NULL;
  float *da[2] = {dg + M * GH + (cell->extra ? M * H : 0), NULL};
  da[1] = da[0] + M * nmax;
  float *dh = da[1] + M * nmax, *dc = dh + BH, *tmp = dc + BH;
  st = dy_t ? PD_GPU_LAUNCH_N(c, M * DH, transpose_bt, da[0], PD_DATA(dy_t, float), B, Tn, DH, true)
            : pd_gpu_zero(c, da[0], (size_t)(M * DH) * fb);
  int cur = 0;
  for (int64_t l = d.L - 1; l >= 0 && !st; l--) {
    const float *in = l ? res + rnn_off_out(&d, l - 1) : res + rnn_off_xtm(&d);
    int64_t nin = l ? DH : d.I;
    bool want_din = l > 0 || dx_t;
    for (int64_t dir = 0; dir < d.dirs && !st; dir++) {
      int64_t k = l * d.dirs + dir;
      bool rev = d.reverse || dir == 1;
      const float *w = l ? PD_DATA(wl_t, float) + ((l - 1) * d.dirs + dir) * GH * DH : w0 + dir * GH * d.I;
      const float *wb = b_t ? PD_DATA(b_t, float) + k * 2 * GH : NULL, *r = rw + k * GH * H;
      const float *g = res + rnn_off_g(&d, k), *hs = res + rnn_off_h(&d, k);
      const float *cs = cell->has_c ? res + rnn_off_c(&d, k) : NULL;
      const float *ex = cell->extra ? res + rnn_off_ex(&d, k) : NULL;
      st = dht_t ? pd_gpu_copy(c, dh, PD_DATA(dht_t, float) + k * BH, (size_t)BH * fb)
                 : pd_gpu_zero(c, dh, (size_t)BH * fb);
      if (!st && cs)
        st = dct_t ? pd_gpu_copy(c, dc, PD_DATA(dct_t, float) + k * BH, (size_t)BH * fb)
                   : pd_gpu_zero(c, dc, (size_t)BH * fb);
      gstep s;
      /* the backward freezes rows by their length alone (no sorted flag) */
      gstep_init(&s, &d, len_t ? PD_DATA(len_t, int64_t) : NULL, NULL, wb ? wb + GH : NULL,
                 p_t ? PD_DATA(p_t, float) + k * 3 * H : NULL);
      s.dh = dh, s.dc = cs ? dc : NULL, s.t = tmp, s.ldt = H;
      for (int64_t q = Tn - 1; q >= 0 && !st; q--) {
        int64_t p = rev ? Tn - 1 - q : q, prev = rev ? p + 2 : p;
        s.p = p;
        s.g = (float *)(g + p * B * GH), s.hp = hs + prev * BH, s.h = (float *)(hs + (p + 1) * BH);
        s.cp = cs ? cs + prev * BH : NULL, s.c = cs ? (float *)(cs + (p + 1) * BH) : NULL;
        s.ex = ex ? (float *)(ex + p * BH) : NULL;
        s.dg = dg + p * B * GH, s.dex = dex ? dex + p * BH : NULL;
        s.dy = da[cur] + p * B * DH + dir * H;
        if (d.G == 3) {
          const float *rn = r + 2 * H * H;
          st = gpu_launch_step(c, gru_zn_k, s);
          if (!st && d.variant) st = pd_gpu_gemm(c, false, false, B, H, H, 1, s.dex, H, rn, H, 1, dh, H);
          if (!st && !d.variant) st = pd_gpu_gemm(c, false, false, B, H, H, 1, s.dg + 2 * H, GH, rn, H, 0, tmp, H);
          if (!st && !d.variant) st = gpu_launch_step(c, gru_r_k, s);
          if (!st) st = pd_gpu_gemm(c, false, false, B, H, 2 * H, 1, s.dg, GH, r, H, 1, dh, H);
        } else {
          st = gpu_launch_step(c, d.G == 4 ? lstm_bwd_k : rnn_bwd_k, s);
          if (!st) st = pd_gpu_gemm(c, false, false, B, H, GH, 1, s.dg, GH, r, H, 1, dh, H);
        }
      }
      if (!st && dh0_t) st = pd_gpu_copy(c, PD_DATA(dh0_t, float) + k * BH, dh, (size_t)BH * fb);
      if (!st && dc0_t) st = pd_gpu_copy(c, PD_DATA(dc0_t, float) + k * BH, dc, (size_t)BH * fb);
      if (!st && dp_t)
        st = s.peep ? PD_GPU_LAUNCH_N(c, 3 * H, lstm_dpeep_k, PD_DATA(dp_t, float) + k * 3 * H, dg, cs, B, Tn, H, rev)
                    : pd_gpu_zero(c, PD_DATA(dp_t, float) + k * 3 * H, (size_t)(3 * H) * fb);
      if (!st) st = gpu_weight_grads(c, cell, &d, l, k, in, nin, hs + (rev ? 2 : 0) * BH, ex, dg, dex);
      if (!st && want_din)
        st = GH ? pd_gpu_gemm(c, false, false, M, nin, GH, 1, dg, GH, w, nin, dir ? 1 : 0, da[!cur], nin) : PD_OK;
    }
    if (want_din) cur = !cur;
  }
  if (!st && dx_t) st = PD_GPU_LAUNCH_N(c, M * d.I, transpose_bt, PD_DATA(dx_t, float), da[cur], B, Tn, d.I, false);
  return st;
}
