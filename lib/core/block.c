/* block.c — structural checks of a NetDesc's sub-blocks (block.h). A block
 * is "the top level" (the NetDesc itself, index -1) or NetDesc.block[i]; an
 * op of one block runs another by naming it in a BLOCK attribute, which
 * makes the op's block the other's parent. Name lookup goes from a block to
 * its parent and on to the top level, as a step scope's does. */
#include "core/block.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/rng.h"
#include "base/util.h"
#include "core/backward.h"
#include "cpu/parallel.h"

/* The op running a block: where its BLOCK attribute is. */
typedef struct runner {
  int block; /* the op's block (-1: the top level); the run block's parent */
  size_t op; /* the op's index in its block */
  const Paddle__OpDesc__AttrsEntry *attr;
} runner;

/* A name and where it is declared, sorted by name, then by place. */
typedef struct named {
  const char *name;
  int block; /* -1: the top level */
  size_t index;
} named;

typedef struct checker {
  pd_net *net;
  pd_error *err;
  const Paddle__NetDesc *d;
  runner *run;        /* per block; attr NULL: no op runs it (yet) */
  named *sorted;      /* the blocks by name */
  size_t *tin, *tout; /* per block: its interval in a depth-first walk of the tree of runners */
} checker;

static void pos_of(const pd_net *net, const void *msg, const char *field, int *line, int *col) {
  *line = *col = 0;
  const ProtobufCFieldDescriptor *f = NULL;
  if (field) f = protobuf_c_message_descriptor_get_field_by_name(((const ProtobufCMessage *)msg)->descriptor, field);
  if (!f || !pd_srcmap_find(&net->map, msg, f, 0, line, col)) pd_srcmap_find(&net->map, msg, NULL, 0, line, col);
}

