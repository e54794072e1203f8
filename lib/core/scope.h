/* scope.h — where variables live at run time (seed 001/004): a Scope maps
 * names to variables; a child scope's look-ups fall back to its parent, so
 * a step net (an RNN's, say) sees the outer parameters without copying. */
#ifndef PD_SCOPE_H
#define PD_SCOPE_H

#include "core/tensor.h"

typedef enum pd_value_kind { PD_VALUE_TENSOR = 0 } pd_value_kind;

/* A variable holds a value; today that is a tensor. */
typedef struct pd_var {
  char *name;
  pd_value_kind kind;
  pd_tensor tensor;
  pd_tensor dev; /* its copy on a GPU, when a runner on a GPU place uses it */
} pd_var;

typedef struct pd_scope pd_scope;

pd_scope *pd_scope_new(pd_scope *parent);
/* Frees the scope and its variables (not its parent; children first). */
void pd_scope_free(pd_scope *s);
pd_scope *pd_scope_parent(const pd_scope *s);
/* Looks up name here, then in the parents; NULL if nowhere. */
pd_var *pd_scope_find(const pd_scope *s, const char *name);
/* Looks up name in this scope only. */
pd_var *pd_scope_find_local(const pd_scope *s, const char *name);
/* The variable named `name` in this scope, created (empty float32 tensor)
 * if missing; NULL only when out of memory. */
pd_var *pd_scope_var(pd_scope *s, const char *name);
/* The runner that last inferred shapes over this scope's variables: runners
 * sharing a scope (training and evaluation) re-infer when another one ran in
 * between, since its batch may have reshaped the shared temporaries. */
const void *pd_scope_shaped_by(const pd_scope *s);
void pd_scope_set_shaped_by(pd_scope *s, const void *runner);
/* Number of variables in this scope, and the i-th in creation order. */
size_t pd_scope_size(const pd_scope *s);
pd_var *pd_scope_at(const pd_scope *s, size_t i);

#endif
