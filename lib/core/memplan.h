/* memplan.h — the memory plan of a run: temporaries whose lifetimes do not
 * overlap share one buffer.
 *
 * A variable's lifetime is the span of active ops from the first that writes
 * it to the last that reads it, inclusive: an op's outputs share no buffer
 * with its inputs, except where the op declares it can work in place
 * (pd_op_def.inplace: the activations, Out over X and dX over dOut) and the
 * input's value dies at that op. Outputs that a
 * view op (reshape, flatten, identity: pd_op_def.views) makes share its
 * input's storage form one group with one lifetime. What is planned: temporaries
 * written by an active op, except those the caller keeps (fetched after the
 * run) and, for a training step, every forward output, so that after a
 * non-finite loss each forward value is still there to name the op that
 * made it. A variable read before the op that first writes it (a value
 * carried from the last run) is not planned.
 *
 * The structure (who may share) is fixed at pd_memplan_init; the assignment
 * depends on the sizes and is redone by pd_memplan_assign whenever the shapes
 * change (a short last batch), without allocating: greedy in op order, a
 * group taking its in-place input's buffer when it may (and it holds it),
 * else the smallest free buffer that holds it, else growing the largest
 * free one, else a new buffer. */
#ifndef PD_MEMPLAN_H
#define PD_MEMPLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "core/tensor.h"

struct pd_net;

typedef struct pd_memplan {
  int nvars, ngroups, nbufs;
  int *group;     /* per variable: its group, -1: not planned (its own storage) */
  int *first;     /* per group: the op that first writes it */
  int *last;      /* per group: the last op that reads (or writes) it */
  int *from;      /* per group: the group whose buffer it may take over in place at its first op, -1: none */
  int *order;     /* groups by first op, then index */
  int *buf;       /* per group: its buffer after pd_memplan_assign */
  size_t *need;   /* per group: bytes at the assigned shapes */
  size_t *bytes;  /* per buffer: what it must hold */
  int *until;     /* per buffer: the last op of the groups it holds (scratch) */
  size_t naive;   /* the planned variables' bytes, each on its own */
  size_t planned; /* the buffers' bytes */
} pd_memplan;

/* keep[v] (may be NULL): variables left out (read after the run).
 * keep_forward: leave out every output of the forward ops [0, n_forward). */
pd_status pd_memplan_init(pd_memplan *p, const struct pd_net *net, const bool *active, const bool *keep,
                          bool keep_forward, pd_error *err);
/* Assigns buffers for the shapes in shapes[v] (dims must be known for the
 * planned variables). Allocates nothing. */
void pd_memplan_assign(pd_memplan *p, pd_tensor *const *shapes);
/* The buffer of variable v, -1 when v is not planned. */
static inline int pd_memplan_buf(const pd_memplan *p, int v) { return p->group[v] < 0 ? -1 : p->buf[p->group[v]]; }
void pd_memplan_free(pd_memplan *p);

#endif
