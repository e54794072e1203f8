/* fault.h — the device's fault record: what a GPU kernel found wrong in
 * its inputs where the CPU kernel fails the op (adam's Step below 1, a
 * label outside [0, C)). One record in device memory, the first raise wins
 * (gpu_common.cuh's pd_gpu_raise*). The device cannot fail the op itself,
 * so the runner reads the record back with its next fetch, which already
 * waits for the step, and fails it with pd_gpu_fault_fail: the CPU
 * kernel's message and status. Plain C without CUDA, so that the message
 * is built (and tested) on any machine. */
#ifndef PD_GPU_FAULT_H
#define PD_GPU_FAULT_H

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  PD_GPU_FAULT_STEP = 1,    /* an update count t < 1 (or NaN): value */
  PD_GPU_FAULT_LABEL = 2,   /* a class label outside [0, C): label, row, limit = C, per_row */
  PD_GPU_FAULT_ID = 3,      /* an embedding id outside [0, V): label = the id, row = its flat position,
                             * limit = V, per_row = positions per batch row */
  PD_GPU_FAULT_LENGTH = 4,  /* a sequence length outside [lo, time]: label = the length, row,
                             * limit = time, per_row = lo (0 or 1) */
  PD_GPU_FAULT_NO_STEP = 5, /* sequence_mean: every length is 0 */
  PD_GPU_FAULT_ROWS = 6,    /* a row list entry not ascending in [0, V) nor a trailing -1: label = the
                             * value, row = the entry, limit = V (Param in input slot 0) */
  PD_GPU_FAULT_WINDOW = 7   /* slice: a start outside its dim: label = the start, row = its entry of
                             * Starts, limit = the dim's size, per_row = the window's, value = the dim */
};

/* The layout is shared by the host compiler and nvcc: fixed-size fields. */
typedef struct pd_gpu_fault {
  unsigned int raised;      /* 0, or 1 once a kernel raised it */
  int code;                 /* PD_GPU_FAULT_* */
  int slot;                 /* the op's input slot holding the bad value */
  unsigned int blocks;      /* scratch of pd_gpu_raise_label: blocks of the launch done */
  unsigned long long op;    /* the raising op: the host address of its pd_op */
  double value;             /* STEP: the bad value */
  long long label;          /* LABEL: the bad label (exact: no double) */
  long long row;            /* LABEL: its row of the scores [rows, C] (rows flattened) */
  long long limit;          /* LABEL: C, the number of classes */
  long long per_row;        /* LABEL, scores [batch, time, ..., C]: rows per batch entry; else 0 */
  unsigned long long first; /* scratch of pd_gpu_raise_label: ~0 - its lowest bad row, or 0 */
} pd_gpu_fault;

/* Fails op c->op as its CPU kernel does for the same bad value: the same
 * message (pd_ctx_fail's, naming the op) and status, and for a label the
 * batch row in c->err->row. c needs only op and err. */
pd_status pd_gpu_fault_fail(pd_ctx *c, const pd_gpu_fault *f);

#ifdef __cplusplus
}
#endif

#endif
