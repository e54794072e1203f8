/* block.h — the sub-blocks of a NetDesc (NetDesc.block, docs/netdesc.md,
 * "Blocks"): their structure is checked when a net is loaded, before the
 * top-level variables and ops are built; then each block an op names is
 * built into a net of its own (pd_block), whose variables are the block's
 * locals, the values the op feeds it, and the variables of enclosing blocks
 * it reads (bound to the enclosing net's tensors when it runs: a step
 * scope's look-up in its parent). The op (recurrent, if_else) runs the
 * block's ops itself with pd_block_run. */
#ifndef PD_BLOCK_H
#define PD_BLOCK_H

#include "core/net.h"

/* Checks net->desc's blocks, in this order, the first failure an input
 * error at the file position it is about: every block has a non-empty name
 * of its own; every attribute naming a block (AttrValue.block) names a
 * declared one, not the block its op is in; each block is run by exactly one
 * op and reached from the top-level ops (no cycle); no block redeclares a
 * variable of an enclosing block, and a parameter (kind PARAM) declared in a
 * block, which lives in the outermost scope, has a name no other block and
 * no top-level declaration uses. Then each block's variables and ops get the
 * checks of the top level (pd_net_build_desc), with messages naming the
 * block: `net.pbtxt:41:5: block "cell", op #2 "fc": ...`. */
pd_status pd_blocks_check(pd_net *net, pd_error *err);

/* Builds net->desc's variables and ops into net with the checks of a net's
 * loading (declarations, op types, slots, attributes). Defined in net.c;
 * pd_blocks_check runs it for each block on a scratch net. */
pd_status pd_net_build_desc(pd_net *net, pd_error *err);
/* Its two halves: the declarations, then the ops. */
pd_status pd_net_build_desc_vars(pd_net *net, pd_error *err);
pd_status pd_net_build_desc_ops(pd_net *net, pd_error *err);

/* ---- a block built for the op that runs it ---- */

/* How deep blocks may nest (a block run by an op of a block run by ...):
 * protobuf's own limit on nested messages. */
#define PD_MAX_BLOCK_DEPTH 100

typedef struct pd_block {
  char *name;
  int index;          /* in NetDesc.block */
  pd_net *net;        /* its variables and ops: [0, net->n_forward) forward, then the gradient ops */
  pd_net *parent;     /* the net of the op running it */
  int nfeed, *feed;   /* variables the op gives values (block_feeds), in its order */
  int nouter, *outer; /* variables of enclosing blocks it reads, in the order of the op's Outer slot */
  int *outer_parent;  /* their indices in the parent net */
  bool *local;        /* per variable: has a value of its own per run (not outer) */
  pd_tensor *shapes;  /* per variable: the shapes of the last pd_block_infer (no storage) */
  pd_tensor **bind;   /* per variable: scratch for a binding */
  int nvars_built;    /* variables that local, shapes and bind cover */
  /* after pd_block_add_backward: the variables whose gradients the op gives
   * (seed_grad[i]: where it writes the gradient of seed[i]) and takes
   * (want_grad[i]: the gradient of want[i], -1 if it has none: zero) */
  bool backward;
  int nseed, *seed, *seed_grad;
  int nwant, *want, *want_grad;
  double *op_seconds;          /* per op: kernel time summed while exec.time_ops is set (`time`); NULL until then */
  struct pd_block_plan *plans; /* how pd_block_run runs a range of its ops side by side, per range and threads */
  int nplans;
  void *rt;                /* the running op's own (its layout of the steps) */
  void (*rt_free)(void *); /* frees rt */
} pd_block;

/* Builds block `name` of the root NetDesc for an op of `parent` with the
 * given feeds (once per block: a second call returns the same block). */
pd_status pd_block_get(pd_net *parent, const char *name, const char *const *feeds, int nfeed, pd_block **out,
                       pd_error *err);
void pd_block_free(pd_block *b);

/* Binds the block's outer variables to the running op's tensors: slot
 * `outer_slot` of the op (c) lists them in the block's order. Feeds and
 * locals are the caller's to bind (b->bind). */
void pd_block_bind_outer(pd_block *b, pd_ctx *c, int outer_slot, pd_tensor **bind);
/* Runs the shape functions of ops [begin, end) over bind; locals not bound
 * by the caller are bound to b->shapes. When the shapes hold the batch as -1
 * (the net's load) the block's own variables take them too (kernel choice,
 * FLOPs). Errors name the block and op. */
pd_status pd_block_infer(pd_block *b, pd_ctx *c, pd_tensor **bind, int begin, int end);
/* Runs the kernels of ops [begin, end) over bind, as run number `run` of
 * the block in this step of the net (a recurrent op's time step): a random
 * op of the block draws its own numbers for each run and each block, never
 * those of another (the seed its ops see is the net's mixed with the
 * block's index and the run). On the CPU with more than one thread, ops
 * that do not depend on each other may run side by side, one thread each
 * (block.c, "Ops side by side"), as planned from the net and the thread
 * count alone: a rerun on as many threads gives the same bits. */
pd_status pd_block_run(pd_block *b, pd_ctx *c, pd_tensor **bind, int begin, int end, int64_t run);
/* The same for the ops o of [begin, end) with only[o] (indexed by op). */
pd_status pd_block_run_only(pd_block *b, pd_ctx *c, pd_tensor **bind, int begin, int end, const bool *only,
                            int64_t run);
/* Whether op o of the block ran side by side with others in a run so far
 * (`time` says so: their times overlap). */
bool pd_block_side_by_side(const pd_block *b, int o);
/* Op o's level in the first plan that has it (ops of a level do not depend
 * on each other; a level runs after the one before), -1 if none has. */
int pd_block_level(const pd_block *b, int o);
/* FLOPs of ops [begin, end) over bind. */
double pd_block_flops(pd_block *b, pd_tensor **bind, int begin, int end);
/* AddBackwardOps inside the block: the gradient ops from the seeds (whose
 * gradients the op gives) to the wants (whose gradients it takes). Once;
 * the op's grad shape function calls it. */
pd_status pd_block_add_backward(pd_block *b, const int *seeds, int nseeds, const int *wants, int nwants, pd_error *err);
/* After pd_block_add_backward: the seeds' gradients take their variables'
 * shapes in bind (b->shapes); the gradient of want v (-1: none); the
 * gradient output (slot douter_slot of the grad op c) of the block's outer
 * variable i, NULL when none is asked for. */
void pd_block_seed_shapes(pd_block *b, pd_tensor **bind);
int pd_block_want_grad(const pd_block *b, int v);
pd_tensor *pd_block_outer_grad(const pd_block *b, pd_ctx *c, int outer_slot, int douter_slot, int i);

/* For laying out a block's values in one buffer: n rounded up to 64 bytes;
 * a shape's bytes with the batch (-1) taken as 1 (0 when it overflows); the
 * bytes of one row (dims[0]) of t. */
static inline size_t pd_block_align(size_t n) { return (n + 63) & ~(size_t)63; }
size_t pd_block_bytes1(const pd_tensor *t);
static inline size_t pd_row_bytes(const pd_tensor *t) {
  return t->dims[0] ? pd_tensor_bytes(t) / (size_t)t->dims[0] : 0;
}
/* dst[e] += src[e] for n elements of a float dtype (a gradient summed over
 * steps or branches). */
void pd_block_add_into(void *dst, const void *src, int64_t n, pd_dtype dt);

/* The block variable named `name`, -1 if none. */
int pd_block_var(const pd_block *b, const char *name);

#endif
