/* exec.h — the settings a network runs under (training or inference, the
 * seed and step for random ops, threads). Kernels read them through pd_ctx. */
#ifndef PD_EXEC_H
#define PD_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

typedef struct pd_exec {
  bool training;
  uint64_t seed;
  int64_t step;
  int threads;
  pd_place place;
  bool time_ops; /* ops running blocks time the blocks' ops too (pd_block.op_seconds): `time` */
} pd_exec;

#endif
