/* scope.c — a Scope is a hash table (open addressing, linear probing) from
 * name to variable, plus the variables in creation order for iteration. */
#include "core/scope.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h" /* pd_hash_str */

struct pd_scope {
  pd_scope *parent;
  pd_var **vars; /* creation order */
  size_t n, cap;
  size_t *slots; /* hash table of indices + 1; 0 = empty */
  size_t nslots; /* power of two */
  const void *shaped_by;
};

pd_scope *pd_scope_new(pd_scope *parent) {
  pd_scope *s = calloc(1, sizeof *s);
  if (s) s->parent = parent;
  return s;
}

void pd_scope_free(pd_scope *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) {
    pd_tensor_release(&s->vars[i]->tensor);
    pd_tensor_release(&s->vars[i]->dev);
    free(s->vars[i]->name);
    free(s->vars[i]);
  }
  free(s->vars);
  free(s->slots);
  free(s);
}

pd_scope *pd_scope_parent(const pd_scope *s) { return s->parent; }

const void *pd_scope_shaped_by(const pd_scope *s) { return s->shaped_by; }
void pd_scope_set_shaped_by(pd_scope *s, const void *runner) { s->shaped_by = runner; }

static size_t probe(const pd_scope *s, const char *name, bool *found) {
  size_t mask = s->nslots - 1, i = (size_t)pd_hash_str(name) & mask;
  for (;; i = (i + 1) & mask) {
    size_t v = s->slots[i];
    if (v == 0) {
      *found = false;
      return i;
    }
    if (strcmp(s->vars[v - 1]->name, name) == 0) {
      *found = true;
      return i;
    }
  }
}

pd_var *pd_scope_find_local(const pd_scope *s, const char *name) {
  if (!s->nslots) return NULL;
  bool found;
  size_t i = probe(s, name, &found);
  return found ? s->vars[s->slots[i] - 1] : NULL;
}

pd_var *pd_scope_find(const pd_scope *s, const char *name) {
  for (; s; s = s->parent) {
    pd_var *v = pd_scope_find_local(s, name);
    if (v) return v;
  }
  return NULL;
}

static bool grow(pd_scope *s) {
  size_t nslots = s->nslots ? s->nslots * 2 : 16;
  size_t *slots = calloc(nslots, sizeof *slots);
  if (!slots) return false;
  free(s->slots);
  s->slots = slots;
  s->nslots = nslots;
  for (size_t k = 0; k < s->n; k++) {
    bool found;
    s->slots[probe(s, s->vars[k]->name, &found)] = k + 1;
  }
  return true;
}

pd_var *pd_scope_var(pd_scope *s, const char *name) {
  pd_var *v = pd_scope_find_local(s, name);
  if (v) return v;
  if ((s->n + 1) * 2 > s->nslots && !grow(s)) return NULL;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    pd_var **vars = realloc(s->vars, cap * sizeof *vars);
    if (!vars) return NULL;
    s->vars = vars;
    s->cap = cap;
  }
  v = calloc(1, sizeof *v);
  if (!v || !(v->name = strdup(name))) {
    free(v);
    return NULL;
  }
  pd_tensor_init(&v->tensor, PD_F32);
  pd_tensor_init(&v->dev, PD_F32);
  bool found;
  size_t i = probe(s, name, &found);
  s->vars[s->n++] = v;
  s->slots[i] = s->n;
  return v;
}

size_t pd_scope_size(const pd_scope *s) { return s->n; }
pd_var *pd_scope_at(const pd_scope *s, size_t i) { return i < s->n ? s->vars[i] : NULL; }
