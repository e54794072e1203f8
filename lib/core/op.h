/* op.h — what an operator is (seed 000): a pure description, pd_op_def, with
 * its OpProto (slots and attributes with defaults and ranges), a shape
 * function, kernels keyed by KernelKey {place, dtype}, and a gradient.
 * Each file in ops/ defines one pd_op_def and lists it in ops/ops.def; the
 * registry (registry.c) is built from the table ops/ops.c makes of that list. An instance in a network is
 * a pd_op; kernels and shape functions see it through a pd_ctx. */
#ifndef PD_OP_H
#define PD_OP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PD_MAX_SLOTS 20
#define PD_MAX_ATTRS 16

/* ---- slots (VarProto) ---- */
enum {
  PD_SLOT_DUPLICABLE = 1 << 0,  /* takes one or more variables */
  PD_SLOT_DISPENSABLE = 1 << 1, /* may be left out (or given as "") */
  PD_SLOT_NO_GRAD = 1 << 2,     /* no gradient flows into this input */
  PD_SLOT_PARAM = 1 << 3,       /* a parameter whose shape the op infers */
  PD_SLOT_STATE = 1 << 4,       /* persistable state the op infers and updates in place, not trained
                                   (batch_norm's running mean); starts at the def's state_init */
  PD_SLOT_OUTER = 1 << 5,       /* (an op running blocks) the variables of enclosing blocks its blocks
                                   read: filled in by the core when the NetDesc leaves it out */
  PD_SLOT_STEPS = 1 << 6,       /* an output holding the values kept for the gradient (those an op's
                                   blocks computed): named "<block>@STEPS" by the core, or for an op
                                   without blocks "<first output>@STEPS" */
  PD_SLOT_ROWS_GRAD = 1 << 7,   /* (a PD_SLOT_PARAM input) its gradient may be row-sparse: the grad op
                                   gets an extra output "<slot>@GRAD@ROWS"; when given (the op is the
                                   parameter's only reader, training with an optimizer), x@GRAD holds
                                   only the rows it lists (docs/netdesc.md) */
};

typedef struct pd_slot_def {
  const char *name;
  const char *comment;
  unsigned flags;
} pd_slot_def;

/* ---- attributes (AttrProto) ---- */
typedef enum pd_attr_type {
  PD_ATTR_INT = 0,
  PD_ATTR_FLOAT = 1,
  PD_ATTR_STRING = 2,
  PD_ATTR_INTS = 3,
  PD_ATTR_FLOATS = 4,
  PD_ATTR_STRINGS = 5,
  PD_ATTR_BOOL = 6,
  PD_ATTR_BLOCK = 8, /* names a sub-block of the NetDesc (s); the core resolves it (blk) */
} pd_attr_type;      /* values equal paddle.AttrType */

/* Range checks: PD_GT 0 means "> 0". Applied to a number or to each element. */
typedef enum pd_bound { PD_NONE = 0, PD_GE, PD_GT } pd_bound;

typedef struct pd_attr_def {
  const char *name;
  const char *comment;
  pd_attr_type type;
  bool required; /* no default */
  /* default, as text-format AttrValue body: "i: 1", "f: 0.5", "s: \"relu\"",
   * "ints: [1, 1]", "b: false". */
  const char *def;
  pd_bound min_kind;
  double min;
  pd_bound max_kind; /* PD_GE: <= max, PD_GT: < max */
  double max;
  const char *const *one_of; /* NULL-terminated allowed strings */
} pd_attr_def;

/* A checked attribute value, as the op sees it. */
typedef struct pd_attr {
  pd_attr_type type;
  int64_t i;
  double f;
  bool b;
  const char *s;
  int n;                /* list length */
  int64_t *ints;        /* INTS */
  double *floats;       /* FLOATS */
  const char **strs;    /* STRINGS */
  struct pd_block *blk; /* BLOCK: the block named by s, built by the core (core/block.h) */
} pd_attr;

/* ---- kernels ---- */
typedef struct pd_ctx pd_ctx;
typedef pd_status (*pd_kernel_fn)(pd_ctx *c);

typedef struct pd_kernel_key {
  pd_place_kind place;
  pd_dtype dtype;
} pd_kernel_key;

typedef struct pd_kernel {
  pd_kernel_key key;
  pd_kernel_fn fn;
} pd_kernel;

/* Entries in a static table (slots, attributes, kernels). */
#define PD_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

#define PD_CPU_F32(fn) \
  { {PD_CPU, PD_F32}, fn }
#define PD_CPU_F64(fn) \
  { {PD_CPU, PD_F64}, fn }
#define PD_GPU_F32(fn) \
  { {PD_GPU, PD_F32}, fn }

