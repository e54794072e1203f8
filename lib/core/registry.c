/* registry.c — the operator registry: every built-in pd_op_def (the table
 * pd_builtin_ops, which ops/ops.c fills from ops/ops.def),
 * plus a "<type>_grad" def generated for each op with gradient kernels, and
 * attribute defaults parsed once from their text form. Built on first use. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/op.h"
#include "paddle.pb-c.h"
#include "text/textformat.h"

/* A generated grad op: its def, the slot arrays it points to, and the
 * forward def it came from. */
typedef struct grad_entry {
  pd_op_def def;
  const pd_op_def *fwd;
  pd_slot_def inputs[PD_MAX_SLOTS];
  pd_slot_def outputs[PD_MAX_SLOTS];
  char names[PD_MAX_SLOTS * 3][48];
  char type[64];
} grad_entry;

/* Parsed defaults, one per (def, attr). */
typedef struct default_entry {
  const pd_attr_def *attr;
  pd_attr value;
  Paddle__AttrValue *proto;
} default_entry;

static grad_entry *grads;
static int n_grads;
static const pd_op_def **all_defs;
static int n_all;
static const char **fwd_names;
static default_entry *defaults;
static int n_defaults;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int cmp_def(const void *a, const void *b) {
  return strcmp((*(const pd_op_def *const *)a)->type, (*(const pd_op_def *const *)b)->type);
}
static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static void make_grad(const pd_op_def *f) {
  grad_entry *g = &grads[n_grads++];
  int ni = f->n_inputs, no = f->n_outputs, k = 0;
  /* inputs: forward inputs, forward outputs, grads of forward outputs */
  for (int s = 0; s < ni; s++) g->inputs[s] = f->inputs[s];
  for (int s = 0; s < no; s++) g->inputs[ni + s] = f->outputs[s];
  for (int s = 0; s < no; s++) {
    snprintf(g->names[k], sizeof g->names[k], "%s@GRAD", f->outputs[s].name);
    g->inputs[ni + no + s] = (pd_slot_def){g->names[k++], "gradient of the forward output",
                                           PD_SLOT_DISPENSABLE | (f->outputs[s].flags & PD_SLOT_DUPLICABLE)};
  }
  for (int s = 0; s < ni; s++) {
    snprintf(g->names[k], sizeof g->names[k], "%s@GRAD", f->inputs[s].name);
    g->outputs[s] = (pd_slot_def){g->names[k++], "gradient of the forward input",
                                  PD_SLOT_DISPENSABLE | (f->inputs[s].flags & PD_SLOT_DUPLICABLE)};
  }
  /* a row-sparse gradient's row list: one more output per such input */
  int nrows = 0;
  for (int s = 0; s < ni; s++) {
    if (!(f->inputs[s].flags & PD_SLOT_ROWS_GRAD)) continue;
    snprintf(g->names[k], sizeof g->names[k], "%s@GRAD@ROWS", f->inputs[s].name);
    g->outputs[ni + nrows++] = (pd_slot_def){
        g->names[k++], "the rows of the row-sparse gradient, int64 [n] (-1: unused)", PD_SLOT_DISPENSABLE};
  }
  snprintf(g->type, sizeof g->type, "%s_grad", f->type);
  g->fwd = f;
  g->def = (pd_op_def){
      .type = g->type,
      .comment = "Gradient of the forward op (generated from its definition).",
      .inputs = g->inputs,
      .n_inputs = ni + 2 * no,
      .outputs = g->outputs,
      .n_outputs = ni + nrows,
      .attrs = f->attrs,
      .n_attrs = f->n_attrs,
      .infer_shape = f->grad_infer_shape,
      .kernels = f->grad_kernels,
      .n_kernels = f->n_grad_kernels,
      .kernel_dtype = f->kernel_dtype,
      .flops = f->grad_flops,
      .random = f->random,
      .views = f->views ? 1 + PD_GRAD_DY(ni, no, 0) : 0,          /* dX shares dOut */
      .inplace = f->grad_inplace ? 1 + PD_GRAD_DY(ni, no, 0) : 0, /* dX over dOut */
      .data = f->data,
  };
}

