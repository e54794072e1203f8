/* rnn_step_t.h — one step of a fused recurrent op for one element type T
 * (base/tmpl.h), the struct the driver (rnn_core_t.h) hands a cell, and
 * what every cell does with a frozen row. Included by rnn_core.h. */

typedef struct PD_T(pd_rnn_step) {
  int64_t batch, nact, hidden, gh; /* rows; rows 0..nact-1 may be active (the rest are frozen); H; G*H */
  int64_t p;                       /* the time step */
  const int64_t *len;              /* per-row lengths, NULL: all rows have every step */
  T *g;                            /* [batch, gh]: forward: x W^T + biases on entry, activated gates on exit */
  const T *hp, *cp;                /* previous states [batch, H] (cp NULL without a cell state) */
  T *h, *c;                        /* new states [batch, H] */
  T *ex;                           /* the cell's kept per-step value [batch, H], or NULL */
  T *y;                            /* the layer output at p: row b at y + b * ldy */
  int64_t ldy;
  const T *r;                   /* R of this direction [gh, H] */
  const T *rb;                  /* Rb of this direction [gh], or NULL (the part past `split` is the cell's) */
  const T *peep;                /* lstm's P of this direction [3H] (i, o, f), or NULL */
  T clip;                       /* 0: none */
  T bound;                      /* clip, or infinity for none */
  T clo_s, chi_s, clo_t, chi_t; /* sigmoid and tanh of -clip, clip: a kept gate there was clipped */
  int variant;                  /* rnn: 1 relu; gru: linear_before_reset */
  /* backward */
  T *dg;             /* [batch, gh] out: the gate pre-activations' gradients */
  T *dh, *dc;        /* the states' gradients [batch, H], from step p+1 on entry, for step p-1 on exit */
  const T *dy;       /* the layer output's gradient at p: row b at dy + b * ldy */
  T *dex;            /* [batch, H] out: the gradient of ex (gru) */
  T *dpeep;          /* [3H] in/out: P's gradient, summed */
  T *tmp;            /* [batch, H] scratch */
  pd_rnn_packed *pk; /* float: the packed product (cell's fwd_packed / bwd_packed), else NULL */
  int cur;           /* forward on pk: h_prev packed in pk->a[cur], h packed into pk->a[!cur] */
} PD_T(pd_rnn_step);

static inline bool PD_T(pd_rnn_active)(const PD_T(pd_rnn_step) * s, int64_t b) {
  return b < s->nact && (!s->len || s->p < s->len[b]);
}

/* Forward of a row past its length: state carried, output 0. */
static inline void PD_T(pd_rnn_frozen)(PD_T(pd_rnn_step) * s, int64_t b) {
  int64_t H = s->hidden;
  for (int64_t j = 0; j < H; j++) {
    s->h[b * H + j] = s->hp[b * H + j];
    s->y[b * s->ldy + j] = 0;
  }
  if (s->c)
    for (int64_t j = 0; j < H; j++) s->c[b * H + j] = s->cp[b * H + j];
}

/* Backward of a row past its length: no gate gradient, dh and dc pass on. */
static inline void PD_T(pd_rnn_frozen_grad)(PD_T(pd_rnn_step) * s, int64_t b) {
  for (int64_t j = 0; j < s->gh; j++) s->dg[b * s->gh + j] = 0;
  if (s->dex)
    for (int64_t j = 0; j < s->hidden; j++) s->dex[b * s->hidden + j] = 0;
}

/* A gate pre-activation bounded by the clip attribute (bound: clip, or
 * infinity for none). */
static inline T PD_T(pd_rnn_bound)(T x, T bound) { return x < -bound ? -bound : x > bound ? bound : x; }
static inline T PD_T(pd_rnn_clip)(const PD_T(pd_rnn_step) * s, T x) { return PD_T(pd_rnn_bound)(x, s->bound); }

/* The cells' activations, branch-free so that a row's loop vectorises. */
static inline T PD_T(pd_rnn_sigmoid)(T x) { return 1 / (1 + PD_T(pd_rnn_exp)(-x)); }

/* 0 where the clip attribute bounded the pre-activation of a kept gate
 * value a (it sits at sigmoid or tanh of +-clip: lo, hi), else 1; always 1
 * without a clip. Bounds passed by value, so a row's loop keeps them in
 * registers. */
static inline T PD_T(pd_rnn_keep)(T a, T lo, T hi) { return ((a <= lo) | (a >= hi)) ? 0 : 1; }
