/* rnn_layout.h — what the fused recurrent ops' CPU driver (rnn_core.c) and
 * GPU driver (rnn_core.cu) share: the cell's description, the dimensions of
 * a call and the layout of the Reserve buffer, so that the two sides' saved
 * values mean the same. Plain C that nvcc also builds (no CPU BLAS here). */
#ifndef PD_OPS_RNN_LAYOUT_H
#define PD_OPS_RNN_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The slots every fused recurrent op has, at these indices; the op's own
 * (lstm's C0, P, CT) come in its pd_rnn_cell's slot numbers. */
enum { RNN_X, RNN_W, RNN_R, RNN_B, RNN_LENGTHS, RNN_H0 };
enum { RNN_Y, RNN_HT };
/* The attributes every one has, at these indices; the op's own after. */
enum { RNN_A_HIDDEN, RNN_A_LAYERS, RNN_A_DIRECTION, RNN_A_CLIP, RNN_A_OWN };

/* the CPU cells' step structs (rnn_step_t.h) */
typedef struct pd_rnn_step_float pd_rnn_step_float;
typedef struct pd_rnn_step_double pd_rnn_step_double;

typedef struct pd_rnn_cell {
  int gates;  /* G: gate blocks of H rows in W, R and each half of B */
  bool has_c; /* a cell state (C0, CT, the Cs part of Reserve) */
  bool extra; /* a [T, B, H] per-step value kept (GRU: h R_n^T + Rb_n, or r * h) */
  int split;  /* the gate rows whose dR is dG^T h_prev and whose Rb folds into the projection */
  int in_c0, in_p, in_wl, out_ct, out_reserve; /* slot numbers; -1: none */
  void (*fwd_float)(pd_rnn_step_float *s);
  void (*fwd_double)(pd_rnn_step_double *s);
  void (*bwd_float)(pd_rnn_step_float *s);
  void (*bwd_double)(pd_rnn_step_double *s);
  /* float steps on pd_rnn_packed (s->pk), or NULL: the driver uses them when
   * a call has enough steps to pay for packing R. fwd_packed: one step of
   * hidden blocks [hb0, hb1) of every row (products, gate pass, h packed
   * for the next step); bwd_packed: a step's gate pass of batch panels
   * [p0, p1), their gate gradients packed into pk->a[0] for the driver's
   * product dh += A R. The driver puts them on the pool (rnn_core.c). */
  void (*fwd_packed)(pd_rnn_step_float *s, int64_t hb0, int64_t hb1);
  void (*bwd_packed)(pd_rnn_step_float *s, int64_t p0, int64_t p1);
  int packed_variants; /* bit v set: calls with variant v may take them (gru: linear_before_reset only) */
} pd_rnn_cell;

typedef struct rnn_dims {
  int64_t B, Tn, I, H, L, dirs, G, GH, DH;
  bool reverse; /* direction "reverse" (bidirectional: direction 1 runs reversed) */
  double clip;
  int variant;
  int64_t fold;  /* the gate rows whose Rb the projection adds */
  int64_t split; /* the gate rows whose dR is dG^T h_prev (pd_rnn_cell.split) */
  bool has_c, extra;
  const int64_t *len; /* the CPU's lengths (host memory), or NULL */
  bool sorted;        /* lengths non-increasing: the active rows are a prefix */
  int n_in, n_out;
} rnn_dims;

static inline const pd_rnn_cell *rnn_cell_of(pd_ctx *c) { return (const pd_rnn_cell *)c->op->def->data; }

static inline void rnn_dims_of(pd_ctx *c, const pd_rnn_cell *cell, const pd_tensor *x, rnn_dims *d) {
  memset(d, 0, sizeof *d);
  d->B = x->ndim == 3 ? x->dims[0] : -1, d->Tn = x->ndim == 3 ? x->dims[1] : -1, d->I = x->ndim == 3 ? x->dims[2] : -1;
  d->H = pd_attr_i(c, RNN_A_HIDDEN), d->L = pd_attr_i(c, RNN_A_LAYERS);
  const char *dir = pd_attr_s(c, RNN_A_DIRECTION);
  d->dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
  d->reverse = !strcmp(dir, "reverse");
  d->G = cell->gates, d->GH = d->G * d->H, d->DH = d->dirs * d->H;
  d->clip = pd_attr_f(c, RNN_A_CLIP);
  if (c->op->def->n_attrs > RNN_A_OWN) {
    const pd_attr *a = pd_attr_at(c, RNN_A_OWN);
    d->variant = a->type == PD_ATTR_STRING ? !strcmp(a->s, "relu") : (int)a->i;
  }
  d->split = cell->split ? cell->split * d->H : d->GH;
  d->fold = d->split < d->GH && d->variant ? d->split : d->GH;
  d->has_c = cell->has_c, d->extra = cell->extra;
}

/* Reserve, in elements: X time-major, the output of each layer but the
 * last (the next layer's input, [T, B, DH]; the last writes Y in place),
 * then per layer and direction the gates [T, B, GH], the states
 * [T+2, B, H] (slot p+1 after step p, slot 0 / T+1 the initial state of a
 * forward / reverse direction, the other end slot zero), the cell states
 * likewise and the cell's kept value [T, B, H]. */
static inline int64_t rnn_off_xtm(const rnn_dims *d) { return 0 * d->Tn; }
static inline int64_t rnn_off_out(const rnn_dims *d, int64_t l) { return d->Tn * d->B * (d->I + l * d->DH); }
static inline int64_t rnn_ld_size(const rnn_dims *d) {
  return d->Tn * d->B * d->GH + (d->Tn + 2) * d->B * d->H * (1 + d->has_c) + (d->extra ? d->Tn * d->B * d->H : 0);
}
static inline int64_t rnn_off_g(const rnn_dims *d, int64_t k) { return rnn_off_out(d, d->L - 1) + k * rnn_ld_size(d); }
static inline int64_t rnn_off_h(const rnn_dims *d, int64_t k) { return rnn_off_g(d, k) + d->Tn * d->B * d->GH; }
static inline int64_t rnn_off_c(const rnn_dims *d, int64_t k) { return rnn_off_h(d, k) + (d->Tn + 2) * d->B * d->H; }
static inline int64_t rnn_off_ex(const rnn_dims *d, int64_t k) {
  return rnn_off_h(d, k) + (d->Tn + 2) * d->B * d->H * (1 + d->has_c);
}

/* The GPU float32 kernels (rnn_core.cu) the three ops register. */
pd_status pd_gpu_rnn_forward(pd_ctx *c);
pd_status pd_gpu_rnn_backward(pd_ctx *c);

#ifdef __cplusplus
}
#endif

#endif