static void parse_defaults(const pd_op_def *d) {
  for (int a = 0; a < d->n_attrs; a++) {
    const pd_attr_def *ad = &d->attrs[a];
    if (ad->required || !ad->def) continue;
    default_entry *e = &defaults[n_defaults];
    pd_error err;
    ProtobufCMessage *m = NULL;
    if (pd_text_parse(&paddle__attr_value__descriptor, ad->def, strlen(ad->def), d->type, &m, NULL, &err) ||
        pd_attr_from_value(ad, (Paddle__AttrValue *)m, &e->value, &err)) {
      /* A bad default is a bug in the op's file, caught by the registry test. */
      fprintf(stderr, "paddle-run: internal error: op \"%s\" attribute \"%s\" default: %s\n", d->type, ad->name,
              err.msg);
      abort();
    }
    e->attr = ad;
    e->proto = (Paddle__AttrValue *)m;
    n_defaults++;
  }
}

/* Every entry of the slot and attribute tables is named: a table written
 * with designated initializers ([X] = {...}) that skips an enum value
 * leaves a zeroed entry in its place. */
static bool tables_whole(const pd_op_def *f) {
  for (int s = 0; s < f->n_inputs; s++)
    if (!f->inputs[s].name) return false;
  for (int s = 0; s < f->n_outputs; s++)
    if (!f->outputs[s].name) return false;
  for (int a = 0; a < f->n_attrs; a++)
    if (!f->attrs[a].name) return false;
  return true;
}

static void build(void) {
  int total_attrs = 0;
  grads = calloc((size_t)pd_n_builtin_ops, sizeof *grads);
  all_defs = calloc(2 * (size_t)pd_n_builtin_ops, sizeof *all_defs);
  fwd_names = calloc((size_t)pd_n_builtin_ops, sizeof *fwd_names);
  if (!grads || !all_defs || !fwd_names) abort();
  for (int i = 0; i < pd_n_builtin_ops; i++) {
    const pd_op_def *f = pd_builtin_ops[i];
    /* a grad op takes the inputs, the outputs and their gradients */
    bool wide = f->grad_kernels ? f->n_inputs > PD_MAX_SLOTS / 2 || f->n_outputs > PD_MAX_SLOTS / 4
                                : f->n_inputs > PD_MAX_SLOTS || f->n_outputs > PD_MAX_SLOTS;
    if (wide || f->n_attrs > PD_MAX_ATTRS) {
      fprintf(stderr, "paddle-run: internal error: op \"%s\" has too many slots or attributes\n", f->type);
      abort();
    }
    if (!tables_whole(f)) {
      fprintf(stderr, "paddle-run: internal error: op \"%s\" has a slot or attribute without a name\n", f->type);
      abort();
    }
    total_attrs += f->n_attrs;
    all_defs[n_all++] = f;
    fwd_names[i] = f->type;
    if (f->grad_kernels) make_grad(f);
  }
  for (int i = 0; i < n_grads; i++) all_defs[n_all++] = &grads[i].def;
  qsort(all_defs, (size_t)n_all, sizeof all_defs[0], cmp_def);
  qsort(fwd_names, (size_t)pd_n_builtin_ops, sizeof fwd_names[0], cmp_str);
  defaults = calloc((size_t)total_attrs + 1, sizeof *defaults);
  if (!defaults) abort();
  for (int i = 0; i < pd_n_builtin_ops; i++) parse_defaults(pd_builtin_ops[i]);
}

static void ensure(void) { pthread_once(&once, build); }

const pd_op_def *pd_op_find(const char *type) {
  ensure();
  int lo = 0, hi = n_all - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2, c = strcmp(type, all_defs[mid]->type);
    if (c == 0) return all_defs[mid];
    if (c < 0)
      hi = mid - 1;
    else
      lo = mid + 1;
  }
  return NULL;
}

const pd_op_def *const *pd_op_all(int *n) {
  ensure();
  *n = n_all;
  return all_defs;
}

const char *const *pd_op_names(int *n) {
  ensure();
  *n = pd_n_builtin_ops;
  return fwd_names;
}