/* ---- the definition ---- */
/* ---- what the core does with an op (pd_op_def.flags) ---- */
enum {
  PD_OP_UPDATE = 1 << 0,      /* an optimizer's update op (sgd, momentum, adam): what a user's optimizer
                                 name must map to; its state inputs are optimizer state; ends the backward */
  PD_OP_COLLECTIVE = 1 << 1,  /* averages gradients over the ranks (allreduce): what training on several
                                 ranks requires and times; ends the backward */
  PD_OP_GRAD_CLIP = 1 << 2,   /* rewrites all gradients in place before the updates
                                 (clip_by_global_norm); ends the backward */
  PD_OP_STACKS_ROWS = 1 << 3, /* rows of X are independent and its gradient op gives each PD_SLOT_PARAM
                                 input's gradient as a sum over them (fc): run once over the rows of
                                 several runs stacked, it gives the sum of their gradients (a recurrent
                                 op's step block does so after its loop, ops/recurrent.c) */
};
/* The ops that start a net's optimizer section: the backward ends at the
 * first of them (pd_net_find_training). */
#define PD_OP_OPTIMIZER_SECTION (PD_OP_UPDATE | PD_OP_COLLECTIVE | PD_OP_GRAD_CLIP)

typedef struct pd_op_def pd_op_def;
struct pd_op_def {
  const char *type;
  const char *comment;
  const pd_slot_def *inputs;
  int n_inputs;
  const pd_slot_def *outputs;
  int n_outputs;
  const pd_attr_def *attrs;
  int n_attrs;
  /* Sets each output's dtype and dims from the inputs (dims may hold -1 for
   * the batch at load). May also set the shape of PD_SLOT_PARAM inputs that
   * have none (ndim -1), and must check declared ones. */
  pd_kernel_fn infer_shape;
  const pd_kernel *kernels;
  int n_kernels;
  /* The dtype that selects the kernel; NULL: the first present input's. */
  pd_dtype (*kernel_dtype)(pd_ctx *c);
  /* Floating-point operations per run for the current shapes (for `check`
   * and `time`); NULL: counted as one per output element. */
  double (*flops)(pd_ctx *c);
  /* The same for the generated grad op (c is the grad op's context);
   * NULL: one per output element. */
  double (*grad_flops)(pd_ctx *c);
  /* Gradient. When grad_kernels is set, the registry makes the op
   * "<type>_grad" with inputs [fwd inputs..., fwd outputs..., fwd output
   * grads...], outputs [fwd input grads...] and the forward attributes;
   * an input grad not needed is absent (pd_out returns NULL). */
  const pd_kernel *grad_kernels;
  int n_grad_kernels;
  /* Shape function of the grad op; NULL: each input grad takes its input's
   * shape and dtype. */
  pd_kernel_fn grad_infer_shape;
  /* Ops that behave differently when training (dropout, batch_norm) read
   * pd_ctx_training(c); stateful random ops set this to get an RNG stream. */
  bool random;
  /* 1 + the input slot whose storage its kernels make the outputs share
   * (reshape, flatten, identity: X; their generated grad ops: Out@GRAD),
   * 0: none. The memory plan keeps such variables in one buffer
   * (lib/core/memplan.h). */
  int views;
  /* 1 + the input slot whose buffer output 0 may take over when that
   * input's value is last read by this op (kernels computing element i
   * from element i of that input alone, reading before writing: the
   * activations); 0: none. grad_inplace: the same for the generated grad
   * op, whose dX may take dOut's buffer. Used by the memory plan. */
  int inplace;
  bool grad_inplace;
  /* Constant data a family of ops shares kernels through (e.g. which
   * activation relu/sigmoid/tanh compute); the grad op gets the same. */
  const void *data;
  /* Per input slot: the value a PD_SLOT_STATE input starts at (NULL: 0). */
  const double *state_init;
  /* Called by a CPU runner on each of its ops that has it, once the run's
   * variables have storage (pd_runner_prepare, at every change of shapes):
   * the allreduce places its inputs in memory the ranks share. The inputs
   * of such an op are left out of the memory plan. */
  pd_status (*bind)(pd_ctx *c);
  /* Per input slot: the constant a PD_SLOT_PARAM input that declares no
   * initializer starts at (batch_norm's scale: 1); NaN or NULL: the default
   * initializer (xavier for matrices, zeros for vectors). */
  const double *param_init;
  /* Per input slot (fill_in) and output slot (fill_out): what the core
   * names the slot's variable when the NetDesc leaves it out (docs/netdesc.md,
   * "Left out"). An input (a parameter or state) becomes "<first output>.<fill>";
   * an output whose fill starts with '@' becomes "<first output><fill>", one
   * whose fill is an input slot's name takes that input's variable. NULL
   * (array or entry): never filled in. */
  const char *const *fill_in;
  const char *const *fill_out;
  /* PD_OP_* bits: op behaviour the core must know, never a compare of type. */
  unsigned flags;
  /* An op with BLOCK attributes: the names inside its blocks that the op
   * itself gives values each run (a recurrent op's step inputs and previous
   * states; if_else's rows), from its attributes and input names (ins,
   * in_n per slot, flattened). Every other name a block reads and does not
   * write is looked up in the enclosing blocks. Returns the count (at most
   * max). */
  int (*block_feeds)(const pd_attr *attrs, const char *const *ins, const int *in_n, const char **names, int max);
  /* Per input / output slot (NULL: none): the list attribute whose length
   * is the slot's number of variables (a recurrent op's states), so that
   * two duplicable slots can follow each other in the flat list of names;
   * a dispensable one takes all of them or none. A slot without one takes
   * what the later slots leave. */
  const char *const *input_counts;
  const char *const *output_counts;
};

