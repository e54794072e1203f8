/* place.h — a place (the CPU, a GPU) as the core sees it: a small table of
 * functions for its memory (allocate, free, copy) and for a runner on it
 * (attach, detach, stage, prepare, run, fetch), in the spirit of ggml's
 * backend interface. The tensor and the runner call through the table, so
 * core/ never calls into a device layer: the CPU's table is built in, and
 * the GPU layer registers its own when it opens a device (pd_gpu_open,
 * lib/gpu/gpu.c). A place with no table registered cannot be allocated on
 * or run on. */
#ifndef PD_PLACE_H
#define PD_PLACE_H

#include <stddef.h>

#include "base/error.h"
#include "core/tensor.h"

struct pd_runner;

/* A runner on a place whose kernels do not run on the host tensors (a
 * device): every member is set. The runner calls attach when placed there
 * and detach when placed elsewhere or freed; stage, prepare and run for each
 * run (stage only if pd_runner_stage did not already), fetch when asked for
 * a variable's value. The CPU has none: the runner runs kernels on its host
 * tensors itself (lib/core/runner.c). */
typedef struct pd_place_runner {
  /* Gives the runner its variables' copies on the place and points r->vars
   * (what the kernels see) at them. */
  pd_status (*attach)(struct pd_runner *r, pd_error *err);
  void (*detach)(struct pd_runner *r);
  /* Copies the host-fed variables (data, @lr, @step) in. */
  pd_status (*stage)(struct pd_runner *r, pd_error *err);
  /* Shapes and outputs for a new batch shape (pd_runner_alloc_outputs, or
   * more). */
  pd_status (*prepare)(struct pd_runner *r, pd_error *err);
  /* Runs (or queues) the active ops of [begin, end). */
  pd_status (*run)(struct pd_runner *r, int begin, int end, pd_error *err);
  /* Copies variable v back into its host tensor r->t[v]. */
  pd_status (*fetch)(struct pd_runner *r, int v, pd_error *err);
} pd_place_runner;

typedef struct pd_place_ops {
  const char *name; /* in messages: "CPU", "GPU" */
  /* At least `bytes`, zero-filled, the real size in *cap; NULL with err set
   * (the size, `what` is for, and why) when it cannot. */
  void *(*alloc)(size_t bytes, size_t *cap, const char *what, pd_error *err);
  void (*free)(void *p, size_t cap);
  /* Copies bytes between this place and the host, or within this place;
   * done when it returns. */
  pd_status (*copy)(void *dst, pd_place dplace, const void *src, pd_place splace, size_t bytes, pd_error *err);
  const pd_place_runner *runner; /* NULL on the CPU */
} pd_place_ops;

/* Makes ops the table of every place of that kind (NULL: none). The table
 * must live as long as anything uses the place. Not for the CPU's. */
void pd_place_register(pd_place_kind kind, const pd_place_ops *ops);
/* The table of a kind of place; NULL when none is registered. */
const pd_place_ops *pd_place_ops_of(pd_place_kind kind);
/* "CPU", "GPU": the kind's name in messages, registered or not. */
const char *pd_place_kind_name(pd_place_kind kind);

#endif