const pd_op_def *pd_op_grad_def(const pd_op_def *fwd) {
  ensure();
  for (int i = 0; i < n_grads; i++)
    if (grads[i].fwd == fwd) return &grads[i].def;
  return NULL;
}

const pd_op_def *pd_op_forward_def(const pd_op_def *grad) {
  ensure();
  for (int i = 0; i < n_grads; i++)
    if (&grads[i].def == grad) return grads[i].fwd;
  return NULL;
}

pd_status pd_attr_parse_default(const pd_attr_def *def, pd_attr *out, pd_error *err) {
  ensure();
  for (int i = 0; i < n_defaults; i++)
    if (defaults[i].attr == def) {
      *out = defaults[i].value;
      return PD_OK;
    }
  return pd_errorf(err, PD_ERR_INPUT, "attribute \"%s\" is required", def->name);
}

pd_status pd_attr_from_value(const pd_attr_def *d, const Paddle__AttrValue *v, pd_attr *out, pd_error *err) {
  memset(out, 0, sizeof *out);
  out->type = d->type;
  int set = v->has_i + v->has_f + (v->s != NULL) + v->has_b + (v->n_ints > 0) + (v->n_floats > 0) + (v->n_strings > 0) +
            (v->n_bools > 0) + (v->block != NULL);
  const char *given = v->has_i       ? "an int (i)"
                      : v->has_f     ? "a float (f)"
                      : v->s         ? "a string (s)"
                      : v->has_b     ? "a bool (b)"
                      : v->n_ints    ? "a list of ints (ints)"
                      : v->n_floats  ? "a list of floats (floats)"
                      : v->n_strings ? "a list of strings (strings)"
                      : v->n_bools   ? "a list of bools (bools)"
                      : v->block     ? "a block (block)"
                                     : "no value";
  if (v->has_type && (int)v->type != (int)d->type)
    return pd_errorf(err, PD_ERR_INPUT, "attribute \"%s\" is declared as type %s, but the op takes %s", d->name,
                     v->type == PADDLE__ATTR_TYPE__BOOLEANS ? "list of bools"
                                                            : pd_attr_type_name((pd_attr_type)v->type),
                     pd_attr_type_name(d->type));
  if (set > 1)
    return pd_errorf(err, PD_ERR_INPUT, "attribute \"%s\" has more than one value field set; give one %s", d->name,
                     pd_attr_type_name(d->type));
  bool ok = false;
  switch (d->type) {
  case PD_ATTR_INT:
    ok = v->has_i;
    out->i = v->i;
    break;
  case PD_ATTR_FLOAT:
    ok = v->has_f || v->has_i;
    out->f = v->has_f ? v->f : (double)v->i;
    break;
  case PD_ATTR_STRING:
    ok = v->s != NULL;
    out->s = v->s;
    break;
  case PD_ATTR_BOOL:
    ok = v->has_b;
    out->b = v->b;
    break;
  case PD_ATTR_INTS:
    ok = set == 0 || v->n_ints > 0;
    out->n = (int)v->n_ints;
    out->ints = v->ints;
    break;
  case PD_ATTR_FLOATS:
    ok = set == 0 || v->n_floats > 0;
    out->n = (int)v->n_floats;
    out->floats = v->floats;
    break;
  case PD_ATTR_STRINGS:
    ok = set == 0 || v->n_strings > 0;
    out->n = (int)v->n_strings;
    out->strs = (const char **)v->strings;
    break;
  case PD_ATTR_BLOCK:
    ok = v->block != NULL;
    out->s = v->block;
    break;
  }
  if (!ok) {
    static const char *const field[] = {"i", "f", "s", "ints", "floats", "strings", "b", "bools", "block"};
    return pd_errorf(err, PD_ERR_INPUT, "attribute \"%s\" must be %s%s (value { %s: ... }), got %s", d->name,
                     d->type == PD_ATTR_INT ? "an " : "a ", pd_attr_type_name(d->type), field[d->type], given);
  }
  return pd_attr_check_range(d, out, err);
}
