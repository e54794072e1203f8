/* opcall.h — run one operator outside a network: what the op tests, the
 * gradient checker and `paddle-run time` use. Inputs and outputs are given
 * per slot in the def's order; attributes as name/value-text pairs. */
#ifndef PD_OPCALL_H
#define PD_OPCALL_H

#include "core/exec.h"
#include "core/op.h"

typedef struct pd_opcall {
  const pd_op_def *def;
  pd_op op;
  pd_tensor **vars; /* inputs then outputs, flattened */
  int nvars;
  const char **names;
  void *protos[PD_MAX_ATTRS]; /* parsed attribute values (owned) */
} pd_opcall;

/* Prepares a call of op `type`. `attrs` is a NULL-terminated list of pairs
 * {"size", "i: 3", "act", "s: \"relu\"", NULL}; missing attributes take
 * their defaults. ins[k] / outs[k] are the tensors in slot order, flattened;
 * in_n[s] / out_n[s] give the count per slot (NULL: one per slot). A NULL
 * tensor leaves that (dispensable) slot out. */
pd_status pd_opcall_init(pd_opcall *call, const char *type, const char *const *attrs, pd_tensor *const *ins,
                         const int *in_n, pd_tensor *const *outs, const int *out_n, pd_error *err);
/* Infers output shapes, allocates outputs, picks the CPU kernel for the
 * inputs' dtype, and runs it. */
pd_status pd_opcall_run(pd_opcall *call, pd_exec *exec, pd_error *err);
void pd_opcall_free(pd_opcall *call);

#endif
