/* recurrent.h — the recurrent op's slots and attributes, shared by its
 * files. Included by recurrent's own files only: the short slot names would
 * clash between ops. */
#ifndef PD_OPS_RECURRENT_H
#define PD_OPS_RECURRENT_H

#include "core/op.h"

enum { X, H0, LENGTHS, OUTER, N_IN };
enum { OUT, HT, STEPS, N_OUT };
enum { A_BLOCK, A_INPUTS, A_PREV, A_STATES, A_OUTPUTS, A_REVERSE };

/* Grad op slots (see op.h). */
enum {
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_H0 = PD_GRAD_X(N_IN, N_OUT, H0),
  G_LENGTHS = PD_GRAD_X(N_IN, N_OUT, LENGTHS),
  G_OUTER = PD_GRAD_X(N_IN, N_OUT, OUTER),
  G_OUT_Y = PD_GRAD_Y(N_IN, N_OUT, OUT),
  G_HT_Y = PD_GRAD_Y(N_IN, N_OUT, HT),
  G_STEPS = PD_GRAD_Y(N_IN, N_OUT, STEPS),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT),
  G_DHT = PD_GRAD_DY(N_IN, N_OUT, HT),
  G_DX = PD_GRAD_DX(N_IN, N_OUT, X),
  G_DH0 = PD_GRAD_DX(N_IN, N_OUT, H0),
  G_DOUTER = PD_GRAD_DX(N_IN, N_OUT, OUTER),
};

/* The op's moves of rows, on its place (recurrent.c on the CPU,
 * recurrent.cu on the GPU): for r < rows, dst's row r (at dst + r dpitch
 * bytes) gets src's row r, or zeros where src is NULL; with len, a row
 * whose length is p or less (step p is past its end) gets alt's row
 * instead, or zeros where alt is NULL; add: dst += the row instead (float
 * dtypes). A row is `width` bytes; len lives where the tensors do. */
typedef struct pd_rec_rows {
  void *dst;
  const void *src, *alt;
  size_t dpitch, spitch, apitch, width;
  int64_t rows;
  const int64_t *len;
  int64_t p;
  bool add;
  pd_dtype dtype;
} pd_rec_rows;

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_recurrent_rows(pd_ctx *c, const pd_rec_rows *m);
/* Raises a fault (gpu/fault.h) for a length outside [0, T]. */
pd_status pd_gpu_recurrent_check_lengths(pd_ctx *c, const int64_t *len, int64_t rows, int64_t T);
#ifdef __cplusplus
}
#endif

#endif
