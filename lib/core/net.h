/* net.h — the plain network of seed 004: built from a NetDesc, it holds the
 * variables as the file describes them (kind, dtype, shape with -1 for the
 * batch) and the ops in order. Building checks every op against its OpProto
 * and infers every shape before anything is allocated. Running happens in a
 * pd_runner (core/runner.h), which binds the net to a Scope. */
#ifndef PD_NET_H
#define PD_NET_H

#include <stdbool.h>

#include "core/exec.h"
#include "core/op.h"
#include "paddle.pb-c.h"
#include "core/scope.h"
#include "text/textformat.h"

typedef enum pd_var_kind {
  PD_VAR_TEMP = 0, /* computed by an op each run */
  PD_VAR_DATA,     /* fed each batch */
  PD_VAR_PARAM,    /* persistable, trained */
  PD_VAR_STATE,    /* persistable, not trained (optimizer state, running stats) */
} pd_var_kind;

const char *pd_var_kind_name(pd_var_kind k);

typedef struct pd_var_info {
  char *name;
  pd_var_kind kind;
  pd_tensor meta; /* dtype and dims (-1 = batch); never allocated */
  bool declared;
  bool no_grad;
  bool frozen;                     /* a parameter declared trainable: false: no gradient, no update */
  double lr_mult, decay_mult;      /* a parameter's scales of the lr and the weight decay (1: none) */
  const Paddle__VarDesc *decl;     /* the declaration (positions of its fields), may be NULL */
  const Paddle__Initializer *init; /* from the declaration, may be NULL */
  int line, col;                   /* declaration or first use */
  int producer;                    /* first op that writes it, -1 if none */
  double state_init;               /* a state variable's initial value from its op's slot; NaN: none */
  double param_init;               /* a parameter's constant initial value from its op's slot; NaN: none */
  bool optimizer_state;            /* made by AddOptimizerOps (@lr, p@VELOCITY...), not part of the model */
  int decl_ndim;                   /* the shape the file declares (-1: none), checked against writers */
  int64_t decl_dims[PD_MAX_DIMS];
} pd_var_info;

typedef struct pd_net {
  char *file; /* for messages */
  char *src;  /* the NetDesc text (for carets), may be NULL */
  size_t src_len;
  Paddle__NetDesc *desc; /* owned */
  pd_srcmap map;
  pd_dtype float_dtype; /* what FLOAT32 in the file means: float32, or float64 for gradcheck */
  pd_var_info *vars;
  const char **names; /* names[i] == vars[i].name, for pd_op.names */
  int nvars, cap_vars;
  size_t *slots, nslots; /* hash of var indices + 1 */
  pd_op *ops;
  int nops, cap_ops;
  int n_forward;   /* ops [0, n_forward) are the forward net */
  int n_backward;  /* ops [n_forward, n_forward + n_backward) are gradients */
  int loss;        /* index of the loss variable once backward ops exist, else -1 */
  int n_optimizer; /* update ops after the gradients */
  int ranks;       /* processes training it together (AddOptimizerOps adds an allreduce when > 1); 0: one */
  bool nccl;       /* the allreduce goes through NCCL (GPU under mpirun): added even on one rank */
  void **keep;     /* memory owned by the net (generated attribute values) */
  int nkeep;
  /* Blocks (core/block.h): the outermost net owns one pd_block per
   * NetDesc.block that an op names (blocks[i] for desc->block[i], NULL
   * until built). A block's own net has root set, names its block, and
   * borrows the root's text, source map and desc messages. */
  struct pd_block **blocks;
  int nblocks;
  struct pd_net *root;    /* NULL: this is the outermost net */
  const char *block_name; /* the block this net is (NULL at the top level) */
  int depth;              /* blocks around this one (0 at the top level) */
  bool check_only;        /* built for its checks only (core/block.c): the blocks its ops name are not built */
} pd_net;