/* Slot s's count attribute (pd_op_def.input_counts / output_counts), NULL if none. */
static inline const char *pd_slot_count_attr(const pd_op_def *d, bool output, int s) {
  const char *const *a = output ? d->output_counts : d->input_counts;
  return a ? a[s] : NULL;
}

/* Slot indices inside a generated grad op, for an op with NI inputs and NO
 * outputs: forward input s, forward output s, grad of forward output s (all
 * inputs of the grad op) and grad of forward input s (an output). */
#define PD_GRAD_X(NI, NO, s) (s)
#define PD_GRAD_Y(NI, NO, s) ((NI) + (s))
#define PD_GRAD_DY(NI, NO, s) ((NI) + (NO) + (s))
#define PD_GRAD_DX(NI, NO, s) (s)

/* ---- an op in a network ---- */
typedef struct pd_arg {
  int n;     /* variables given for the slot (0 if left out) */
  int *vars; /* their indices in the net's variable table */
} pd_arg;

typedef struct pd_op {
  const pd_op_def *def;
  int index; /* position in the net */
  pd_arg in[PD_MAX_SLOTS];
  pd_arg out[PD_MAX_SLOTS];
  pd_attr attrs[PD_MAX_ATTRS]; /* in def->attrs order, defaults filled in */
  const pd_kernel *kernel;     /* chosen by pd_net_select_kernels */
  int line, col;               /* where the op is in the NetDesc (0: generated) */
  const char *file;            /* the NetDesc's file name, for messages */
  const char *const *names;    /* the net's variable names, for messages */
  int fwd;                     /* for a grad op: index of its forward op; else -1 */
  const char *block;           /* the name of the block the op is in; NULL at the top level */
  pd_tensor work[2];           /* kernel scratch, grown once, kept across steps */
} pd_op;

/* ---- the context a shape function or kernel runs in ---- */
struct pd_exec;
struct pd_ctx {
  pd_op *op;
  pd_tensor **vars;     /* indexed by variable index: the bound tensors */
  struct pd_exec *exec; /* NULL during load-time shape inference */
  pd_error *err;
};

static inline pd_tensor *pd_in_at(pd_ctx *c, int slot, int i) {
  const pd_arg *a = &c->op->in[slot];
  return i < a->n && a->vars[i] >= 0 ? c->vars[a->vars[i]] : NULL;
}
static inline pd_tensor *pd_out_at(pd_ctx *c, int slot, int i) {
  const pd_arg *a = &c->op->out[slot];
  return i < a->n && a->vars[i] >= 0 ? c->vars[a->vars[i]] : NULL;
}
static inline pd_tensor *pd_in(pd_ctx *c, int slot) { return pd_in_at(c, slot, 0); }
static inline pd_tensor *pd_out(pd_ctx *c, int slot) { return pd_out_at(c, slot, 0); }
static inline int pd_in_count(pd_ctx *c, int slot) { return c->op->in[slot].n; }
static inline int pd_out_count(pd_ctx *c, int slot) { return c->op->out[slot].n; }
static inline const pd_attr *pd_attr_at(pd_ctx *c, int i) { return &c->op->attrs[i]; }
static inline int64_t pd_attr_i(pd_ctx *c, int i) { return c->op->attrs[i].i; }
static inline double pd_attr_f(pd_ctx *c, int i) { return c->op->attrs[i].f; }
static inline bool pd_attr_b(pd_ctx *c, int i) { return c->op->attrs[i].b; }
static inline const char *pd_attr_s(pd_ctx *c, int i) { return c->op->attrs[i].s; }