static pd_status fail(const checker *c, const void *msg, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static pd_status fail(const checker *c, const void *msg, const char *field, const char *fmt, ...) {
  char text[PD_ERROR_MAX / 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  int line, col;
  pos_of(c->net, msg, field, &line, &col);
  if (line <= 0) return pd_errorf(c->err, PD_ERR_INPUT, "%s: %s", c->net->file, text);
  return pd_error_at(c->err, PD_ERR_INPUT, c->net->file, c->net->src, c->net->src_len, line, col, "%s", text);
}

/* " (net.pbtxt:5:1)" where msg's position is known, else "" */
static const char *at(const checker *c, const void *msg, char *buf, size_t size) {
  int line, col;
  pos_of(c->net, msg, NULL, &line, &col);
  if (line > 0)
    snprintf(buf, size, " (%s:%d:%d)", c->net->file, line, col);
  else
    buf[0] = '\0';
  return buf;
}

static size_t n_ops(const checker *c, int b) { return b < 0 ? c->d->n_op : c->d->block[b]->n_op; }
static Paddle__OpDesc *op_of(const checker *c, int b, size_t o) { return b < 0 ? c->d->op[o] : c->d->block[b]->op[o]; }

/* `op #2 "fc"` or `block "cell", op #2 "fc"` */
static const char *op_label(const checker *c, int b, size_t o, char *buf, size_t size) {
  const Paddle__OpDesc *od = op_of(c, b, o);
  if (b < 0)
    snprintf(buf, size, "op #%zu \"%s\"", o, od->type);
  else
    snprintf(buf, size, "block \"%s\", op #%zu \"%s\"", c->d->block[b]->name, o, od->type);
  return buf;
}

static int by_name(const void *a, const void *b) {
  const named *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (c) return c;
  if (x->block != y->block) return x->block < y->block ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* The lowest index of a block of that name, -1 if none. */
static int find_block(const checker *c, const char *name) {
  size_t lo = 0, hi = c->d->n_block;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(c->sorted[mid].name, name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < c->d->n_block && strcmp(c->sorted[lo].name, name) == 0 ? (int)c->sorted[lo].index : -1;
}

static pd_status check_names(checker *c) {
  const Paddle__NetDesc *d = c->d;
  for (size_t i = 0; i < d->n_block; i++) {
    const Paddle__BlockDesc *bd = d->block[i];
    if (!*bd->name)
      return fail(c, bd, "name", "block #%zu has an empty name; a block needs one (block { name: \"step\" ... })", i);
    int first = find_block(c, bd->name);
    char buf[1024];
    if (first != (int)i)
      return fail(c, bd, "name", "block \"%s\" is declared twice%s", bd->name, at(c, d->block[first], buf, sizeof buf));
  }
  return PD_OK;
}

/* One BLOCK attribute (an attribute whose value names a block) of op o of block b. */
static pd_status check_reference(checker *c, int b, size_t o, const Paddle__OpDesc__AttrsEntry *e) {
  const Paddle__NetDesc *d = c->d;
  const char *name = e->value->block;
  char label[600], other[600], pos[1024];
  op_label(c, b, o, label, sizeof label);
  int target = find_block(c, name);
  if (target < 0) {
    const char **names = malloc(sizeof *names * (d->n_block + 1));
    if (!names) return pd_errorf(c->err, PD_ERR_RUNTIME, "out of memory");
    for (size_t i = 0; i < d->n_block; i++) names[i] = d->block[i]->name;
    const char *sug = pd_suggest(name, names, d->n_block);
    char hint[600];
    if (sug)
      snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", sug);
    else if (!d->n_block)
      snprintf(hint, sizeof hint, " (the file declares no blocks: block { name: \"%s\" var { ... } op { ... } })",
               name);
    else
      hint[0] = '\0';
    free(names);
    return fail(c, e->value, "block", "%s: attribute \"%s\" names block \"%s\", which is not declared%s", label, e->key,
                name, hint);
  }
  if (target == b)
    return fail(c, e->value, "block",
                "%s: attribute \"%s\" names block \"%s\", the block the op is in; a block cannot run itself", label,
                e->key, name);
  runner *r = &c->run[target];
  if (r->attr) {
    if (r->block == b && r->op == o)
      return fail(c, e->value, "block", "%s: attributes \"%s\" and \"%s\" both name block \"%s\"; a block is run once",
                  label, r->attr->key, e->key, name);
    op_label(c, r->block, r->op, other, sizeof other);
    return fail(c, e->value, "block",
                "%s: attribute \"%s\" names block \"%s\", which %s%s already runs; a block is run by exactly one op",
                label, e->key, name, other, at(c, op_of(c, r->block, r->op), pos, sizeof pos));
  }
  *r = (runner){b, o, e};
  return PD_OK;
}

static pd_status check_references(checker *c) {
  for (int b = -1; b < (int)c->d->n_block; b++)
    for (size_t o = 0; o < n_ops(c, b); o++) {
      const Paddle__OpDesc *od = op_of(c, b, o);
      for (size_t a = 0; a < od->n_attrs; a++) {
        const Paddle__OpDesc__AttrsEntry *e = od->attrs[a];
        if (!e->value || !e->value->block) continue;
        pd_status st = check_reference(c, b, o, e);
        if (st) return st;
      }
    }
  return PD_OK;
}

/* Every block has a runner; following runners from any block reaches the
 * top level. Each block has one parent, so a chain that does not get there
 * loops: the blocks on the loop run one another and nothing reaches them. */
static pd_status check_reached(checker *c) {
  const Paddle__NetDesc *d = c->d;
  for (size_t i = 0; i < d->n_block; i++)
    if (!c->run[i].attr)
      return fail(c, d->block[i], "name",
                  "block \"%s\" is run by no op: name it in an op's BLOCK attribute (value { block: \"%s\" }) or "
                  "remove it",
                  d->block[i]->name, d->block[i]->name);
  /* state: 0 not yet seen, 1 reaches the top level, 2 + i: seen on the walk from block i */
  size_t *state = calloc(d->n_block + 1, sizeof *state);
  if (!state) return pd_errorf(c->err, PD_ERR_RUNTIME, "out of memory");
  int loop = -1;
  for (size_t i = 0; i < d->n_block && loop < 0; i++) {
    int b = (int)i;
    while (b >= 0 && state[b] == 0) state[b] = 2 + i, b = c->run[b].block;
    if (b >= 0 && state[b] == 2 + i)
      loop = b; /* back on this walk: b is on a loop */
    else
      for (int k = (int)i; k >= 0 && state[k] == 2 + i; k = c->run[k].block) state[k] = 1;
  }
  free(state);
  if (loop < 0) return PD_OK;
  /* name the loop from its block of lowest index, in the order they run
   * one another (a block's runner sits in its parent: the reverse order) */
  int first = loop;
  for (int k = c->run[loop].block; k != loop; k = c->run[k].block)
    if (k < first) first = k;
  size_t n = 1;
  for (int k = c->run[first].block; k != first; k = c->run[k].block) n++;
  int *order = malloc(sizeof *order * n);
  if (!order) return pd_errorf(c->err, PD_ERR_RUNTIME, "out of memory");
  size_t j = n;
  for (int k = c->run[first].block; k != first; k = c->run[k].block) order[--j] = k;
  order[0] = first;
  char chain[1024], label[600];
  size_t used = (size_t)snprintf(chain, sizeof chain, "\"%s\"", d->block[first]->name);
  for (size_t k = 1; k <= n && used < sizeof chain; k++)
    used += (size_t)snprintf(chain + used, sizeof chain - used, "%s runs \"%s\"", k > 1 ? ", which" : "",
                             d->block[order[k % n]]->name);
  free(order);
  const runner *r = &c->run[first];
  op_label(c, r->block, r->op, label, sizeof label);
  return fail(c, r->attr->value, "block",
              "%s: attribute \"%s\" names block \"%s\", which makes a cycle: %s; every block must be reached "
              "from the top-level ops",
              label, r->attr->key, d->block[first]->name, chain);
}

/* The variable declarations across blocks: a name declared in a block and
 * in one that encloses it, or in two blocks where one is a parameter of a
 * sub-block (a parameter lives in the outermost scope, which every block
 * sees). Two declarations in one block are left to the top-level checks. */
static Paddle__VarDesc *var_of(const checker *c, const named *n) {
  return n->block < 0 ? c->d->var[n->index] : c->d->block[n->block]->var[n->index];
}

/* Whether block `outer` (-1: the top level) is `inner` or encloses it: the
 * blocks' intervals in a depth-first walk of the tree of runners nest. */
static bool encloses(const checker *c, int outer, int inner) {
  if (outer < 0) return true;
  if (inner < 0) return false;
  return c->tin[outer] <= c->tin[inner] && c->tout[inner] <= c->tout[outer];
}

/* tin/tout of every block, without recursion (a nest may be thousands deep) */
static pd_status number_tree(checker *c) {
  size_t n = c->d->n_block;
  size_t *first = calloc(n + 2, sizeof *first), *kids = malloc(sizeof *kids * (n + 1));
  size_t *stack = malloc(sizeof *stack * (n + 1)), *next = malloc(sizeof *next * (n + 1));
  c->tin = malloc(sizeof *c->tin * (n + 1));
  c->tout = malloc(sizeof *c->tout * (n + 1));
  pd_status st = PD_OK;
  if (!first || !kids || !stack || !next || !c->tin || !c->tout) {
    st = pd_errorf(c->err, PD_ERR_RUNTIME, "out of memory");
    goto done;
  }
  /* children of node p (0: the top level, b + 1: block b) in kids[first[p], first[p + 1]) */
  for (size_t b = 0; b < n; b++) first[(size_t)(c->run[b].block + 1) + 1]++;
  for (size_t p = 0; p <= n; p++) first[p + 1] += first[p];
  for (size_t p = 0; p <= n; p++) next[p] = first[p];
  for (size_t b = 0; b < n; b++) kids[next[c->run[b].block + 1]++] = b;
  size_t top = 0, clock = 0;
  for (size_t p = 0; p <= n; p++) next[p] = first[p];
  stack[top++] = 0;
  while (top) {
    size_t p = stack[top - 1];
    if (next[p] < first[p + 1]) {
      size_t b = kids[next[p]++];
      c->tin[b] = clock++;
      stack[top++] = b + 1;
    } else {
      if (p) c->tout[p - 1] = clock++;
      top--;
    }
  }
done:
  free(first), free(kids), free(stack), free(next);
  return st;
}

static const char *block_name(const checker *c, int b, char *buf, size_t size) {
  if (b < 0)
    snprintf(buf, size, "the top level");
  else
    snprintf(buf, size, "block \"%s\"", c->d->block[b]->name);
  return buf;
}

static bool before(const named *a, const named *b) {
  return a->block < b->block || (a->block == b->block && a->index < b->index);
}

/* a declaration keyed by where its block starts in the depth-first walk */
typedef struct keyed {
  size_t key; /* 0: the top level, else tin + 1 */
  const named *n;
} keyed;

static int by_key(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return before(x->n, y->n) ? -1 : before(y->n, x->n);
}

/* The declarations of one name, g[0..k) sorted by place: the one at fault
 * that comes first in the file's order (with the one it clashes with), or
 * none. */
static void clash(const checker *c, named *g, size_t k, const named **bad, const named **with) {
  *bad = *with = NULL;
  const named *param = NULL;
  for (size_t i = 0; i < k && !param; i++)
    if (g[i].block >= 0 && var_of(c, &g[i])->kind == PADDLE__VAR_KIND__PARAM) param = &g[i];
  if (param) {
    for (size_t i = 0; i < k; i++)
      if (g[i].block != param->block) {
        bool later = before(param, &g[i]);
        *bad = later ? &g[i] : param;
        *with = later ? param : &g[i];
        return;
      }
    return;
  }
  /* an enclosing block's declaration: walk the group in depth-first order
   * with a stack of the declaring blocks around the current one */
  keyed *w = malloc(sizeof *w * k * 2), *stack = w ? w + k : NULL;
  if (!w) return; /* out of memory: the check is skipped, nothing is wrong */
  for (size_t i = 0; i < k; i++) w[i] = (keyed){g[i].block < 0 ? 0 : c->tin[g[i].block] + 1, &g[i]};
  qsort(w, k, sizeof *w, by_key);
  size_t top = 0;
  for (size_t i = 0; i < k; i++) {
    const named *e = w[i].n;
    while (top && !encloses(c, stack[top - 1].n->block, e->block)) top--;
    if (top && stack[top - 1].n->block == e->block) continue;
    if (top && (!*bad || before(e, *bad))) *bad = e, *with = stack[top - 1].n;
    stack[top++] = w[i];
  }
  free(w);
}

static pd_status check_vars(checker *c) {
  const Paddle__NetDesc *d = c->d;
  size_t n = d->n_var;
  for (size_t i = 0; i < d->n_block; i++) n += d->block[i]->n_var;
  if (n == d->n_var) return PD_OK;
  pd_status st = number_tree(c);
  if (st) return st;
  named *all = malloc(sizeof *all * n);
  if (!all) return pd_errorf(c->err, PD_ERR_RUNTIME, "out of memory");
  size_t k = 0;
  for (size_t v = 0; v < d->n_var; v++) all[k++] = (named){d->var[v]->name, -1, v};
  for (size_t i = 0; i < d->n_block; i++)
    for (size_t v = 0; v < d->block[i]->n_var; v++) all[k++] = (named){d->block[i]->var[v]->name, (int)i, v};
  qsort(all, n, sizeof *all, by_name);
  const named *bad = NULL, *with = NULL;
  for (size_t g = 0; g < n;) {
    size_t e = g + 1;
    while (e < n && strcmp(all[e].name, all[g].name) == 0) e++;
    const named *b, *w;
    if (e - g > 1 && *all[g].name) {
      clash(c, all + g, e - g, &b, &w);
      if (b && (!bad || before(b, bad))) bad = b, with = w;
    }
    g = e;
  }
  if (bad) {
    char where[600], pos[1024];
    const Paddle__VarDesc *vd = var_of(c, bad), *prev = var_of(c, with);
    if (encloses(c, with->block, bad->block))
      st = fail(c, vd, "name",
                "block \"%s\": variable \"%s\" is declared in %s too%s, which encloses it; a block sees the "
                "variables of the blocks around it, so declare it once",
                d->block[bad->block]->name, vd->name, block_name(c, with->block, where, sizeof where),
                at(c, prev, pos, sizeof pos));
    else
      st = fail(c, vd, "name",
                "block \"%s\": variable \"%s\" is declared in block \"%s\" too%s; a parameter lives in the "
                "outermost scope, which every block sees, so declare it once",
                d->block[bad->block]->name, vd->name, d->block[with->block]->name, at(c, prev, pos, sizeof pos));
  }
  free(all);
  return st;
}

/* "net.pbtxt:41:5: op #2 ..." -> "net.pbtxt:41:5: block "cell", op #2 ..."
 * (", " before an op's label, ": " before anything else) */
static void name_block(pd_error *err, const char *file, const char *block) {
  char *m = err->msg, *p = m;
  size_t flen = strlen(file);
  if (strncmp(p, file, flen) == 0 && p[flen] == ':') {
    p += flen + 1;
    char *q = p;
    while (*q >= '0' && *q <= '9') q++;
    if (q > p && *q == ':') {
      char *r = q + 1;
      while (*r >= '0' && *r <= '9') r++;
      if (r > q + 1 && *r == ':') p = r + 1;
    }
    if (*p == ' ') p++;
  } else
    p = m;
  char tail[PD_ERROR_MAX];
  snprintf(tail, sizeof tail, "%s", p);
  size_t head = (size_t)(p - m);
  snprintf(p, sizeof err->msg - head, "block \"%s\"%s%s", block, strncmp(tail, "op #", 4) == 0 ? ", " : ": ", tail);
}

/* The top level's checks of declarations and ops, on a scratch net that
 * borrows the file, its text and source map, and holds the block's own
 * variables and ops. */
static pd_status build_block(checker *c, const Paddle__BlockDesc *bd) {
  pd_net *net = c->net;
  pd_net *s = calloc(1, sizeof *s);
  if (!s || !(s->file = strdup(net->file))) {
    free(s);
    return pd_errorf(c->err, PD_ERR_RUNTIME, "out of memory");
  }
  Paddle__NetDesc scratch = PADDLE__NET_DESC__INIT;
  scratch.n_var = bd->n_var;
  scratch.var = bd->var;
  scratch.n_op = bd->n_op;
  scratch.op = bd->op;
  s->desc = &scratch;
  s->src = net->src;
  s->src_len = net->src_len;
  s->map = net->map;
  s->float_dtype = net->float_dtype;
  s->loss = -1;
  s->check_only = true;
  pd_status st = pd_net_build_desc(s, c->err);
  if (st == PD_ERR_INPUT) name_block(c->err, net->file, bd->name);
  s->desc = NULL;
  s->src = NULL;
  memset(&s->map, 0, sizeof s->map);
  pd_net_free(s);
  return st;
}

pd_status pd_blocks_check(pd_net *net, pd_error *err) {
  const Paddle__NetDesc *d = net->desc;
  checker c = {net,  err, d, calloc(d->n_block + 1, sizeof(runner)), malloc(sizeof(named) * (d->n_block + 1)),
               NULL, NULL};
  if (!c.run || !c.sorted) {
    free(c.run), free(c.sorted);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  for (size_t i = 0; i < d->n_block; i++) c.sorted[i] = (named){d->block[i]->name, -1, i};
  qsort(c.sorted, d->n_block, sizeof *c.sorted, by_name);
  pd_status st = check_names(&c);
  if (!st) st = check_references(&c);
  if (!st) st = check_reached(&c);
  if (!st) st = check_vars(&c);
  for (size_t i = 0; i < d->n_block && !st; i++) st = build_block(&c, d->block[i]);
  free(c.run), free(c.sorted), free(c.tin), free(c.tout);
  return st;
}

/* ---- blocks at run time ---- */

int pd_block_var(const pd_block *b, const char *name) { return pd_net_var(b->net, name); }

static void plans_free(pd_block *b);

void pd_block_free(pd_block *b) {
  if (!b) return;
  if (b->rt && b->rt_free) b->rt_free(b->rt);
  if (b->shapes)
    for (int v = 0; v < b->net->nvars; v++) pd_tensor_release(&b->shapes[v]);
  pd_net_free(b->net);
  free(b->name), free(b->feed), free(b->outer), free(b->outer_parent), free(b->local), free(b->shapes);
  free(b->bind), free(b->op_seconds), free(b->seed), free(b->seed_grad), free(b->want), free(b->want_grad);
  plans_free(b);
  free(b);
}

/* A variable of the block that lives in an enclosing one: the parent's
 * variable of that name, made there if need be. A parameter or state
 * (persistable, in the outermost scope) moves out with its declaration. */
static int outer_in_parent(pd_net *parent, const pd_var_info *vi) {
  int p = pd_net_var(parent, vi->name);
  bool persist = vi->kind == PD_VAR_PARAM || vi->kind == PD_VAR_STATE;
  if (p < 0) p = pd_net_add_var(parent, vi->name, persist ? vi->kind : PD_VAR_TEMP, vi->meta.dtype);
  if (p < 0 || !persist) return p;
  pd_var_info *pi = &parent->vars[p];
  if (pi->kind == PD_VAR_TEMP && pi->producer < 0) pi->kind = vi->kind;
  if (vi->declared && !pi->declared) {
    pi->declared = true;
    pi->meta = vi->meta;
    pi->init = vi->init;
    pi->no_grad = vi->no_grad;
    pi->frozen = vi->frozen;
    pi->lr_mult = vi->lr_mult;
    pi->decay_mult = vi->decay_mult;
    pi->decl_ndim = vi->decl_ndim;
    memcpy(pi->decl_dims, vi->decl_dims, sizeof pi->decl_dims);
  }
  if (!pi->line) pi->line = vi->line, pi->col = vi->col;
  if (isnan(pi->param_init)) pi->param_init = vi->param_init;
  if (isnan(pi->state_init)) pi->state_init = vi->state_init;
  return p;
}

/* Sorts the block's variables into feeds, locals and outer ones. */
static pd_status classify(pd_block *b, pd_error *err) {
  pd_net *n = b->net, *parent = b->parent;
  for (int i = 0; i < b->nfeed; i++) b->local[b->feed[i]] = true;
  for (int v = 0; v < n->nvars; v++) {
    pd_var_info *vi = &n->vars[v];
    if (b->local[v]) continue;
    bool persist = vi->kind == PD_VAR_PARAM || vi->kind == PD_VAR_STATE;
    const pd_op *w = vi->producer >= 0 ? &n->ops[vi->producer] : NULL;
    /* a block writes its own variables only (state updated in place, a
     * running mean, is the enclosing scope's and may be) */
    bool in_place = false;
    for (int s = 0; w && s < w->def->n_inputs; s++)
      for (int i = 0; i < w->in[s].n; i++) in_place |= w->in[s].vars[i] == v;
    int pv = pd_net_var(parent, vi->name);
    if (w && (vi->kind == PD_VAR_PARAM || (!persist && pv >= 0)) && !in_place) {
      bool param = vi->kind == PD_VAR_PARAM || parent->vars[pv].kind == PD_VAR_PARAM;
      return pd_error_at(err, PD_ERR_INPUT, n->file, n->src, n->src_len, w->line, w->col,
                         "block \"%s\", op #%d \"%s\" writes \"%s\", a %s of the enclosing block; a block writes "
                         "only its own variables (give the value another name)",
                         b->name, w->index, w->def->type, vi->name, param ? "parameter" : "variable");
    }
    if (!persist && w) {
      b->local[v] = true;
      continue;
    }
    if (!persist && vi->declared) {
      if (vi->kind == PD_VAR_DATA) {
        char where[64] = "";
        if (vi->line > 0) snprintf(where, sizeof where, "%d:%d: ", vi->line, vi->col);
        return pd_errorf(err, PD_ERR_INPUT,
                         "%s:%sblock \"%s\": variable \"%s\" is read but no op of the block writes it and the op "
                         "running the block does not give it; data is fed at the top level: declare it there",
                         n->file, where, b->name, vi->name);
      }
      b->local[v] = true; /* declared, never read */
      continue;
    }
    int p = outer_in_parent(parent, vi);
    if (p < 0) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    b->outer[b->nouter] = v;
    b->outer_parent[b->nouter++] = p;
  }
  return PD_OK;
}

/* The block's net: its declarations, the feeds, its ops (building the
 * blocks they run in turn), the kinds of its variables. */
static pd_status build_net(pd_block *b, pd_net *root, const Paddle__BlockDesc *bd, const char *const *feeds, int nfeed,
                           pd_error *err) {
  pd_net *n = calloc(1, sizeof *n);
  Paddle__NetDesc *shell = malloc(sizeof *shell);
  if (!n || !shell || !(n->file = strdup(root->file))) {
    free(n), free(shell);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  paddle__net_desc__init(shell);
  shell->n_var = bd->n_var, shell->var = bd->var;
  shell->n_op = bd->n_op, shell->op = bd->op;
  shell->n_block = root->desc->n_block, shell->block = root->desc->block;
  n->desc = shell;
  n->root = root;
  n->depth = b->parent->depth + 1;
  n->block_name = b->name;
  n->src = root->src, n->src_len = root->src_len, n->map = root->map;
  n->float_dtype = root->float_dtype;
  n->loss = -1;
  b->net = n;
  pd_status st = pd_net_build_desc_vars(n, err);
  for (int i = 0; i < nfeed && !st; i++) {
    int v = pd_net_add_var(n, feeds[i], PD_VAR_DATA, n->float_dtype);
    if (v < 0) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    if (n->vars[v].kind == PD_VAR_PARAM || n->vars[v].kind == PD_VAR_STATE)
      return pd_errorf(err, PD_ERR_INPUT, "%s: block \"%s\" declares \"%s\" as a %s, but the op running it gives it",
                       n->file, b->name, feeds[i], pd_var_kind_name(n->vars[v].kind));
    n->vars[v].kind = PD_VAR_DATA;
    n->vars[v].declared = true;
    b->feed[i] = v;
  }
  if (!st) st = pd_net_build_desc_ops(n, err);
  if (!st) st = pd_net_resolve_kinds(n, err);
  return st;
}

pd_status pd_block_get(pd_net *parent, const char *name, const char *const *feeds, int nfeed, pd_block **out,
                       pd_error *err) {
  pd_net *root = parent->root ? parent->root : parent;
  const Paddle__NetDesc *d = root->desc;
  if (parent->depth >= PD_MAX_BLOCK_DEPTH) /* each level is a recursion of the builder */
    return pd_errorf(err, PD_ERR_INPUT, "%s: block \"%s\" is run %d blocks deep; blocks nest at most %d deep",
                     root->file, name, parent->depth + 1, PD_MAX_BLOCK_DEPTH);
  size_t i = 0;
  while (i < d->n_block && strcmp(d->block[i]->name, name) != 0) i++;
  if (i == d->n_block) return pd_errorf(err, PD_ERR_INPUT, "%s: no block \"%s\"", root->file, name);
  if (!root->blocks) {
    root->blocks = calloc(d->n_block + 1, sizeof *root->blocks);
    if (!root->blocks) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    root->nblocks = (int)d->n_block;
  }
  if (root->blocks[i]) {
    *out = root->blocks[i];
    return PD_OK;
  }
  pd_block *b = calloc(1, sizeof *b);
  if (!b || !(b->name = strdup(name)) || !(b->feed = calloc((size_t)nfeed + 1, sizeof *b->feed))) {
    if (b) free(b->name);
    free(b);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  root->blocks[i] = b; /* freed with the root */
  b->index = (int)i;
  b->parent = parent;
  b->nfeed = nfeed;
  pd_status st = build_net(b, root, d->block[i], feeds, nfeed, err);
  if (st) return st;
  size_t nv = (size_t)b->net->nvars + 1;
  b->local = calloc(nv, 1);
  b->outer = calloc(nv, sizeof *b->outer);
  b->outer_parent = calloc(nv, sizeof *b->outer_parent);
  b->shapes = calloc(nv, sizeof *b->shapes);
  b->bind = calloc(nv, sizeof *b->bind);
  if (!b->local || !b->outer || !b->outer_parent || !b->shapes || !b->bind)
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int v = 0; v < b->net->nvars; v++) pd_tensor_init(&b->shapes[v], b->net->vars[v].meta.dtype);
  if ((st = classify(b, err))) return st;
  b->nvars_built = b->net->nvars;
  *out = b;
  return PD_OK;
}

void pd_block_bind_outer(pd_block *b, pd_ctx *c, int outer_slot, pd_tensor **bind) {
  const pd_arg *a = &c->op->in[outer_slot];
  for (int i = 0; i < b->nouter; i++) {
    bind[b->outer[i]] = NULL;
    for (int j = 0; j < a->n; j++)
      if (a->vars[j] == b->outer_parent[i]) {
        bind[b->outer[i]] = c->vars[a->vars[j]];
        break;
      }
  }
}

pd_status pd_block_infer(pd_block *b, pd_ctx *c, pd_tensor **bind, int begin, int end) {
  pd_net *n = b->net;
  for (int v = 0; v < n->nvars; v++)
    if (!bind[v]) bind[v] = &b->shapes[v];
  pd_status st = PD_OK;
  char l[400];
  for (int o = begin; o < end && !st; o++) {
    pd_op *op = &n->ops[o];
    for (int s = 0; s < op->def->n_inputs && !st; s++)
      for (int i = 0; i < op->in[s].n && !st; i++) {
        int v = op->in[s].vars[i];
        const pd_var_info *vi = &n->vars[v];
        if (bind[v]->ndim < 0 && !(op->def->inputs[s].flags & (PD_SLOT_PARAM | PD_SLOT_STATE)) &&
            vi->kind != PD_VAR_PARAM && vi->kind != PD_VAR_STATE)
          st = pd_errorf(c->err, PD_ERR_INPUT, "%s reads \"%s\" before any op of the block writes it",
                         pd_net_op_label(n, o, l, sizeof l), vi->name);
      }
    if (st) break;
    pd_ctx sc = {.op = op, .vars = bind, .exec = c->exec, .err = c->err};
    st = pd_op_infer_shape(&sc);
  }
  /* at load (the batch is -1) the block's variables take the shapes: its
   * kernels are chosen and its FLOPs counted from them */
  bool load = !c->exec;
  for (int v = 0; v < n->nvars && load; v++)
    if (bind[v]->ndim >= 0) {
      n->vars[v].meta.dtype = bind[v]->dtype;
      n->vars[v].meta.ndim = bind[v]->ndim;
      memcpy(n->vars[v].meta.dims, bind[v]->dims, sizeof bind[v]->dims);
    }
  return st;
}

/* ---- ops side by side ----
 *
 * A step block runs its ops once per time step, and most of them are
 * small: a hand-written LSTM cell at batch 64 is four products of
 * 64 x 128 x 156 and ~25 elementwise ops of 8192 values a step. Split over
 * the pool, each is a fork and a join for a few microseconds of work a
 * thread, and the threads' shares of a product are too thin to run at the
 * micro-kernel's rate. But such a cell's ops come in groups that do not
 * depend on each other (the four gate products, their activations, their
 * gradients): those run side by side, one op a thread, each on one thread
 * as it would inside a pool part, and an op's weights stay in the cache of
 * the core that ran it at the step before. Which ops go together is planned
 * once per range of ops and thread count (pd_block_plan): each op's level,
 * as early as its inputs allow (ASAP) or as late as its readers allow
 * (ALAP), whichever plan a simple model of the time says is faster (each
 * level: the ops side by side, in groups of `threads` by cost, the rest one
 * at a time on all threads; a fork costs like a small op). Op o depends on
 * an earlier op p when p writes a variable o reads or writes, or reads one o
 * writes (a view's variable counts as the one it views). An op side by side
 * runs as inside any pool part (its products whole, on one thread), which
 * may round differently from the same op split over the threads, as
 * products do between thread counts; but the plan depends on the net and
 * the thread count only (made from the shapes at load), so a run is
 * bit-identical to a rerun with the same --threads. */

#define PLAN_MAX_THREADS 64 /* parts a level's ops are spread over at most */

typedef struct pd_block_plan {
  int begin, end, threads;
  bool *only;       /* the ops of the range it is for (NULL: all) */
  int *order;       /* the range's ops in the order they run: level by level */
  int *part;        /* per place in order: the pool part that runs it, -1: alone, on every thread */
  int nlevels, *at; /* level l: order[at[l] .. at[l + 1]); its ops with a part first */
  int *side;        /* per level: how many run side by side (0: none) */
  pd_error *errs;   /* per part: its ops' error */
  int *failed;      /* per part: the op that failed, INT_MAX if none */
} pd_block_plan;

static void plan_free(pd_block_plan *p) {
  free(p->order), free(p->part), free(p->at), free(p->side), free(p->errs), free(p->failed), free(p->only);
}

static void plans_free(pd_block *b) {
  for (int i = 0; i < b->nplans; i++) plan_free(&b->plans[i]);
  free(b->plans);
  b->plans = NULL, b->nplans = 0;
}

/* v's storage: the variable a view op's output views, followed back. */
static int view_root(const pd_net *n, const int *root, int v) { return v >= 0 && v < n->nvars ? root[v] : v; }

static bool args_touch(const pd_net *n, const int *root, const pd_arg *args, int nslots, int v) {
  for (int s = 0; s < nslots; s++)
    for (int i = 0; i < args[s].n; i++)
      if (args[s].vars[i] >= 0 && view_root(n, root, args[s].vars[i]) == v) return true;
  return false;
}

/* Whether op q (later) must wait for op p (earlier). */
static bool depends(const pd_net *n, const int *root, const pd_op *p, const pd_op *q) {
  for (int s = 0; s < p->def->n_outputs; s++)
    for (int i = 0; i < p->out[s].n; i++) {
      int v = p->out[s].vars[i] >= 0 ? view_root(n, root, p->out[s].vars[i]) : -1;
      if (v >= 0 &&
          (args_touch(n, root, q->in, q->def->n_inputs, v) || args_touch(n, root, q->out, q->def->n_outputs, v)))
        return true;
    }
  for (int s = 0; s < p->def->n_inputs; s++)
    for (int i = 0; i < p->in[s].n; i++) {
      int v = p->in[s].vars[i] >= 0 ? view_root(n, root, p->in[s].vars[i]) : -1;
      if (v >= 0 && args_touch(n, root, q->out, q->def->n_outputs, v)) return true;
    }
  return false;
}

/* An op's cost for the plan, in multiply-adds x2 (its FLOPs; an op without
 * a FLOP count ~64 a value it writes: an activation of 8192 values took
 * about what a 0.5 MFLOP product does) */
#define PLAN_VALUE_COST 64.0
#define PLAN_FORK_COST 131072.0 /* a fork and join of the pool, ~2 µs */
static double op_cost(pd_op *op, pd_tensor **bind) {
  pd_ctx sc = {.op = op, .vars = bind};
  for (int s = 0; s < op->def->n_inputs; s++) /* a shape not known at load: no cost */
    for (int i = 0; i < op->in[s].n; i++)
      if (pd_in_at(&sc, s, i) && pd_in_at(&sc, s, i)->ndim < 0) return 0;
  if (op->def->flops) return op->def->flops(&sc);
  double values = 0;
  for (int s = 0; s < op->def->n_outputs; s++)
    for (int i = 0; i < op->out[s].n; i++) {
      pd_tensor *t = pd_out_at(&sc, s, i);
      int64_t k = t ? pd_tensor_numel(t) : 0;
      if (k > 0) values += (double)k;
    }
  return values * PLAN_VALUE_COST;
}

/* The ops of level lv (by lvl) into order from *k on, those side by side
 * first, each given its part; returns the model's time for the level. */
static double place_level(const int *lvl, const double *cost, int n, int lv, int threads, pd_block_plan *p, int *k) {
  int first = *k, cnt = 0;
  for (int i = 0; i < n; i++)
    if (lvl[i] == lv) p->order[*k + cnt++] = i;
  /* by cost, the largest first (stable: equal costs keep op order) */
  for (int a = 1; a < cnt; a++)
    for (int b2 = a; b2 > 0 && cost[p->order[first + b2]] > cost[p->order[first + b2 - 1]]; b2--) {
      int t = p->order[first + b2];
      p->order[first + b2] = p->order[first + b2 - 1], p->order[first + b2 - 1] = t;
    }
  int side = threads > 1 && cnt >= threads ? cnt / threads * threads : 0;
  double load[PLAN_MAX_THREADS] = {0}, t = 0;
  for (int j = 0; j < cnt; j++) {
    int at = first + j;
    if (j < side) { /* the least loaded part takes it */
      int best = 0;
      for (int w = 1; w < threads; w++)
        if (load[w] < load[best]) best = w;
      load[best] += cost[p->order[at]];
      p->part[at] = best;
    } else {
      p->part[at] = -1;
      t += cost[p->order[at]] / threads + PLAN_FORK_COST;
    }
  }
  double most = 0;
  for (int w = 0; w < threads && side; w++) most = load[w] > most ? load[w] : most;
  *k += cnt;
  return t + (side ? most + PLAN_FORK_COST : 0);
}

/* Lays out the plan for levels lvl; returns the model's time. */
static double lay_levels(const int *lvl, int nlevels, const double *cost, int n, int threads, pd_block_plan *p) {
  int k = 0;
  double t = 0;
  for (int l = 0; l < nlevels; l++) {
    p->at[l] = k;
    int before = k;
    t += place_level(lvl, cost, n, l, threads, p, &k);
    p->side[l] = 0;
    for (int j = before; j < k; j++) p->side[l] += p->part[j] >= 0;
  }
  p->at[nlevels] = k;
  p->nlevels = nlevels;
  return t;
}

/* The plan is made from the shapes the block's variables took at load, not
 * from a batch's: the same net on the same thread count runs the same plan
 * (a resumed run's first batch may be an epoch's short last one). */
static pd_status make_plan(pd_block *b, int begin, int end, const bool *only, int threads, pd_block_plan *p,
                           pd_error *err) {
  const pd_net *net = b->net;
  int n = end - begin;
  *p = (pd_block_plan){.begin = begin, .end = end, .threads = threads};
  if (only && (p->only = malloc((size_t)n + 1))) memcpy(p->only, only + begin, (size_t)n);
  int *root = malloc(sizeof(int) * ((size_t)net->nvars + 1)), *asap = malloc(sizeof(int) * (size_t)n),
      *alap = malloc(sizeof(int) * (size_t)n);
  double *cost = malloc(sizeof(double) * (size_t)n);
  pd_tensor *shape = calloc((size_t)net->nvars + 1, sizeof *shape);
  pd_tensor **bind = calloc((size_t)net->nvars + 1, sizeof *bind);
  p->order = malloc(sizeof(int) * (size_t)n), p->part = malloc(sizeof(int) * (size_t)n);
  p->at = malloc(sizeof(int) * ((size_t)n + 1)), p->side = malloc(sizeof(int) * (size_t)n);
  p->errs = calloc((size_t)threads, sizeof *p->errs), p->failed = calloc((size_t)threads, sizeof(int));
  pd_status st = PD_OK;
  if (!root || !asap || !alap || !cost || !shape || !bind || !p->order || !p->part || !p->at || !p->side || !p->errs ||
      !p->failed || (only && !p->only)) {
    st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    goto done;
  }
  for (int v = 0; v < net->nvars; v++) {
    shape[v] = net->vars[v].meta, shape[v].storage = NULL;
    for (int d = 0; d < shape[v].ndim; d++)
      if (shape[v].dims[d] < 0) shape[v].dims[d] = 64; /* the batch: any size gives the same plan */
    bind[v] = &shape[v];
  }
  for (int v = 0; v < net->nvars; v++) root[v] = v;
  for (int o = 0; o < net->nops; o++) { /* views in op order: a view of a view has the first's root */
    const pd_op *op = &net->ops[o];
    int vs = op->def->views - 1;
    if (vs < 0 || op->in[vs].n < 1 || op->in[vs].vars[0] < 0) continue;
    for (int s = 0; s < op->def->n_outputs; s++)
      for (int i = 0; i < op->out[s].n; i++)
        if (op->out[s].vars[i] >= 0) root[op->out[s].vars[i]] = root[op->in[vs].vars[0]];
  }
  int top = 0; /* levels; an op the plan is not for has none (-1) */
  for (int q = 0; q < n; q++) {
    asap[q] = only && !only[begin + q] ? -1 : 0;
    cost[q] = asap[q] < 0 ? 0 : op_cost(&net->ops[begin + q], bind);
    for (int r = 0; r < q && asap[q] >= 0; r++)
      if (asap[r] >= 0 && asap[r] + 1 > asap[q] && depends(net, root, &net->ops[begin + r], &net->ops[begin + q]))
        asap[q] = asap[r] + 1;
    if (asap[q] > top) top = asap[q];
  }
  for (int r = n - 1; r >= 0; r--) {
    alap[r] = asap[r] < 0 ? -1 : top;
    for (int q = r + 1; q < n && alap[r] >= 0; q++)
      if (alap[q] >= 0 && alap[q] - 1 < alap[r] && depends(net, root, &net->ops[begin + r], &net->ops[begin + q]))
        alap[r] = alap[q] - 1;
  }
  double t_alap = lay_levels(alap, top + 1, cost, n, threads, p);
  if (lay_levels(asap, top + 1, cost, n, threads, p) > t_alap) lay_levels(alap, top + 1, cost, n, threads, p);
done:
  free(root), free(asap), free(alap), free(cost), free(shape), free(bind);
  if (st) plan_free(p);
  return st;
}

/* The plan for [begin, end) on `threads` threads, made on first use. */
static pd_status get_plan(pd_block *b, int begin, int end, const bool *only, int threads, pd_block_plan **out,
                          pd_error *err) {
  for (int i = 0; i < b->nplans; i++) {
    const pd_block_plan *p = &b->plans[i];
    if (p->begin == begin && p->end == end && p->threads == threads && !p->only == !only &&
        (!only || !memcmp(p->only, only + begin, (size_t)(end - begin)))) {
      *out = &b->plans[i];
      return PD_OK;
    }
  }
  pd_block_plan *grown = realloc(b->plans, sizeof *grown * ((size_t)b->nplans + 1));
  if (!grown) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  b->plans = grown;
  pd_status st = make_plan(b, begin, end, only, threads, &b->plans[b->nplans], err);
  if (st) return st;
  *out = &b->plans[b->nplans++];
  return PD_OK;
}

static pd_status run_op(pd_block *b, pd_ctx *sc, int o) {
  sc->op = &b->net->ops[o];
  if (!(sc->exec && sc->exec->time_ops)) return sc->op->kernel->fn(sc);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pd_status st = sc->op->kernel->fn(sc);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  b->op_seconds[o] += (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  return st;
}

/* One level's ops side by side: part w runs those the plan gave it, into
 * an error of its own; of the ops that failed, the first in op order is the
 * one reported. */
typedef struct side_job {
  pd_block *b;
  const pd_ctx *sc;
  const pd_block_plan *p;
  int from, to;   /* places in p->order */
  pd_error *errs; /* one per part */
  int *failed;    /* per part: the op that failed, INT_MAX if none */
} side_job;

static void side_part(void *arg, int part, int nparts) {
  const side_job *j = arg;
  (void)nparts;
  pd_ctx sc = *j->sc;
  sc.err = &j->errs[part];
  j->failed[part] = INT_MAX;
  for (int q = j->from; q < j->to; q++) {
    if (j->p->part[q] != part) continue;
    int o = j->p->begin + j->p->order[q];
    if (run_op(j->b, &sc, o)) {
      j->failed[part] = o;
      return;
    }
  }
}

/* Where op o runs in plan p: its place in p->order, -1 if p is not for it. */
static int place_in(const pd_block_plan *p, int o) {
  for (int k = 0; o >= p->begin && o < p->end && k < p->at[p->nlevels]; k++)
    if (p->begin + p->order[k] == o) return k;
  return -1;
}

int pd_block_level(const pd_block *b, int o) {
  for (int i = 0; i < b->nplans; i++) {
    const pd_block_plan *p = &b->plans[i];
    int k = place_in(p, o), l = 0;
    if (k < 0) continue;
    while (p->at[l + 1] <= k) l++;
    return l;
  }
  return -1;
}

bool pd_block_side_by_side(const pd_block *b, int o) {
  for (int i = 0; i < b->nplans; i++) {
    int k = place_in(&b->plans[i], o);
    if (k >= 0 && b->plans[i].part[k] >= 0) return true;
  }
  return false;
}

/* Whether ops [begin, end) may run side by side: on the CPU, more than one
 * thread, not inside a pool part already. */
static bool side_by_side(const pd_block *b, int begin, int end, const bool *only) {
  if (pd_get_threads() < 2 || pd_parallel_inside()) return false;
  int n = 0;
  for (int o = begin; o < end; o++) {
    if (only && !only[o]) continue;
    if (!b->net->ops[o].kernel || b->net->ops[o].kernel->key.place != PD_CPU) return false;
    n++;
  }
  return n >= 2;
}

pd_status pd_block_run(pd_block *b, pd_ctx *c, pd_tensor **bind, int begin, int end, int64_t run) {
  return pd_block_run_only(b, c, bind, begin, end, NULL, run);
}

pd_status pd_block_run_only(pd_block *b, pd_ctx *c, pd_tensor **bind, int begin, int end, const bool *only,
                            int64_t run) {
  pd_exec e;
  if (c->exec) {
    e = *c->exec;
    e.seed = pd_rng_op_seed(c->exec->seed, ((uint64_t)1 << 40) + (uint64_t)b->index, (uint64_t)run);
  }
  pd_ctx sc = {.vars = bind, .exec = c->exec ? &e : NULL, .err = c->err};
  if (c->exec && c->exec->time_ops && !b->op_seconds &&
      !(b->op_seconds = calloc((size_t)b->net->nops + 1, sizeof *b->op_seconds)))
    return pd_errorf(c->err, PD_ERR_RUNTIME, "out of memory");
  if (!side_by_side(b, begin, end, only)) {
    for (int o = begin; o < end; o++) {
      pd_status st = only && !only[o] ? PD_OK : run_op(b, &sc, o);
      if (st) return st;
    }
    return PD_OK;
  }
  int threads = pd_get_threads() < PLAN_MAX_THREADS ? pd_get_threads() : PLAN_MAX_THREADS;
  pd_block_plan *p = NULL;
  pd_status st = get_plan(b, begin, end, only, threads, &p, c->err);
  if (st) return st;
  for (int l = 0; l < p->nlevels; l++) {
    int from = p->at[l], to = p->at[l + 1];
    if (p->side[l]) {
      side_job j = {b, &sc, p, from, from + p->side[l], p->errs, p->failed};
      pd_parallel_run(threads, side_part, &j);
      int first = INT_MAX, who = -1;
      for (int w = 0; w < threads; w++)
        if (p->failed[w] < first) first = p->failed[w], who = w;
      if (who >= 0) {
        *c->err = p->errs[who];
        return p->errs[who].status;
      }
      from += p->side[l];
    }
    for (int q = from; q < to; q++)
      if ((st = run_op(b, &sc, begin + p->order[q]))) return st;
  }
  return PD_OK;
}

double pd_block_flops(pd_block *b, pd_tensor **bind, int begin, int end) {
  double total = 0;
  for (int o = begin; o < end; o++) {
    pd_ctx sc = {.op = &b->net->ops[o], .vars = bind};
    if (sc.op->def->flops)
      total += sc.op->def->flops(&sc);
    else
      for (int s = 0; s < sc.op->def->n_outputs; s++)
        for (int i = 0; i < sc.op->out[s].n; i++) {
          int64_t k = pd_tensor_numel(pd_out_at(&sc, s, i));
          if (k > 0) total += (double)k;
        }
  }
  return total;
}

pd_status pd_block_add_backward(pd_block *b, const int *seeds, int nseeds, const int *wants, int nwants,
                                pd_error *err) {
  if (b->backward) return PD_OK;
  plans_free(b); /* made for the ops before */
  b->seed = calloc((size_t)nseeds + 1, sizeof(int)), b->seed_grad = calloc((size_t)nseeds + 1, sizeof(int));
  b->want = calloc((size_t)nwants + 1, sizeof(int)), b->want_grad = calloc((size_t)nwants + 1, sizeof(int));
  if (!b->seed || !b->seed_grad || !b->want || !b->want_grad) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  memcpy(b->seed, seeds, sizeof(int) * (size_t)nseeds), b->nseed = nseeds;
  memcpy(b->want, wants, sizeof(int) * (size_t)nwants), b->nwant = nwants;
  pd_status st = pd_net_add_backward_from(b->net, seeds, nseeds, b->seed_grad, wants, nwants, b->want_grad, err);
  if (st) return st;
  /* the gradient variables are the block's own, per run */
  size_t nv = (size_t)b->net->nvars + 1;
  bool *local = realloc(b->local, nv);
  pd_tensor *shapes = realloc(b->shapes, nv * sizeof *shapes);
  pd_tensor **bind = realloc(b->bind, nv * sizeof *bind);
  if (local) b->local = local;
  if (shapes) b->shapes = shapes;
  if (bind) b->bind = bind;
  if (!local || !shapes || !bind) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int v = b->nvars_built; v < b->net->nvars; v++) {
    b->local[v] = true;
    pd_tensor_init(&b->shapes[v], b->net->vars[v].meta.dtype);
  }
  b->nvars_built = b->net->nvars;
  b->backward = true;
  return PD_OK;
}

void pd_block_seed_shapes(pd_block *b, pd_tensor **bind) {
  for (int i = 0; i < b->nseed; i++) {
    pd_tensor *g = &b->shapes[b->seed_grad[i]], *v = bind[b->seed[i]];
    g->dtype = v->dtype, g->ndim = v->ndim;
    memcpy(g->dims, v->dims, sizeof g->dims);
    bind[b->seed_grad[i]] = g;
  }
}

int pd_block_want_grad(const pd_block *b, int v) {
  for (int i = 0; i < b->nwant; i++)
    if (b->want[i] == v) return b->want_grad[i];
  return -1;
}

pd_tensor *pd_block_outer_grad(const pd_block *b, pd_ctx *c, int outer_slot, int douter_slot, int i) {
  const pd_arg *a = &c->op->in[outer_slot];
  for (int k = 0; k < a->n; k++)
    if (a->vars[k] == b->outer_parent[i]) return pd_ctx_grad_of_in(c, outer_slot, douter_slot, k);
  return NULL;
}

size_t pd_block_bytes1(const pd_tensor *t) {
  pd_tensor u = *t;
  for (int d = 0; d < u.ndim; d++)
    if (u.dims[d] < 0) u.dims[d] = 1;
  size_t n = pd_tensor_bytes(&u);
  return n == SIZE_MAX ? 0 : n;
}

void pd_block_add_into(void *dst, const void *src, int64_t n, pd_dtype dt) {
  if (dt == PD_F64)
    for (int64_t e = 0; e < n; e++) ((double *)dst)[e] += ((const double *)src)[e];
  else
    for (int64_t e = 0; e < n; e++) ((float *)dst)[e] += ((const float *)src)[e];
}
