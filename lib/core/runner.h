/* runner.h — a net bound to a Scope and run on a place (seed 004's
 * Run(scope, begin, end)). On the CPU the runner runs the kernels on the
 * scope's tensors itself; on another place it calls that place's runner
 * hooks (place.h), which the place's layer registers. */
#ifndef PD_RUNNER_H
#define PD_RUNNER_H

#include <stdbool.h>

#include "core/exec.h"
#include "core/net.h"
#include "core/place.h"
#include "core/scope.h"

typedef struct pd_runner {
  pd_net *net;
  pd_scope *scope;
  pd_exec exec;
  pd_tensor **t;      /* per variable: the tensor in the scope */
  pd_tensor **vars;   /* per variable: what the kernels see (t, or d on a device) */
  bool *active;       /* per op: part of this run (pruning) */
  int64_t *shape_key; /* data dims the shapes were last inferred for */
  bool shapes_ok;
  double *op_seconds;           /* when set (nops entries): each op's kernel time is stored here */
  const pd_place_runner *hooks; /* how it runs on its place (the CPU's own in runner.c) */
  /* On a GPU place (pd_runner_set_place): per variable, its device copy,
   * which kernels see; t[] stays the host side (data fed in, values
   * fetched, parameters initialised, loaded and saved). NULL on the CPU. */
  pd_tensor **d;
  void *place_data; /* the place's own state for this runner (the GPU's staging buffers and CUDA graph) */
  bool staged;      /* the host-fed variables were staged ahead (pd_runner_stage) */
  /* The memory plan (pd_runner_plan_memory), on the CPU: the planned
   * temporaries use bufs[their buffer]'s storage. */
  struct pd_memplan *plan;
  pd_tensor *bufs;
} pd_runner;

/* Binds the net to a scope: every variable gets a tensor there (persistable
 * ones keep what the scope already holds). active may be NULL (all ops). */
pd_status pd_runner_init(pd_runner *r, pd_net *net, pd_scope *scope, const bool *active, pd_error *err);
void pd_runner_free(pd_runner *r);
/* After data tensors were set: infers shapes for the batch (only when the
 * data dims changed) and allocates outputs (grow-only). */
pd_status pd_runner_prepare(pd_runner *r, pd_error *err);
/* Runs the active ops' shape functions over r->vars and allocates their
 * outputs (grow-only): what a device's prepare hook does. */
pd_status pd_runner_alloc_outputs(pd_runner *r, pd_error *err);
/* Plans this runner's memory (lib/core/memplan.h): from the next prepare on, the
 * temporaries whose lifetimes do not overlap share buffers. keep[0..nkeep):
 * variables read after a run (fetched); keep_forward: every forward output
 * stays readable after a training step (to name the op of a non-finite
 * loss). CPU only: a runner on a GPU place keeps one tensor per variable. */
pd_status pd_runner_plan_memory(pd_runner *r, const int *keep, int nkeep, bool keep_forward, pd_error *err);
/* Run(scope, begin, end) of seed 004: runs the active ops in [begin, end).
 * On a GPU it only queues the work: read results through pd_runner_fetch. */
pd_status pd_runner_run(pd_runner *r, int begin, int end, pd_error *err);
/* On a GPU: starts copying the host-fed variables (data, @lr, @step), as
 * they are now, to the device for the next pd_runner_run, which then does
 * not copy them again; the copy overlaps the step still running. The host
 * tensors may be refilled right after. On the CPU: nothing. */
pd_status pd_runner_stage(pd_runner *r, pd_error *err);
/* Places the runner (before its first run; the place must be open, e.g.
 * pd_gpu_open): on a GPU every op runs its {GPU, dtype} kernel on device
 * copies of the variables; persistables are uploaded once from the host
 * tensors. */
pd_status pd_runner_set_place(pd_runner *r, pd_place place, pd_error *err);
/* Makes the host tensor t[v] hold the variable's current value: on a GPU a
 * copy back from the device (waiting for the step), on the CPU nothing. */
pd_status pd_runner_fetch(pd_runner *r, int v, pd_error *err);
/* The same for every parameter and state variable (before a save). */
pd_status pd_runner_fetch_persistables(pd_runner *r, pd_error *err);

#endif