typedef struct pd_net_opts {
  pd_dtype float_dtype;         /* PD_F32 (default) or PD_F64 */
  const char *const *overrides; /* "train.optimizer.lr=0.01", applied after parsing */
  int n_overrides;
  /* variables known before the file's own (the ONNX importer builds a net
   * node by node this way): each declared with the kind and the dtype and
   * dims of its meta as they are, -1 anywhere; the file must not declare them */
  const char *const *preset_names;
  const pd_tensor *preset_metas;
  const pd_var_kind *preset_kinds;
  int n_presets;
} pd_net_opts;

/* Reads and builds a network from a text-format NetDesc file. */
pd_status pd_net_load(const char *path, const pd_net_opts *opts, pd_net **out, pd_error *err);
/* The same from text in memory (`name` is used in messages). */
pd_status pd_net_from_text(const char *name, const char *text, size_t len, const pd_net_opts *opts, pd_net **out,
                           pd_error *err);
/* Builds from a parsed desc, taking ownership of desc (and src, map). */
pd_status pd_net_from_desc(const char *name, Paddle__NetDesc *desc, char *src, size_t src_len, pd_srcmap *map,
                           const pd_net_opts *opts, pd_net **out, pd_error *err);
void pd_net_free(pd_net *net);

/* The kinds of variables once the ops are built (who writes what: data,
 * parameters, state, temporaries). In a block's net a name read but
 * neither written nor declared is left a temporary with no producer: a
 * variable of an enclosing block. */
pd_status pd_net_resolve_kinds(pd_net *net, pd_error *err);

/* Index of a variable, -1 if none. */
int pd_net_var(const pd_net *net, const char *name);
/* Adds a variable (or returns the existing one's index); -1 when out of memory. */
int pd_net_add_var(pd_net *net, const char *name, pd_var_kind kind, pd_dtype dtype);

/* Zeroed memory that lives as long as the net (for generated attributes). */
void *pd_net_keep(pd_net *net, size_t bytes);

/* AddOp: appends an op. `ins`/`outs` are variable names per slot, flattened,
 * with in_n/out_n counts per slot ("" = left out). `attrs` are values in def
 * order (NULL: defaults). Variables not yet known are created as temps. */
pd_status pd_net_add_op(pd_net *net, const pd_op_def *def, const char *const *ins, const int *in_n,
                        const char *const *outs, const int *out_n, const pd_attr *attrs, int fwd, pd_error *err);

/* InferShape over all ops with the variables' load-time shapes (-1 batch). */
pd_status pd_net_infer_shapes(pd_net *net, pd_error *err);
/* Whether the net can fit in this machine's memory at the batch (before
 * anything is allocated): its parameters and state, and beside them its
 * largest variable at the batch, are a lower bound on what a run needs. Over
 * the physical memory it fails naming the first op (or declaration) that
 * takes it there, with the bytes. pd_net_load checks batch 1. */
pd_status pd_net_check_memory(const pd_net *net, int64_t batch, pd_error *err);
/* Picks each op's kernel for the place; a missing one is an error naming the
 * op, the key asked for and the keys it has. */
pd_status pd_net_select_kernels(pd_net *net, pd_place_kind place, pd_error *err);
/* Marks in needed[nops] the ops that the target variables depend on. */
void pd_net_prune(const pd_net *net, const int *targets, int ntargets, bool *needed);
/* Ops that write var i, for messages: "op #3 "fc"". */
const char *pd_net_op_label(const pd_net *net, int op, char *buf, size_t size);

/* Shapes of every variable (shapes[nvars]) with the batch set to `batch`;
 * no storage. */
pd_status pd_net_shapes_at(const pd_net *net, int64_t batch, pd_tensor *shapes, pd_error *err);
/* FLOPs of ops [begin, end) for those shapes (def->flops, else one per
 * output element). */
double pd_net_flops(const pd_net *net, const pd_tensor *shapes, int begin, int end);

#endif