/* An error from inside an op: "op #3 "fc" (net.pbtxt:14:1): <message>".
 * Use PD_ERR_INPUT for shape and attribute problems, PD_ERR_RUNTIME for
 * failures while computing. */
pd_status pd_ctx_fail(pd_ctx *c, pd_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Whether g names a gradient of x: "x@GRAD", or a partial one
 * "x@GRAD@RENAME@k" (grad ops leave out the gradients no input needs, and
 * match the rest to their inputs by name). */
bool pd_is_grad_name(const char *g, const char *x);

/* In a generated grad op (its outputs leave out the gradients no input
 * needs, and are matched to the inputs by name): the gradient output (slot
 * out_slot) of forward input i of slot in_slot, and the gradient input
 * (slot dy_slot) of forward output i of slot y_slot; NULL when none. */
pd_tensor *pd_ctx_grad_of_in(pd_ctx *c, int in_slot, int out_slot, int i);
pd_tensor *pd_ctx_grad_of_out(pd_ctx *c, int y_slot, int dy_slot, int i);
/* An input error about a variable's shape: "<what> "<name>" is <dtype>
 * <dims>; <want>". */
pd_status pd_ctx_fail_shape(pd_ctx *c, const char *what, const char *name, const pd_tensor *t, const char *want);

/* Sets an output's dtype and dims for shape inference. */
pd_status pd_ctx_set_shape(pd_ctx *c, pd_tensor *t, pd_dtype dtype, int ndim, const int64_t *dims);
/* For a PD_SLOT_PARAM or PD_SLOT_STATE input: sets its shape if it has none yet (ndim -1),
 * otherwise checks the declared one, naming the variable and both shapes. */
pd_status pd_ctx_param_shape(pd_ctx *c, int slot, pd_dtype dtype, int ndim, const int64_t *dims);
/* Makes sure t has storage for its current dims (grows only). */
pd_status pd_ctx_alloc(pd_ctx *c, pd_tensor *t);

/* Name of the variable in a slot (for messages). */
const char *pd_ctx_in_name(pd_ctx *c, int slot, int i);
const char *pd_ctx_out_name(pd_ctx *c, int slot, int i);

/* Whether the network runs for training (dropout active, batch_norm batch
 * statistics) or inference. */
bool pd_ctx_training(pd_ctx *c);
/* Per-op, per-step random stream, reproducible from the seed: the same
 * (seed, op, step) gives the same numbers on every run and machine. */
uint64_t pd_ctx_rng_seed(pd_ctx *c);
/* Number of threads kernels may use. */
int pd_ctx_threads(pd_ctx *c);

/* Runs the def's shape function; for a generated grad op without one, each
 * input grad takes its input's shape and dtype. */
pd_status pd_op_infer_shape(pd_ctx *c);
/* The dtype that selects the kernel (def->kernel_dtype or the first input's). */
pd_dtype pd_op_key_dtype(pd_ctx *c);
/* The kernel for a key, NULL if the op has none. */
const pd_kernel *pd_op_kernel(const pd_op_def *def, pd_place_kind place, pd_dtype dtype);

/* ---- registry ---- */
/* The built-in ops, a table the op layer defines (ops/ops.c): the core names
 * it and never includes the op layer. */
extern const pd_op_def *const pd_builtin_ops[];
extern const int pd_n_builtin_ops;

const pd_op_def *pd_op_find(const char *type);
/* All ops (forward and generated grad ops), sorted by type. */
const pd_op_def *const *pd_op_all(int *n);
/* The grad op of a forward op, NULL if it has none. */
const pd_op_def *pd_op_grad_def(const pd_op_def *fwd);
/* For a generated grad op: its forward def; NULL otherwise. */
const pd_op_def *pd_op_forward_def(const pd_op_def *grad);
/* Names of all forward op types (for did-you-mean). */
const char *const *pd_op_names(int *n);

/* Converts a value from a NetDesc, checking its type against the def (an
 * int is accepted for a float). The result points into v. */
struct Paddle__AttrValue;
pd_status pd_attr_from_value(const pd_attr_def *def, const struct Paddle__AttrValue *v, pd_attr *out, pd_error *err);
const char *pd_attr_type_name(pd_attr_type t);

/* Parses a default/attribute body ("i: 3", "ints: [1, 2]") into a pd_attr of
 * the given type; the strings/lists are owned by the registry. */
pd_status pd_attr_parse_default(const pd_attr_def *def, pd_attr *out, pd_error *err);
/* Checks a value against the def's range / one_of; message says what was
 * expected and what was given. */
pd_status pd_attr_check_range(const pd_attr_def *def, const pd_attr *v, pd_error *err);
/* Text form of a value ("3", "[1, 2]", "\"relu\""). */
const char *pd_attr_str(const pd_attr *v, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
