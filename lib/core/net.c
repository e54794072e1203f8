/* net.c — building a network from a NetDesc (variables, ops matched against
 * their OpProto, attributes checked, kinds resolved, shapes inferred with -1
 * for the batch), pruning, shapes and FLOPs at a batch. Every message
 * about the file points at the op or variable in it. Running is runner.c's. */
#include "core/net.h"
#include "core/block.h"

#include "core/initializer.h"
#include "text/pbset.h"
#include "base/util.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"temp", "data", "param", "state"};
const char *pd_var_kind_name(pd_var_kind k) { return (unsigned)k < 4 ? kind_names[k] : "?"; }

/* ---- variables ---- */

static size_t var_probe(const pd_net *net, const char *name, bool *found) {
  size_t mask = net->nslots - 1, i = (size_t)pd_hash_str(name) & mask;
  for (;; i = (i + 1) & mask) {
    size_t v = net->slots[i];
    if (!v || strcmp(net->vars[v - 1].name, name) == 0) {
      *found = v != 0;
      return i;
    }
  }
}

int pd_net_var(const pd_net *net, const char *name) {
  if (!net->nslots) return -1;
  bool found;
  size_t i = var_probe(net, name, &found);
  return found ? (int)net->slots[i] - 1 : -1;
}

int pd_net_add_var(pd_net *net, const char *name, pd_var_kind kind, pd_dtype dtype) {
  int v = pd_net_var(net, name);
  if (v >= 0) return v;
  if ((size_t)(net->nvars + 1) * 2 > net->nslots) {
    size_t n = net->nslots ? net->nslots * 2 : 64;
    size_t *slots = calloc(n, sizeof *slots);
    if (!slots) return -1;
    free(net->slots);
    net->slots = slots;
    net->nslots = n;
    for (int k = 0; k < net->nvars; k++) {
      bool found;
      net->slots[var_probe(net, net->vars[k].name, &found)] = (size_t)k + 1;
    }
  }
  if (net->nvars == net->cap_vars) {
    int cap = net->cap_vars ? net->cap_vars * 2 : 64;
    pd_var_info *vars = realloc(net->vars, (size_t)cap * sizeof *vars);
    if (!vars) return -1;
    net->vars = vars;
    const char **names = realloc(net->names, (size_t)cap * sizeof *names);
    if (!names) return -1;
    net->names = names;
    net->cap_vars = cap;
    for (int i = 0; i < net->nops; i++) net->ops[i].names = net->names;
  }
  pd_var_info *vi = &net->vars[net->nvars];
  memset(vi, 0, sizeof *vi);
  if (!(vi->name = strdup(name))) return -1;
  vi->kind = kind;
  vi->producer = -1;
  vi->param_init = NAN;
  vi->state_init = NAN;
  vi->lr_mult = vi->decay_mult = 1;
  vi->decl_ndim = -1;
  pd_tensor_init(&vi->meta, dtype);
  net->names[net->nvars] = vi->name;
  bool found;
  net->slots[var_probe(net, name, &found)] = (size_t)net->nvars + 1;
  return net->nvars++;
}

void *pd_net_keep(pd_net *net, size_t bytes) {
  void **keep = realloc(net->keep, sizeof *keep * (size_t)(net->nkeep + 1));
  if (!keep) return NULL;
  net->keep = keep;
  void *p = calloc(1, bytes ? bytes : 1);
  if (p) net->keep[net->nkeep++] = p;
  return p;
}

const char *pd_net_op_label(const pd_net *net, int op, char *buf, size_t size) {
  const pd_op *o = &net->ops[op];
  char in[300] = "";
  if (net->block_name) snprintf(in, sizeof in, "block \"%s\", ", net->block_name);
  if (o->line > 0)
    snprintf(buf, size, "%sop #%d \"%s\" (%s:%d:%d)", in, op, o->def->type, net->file, o->line, o->col);
  else
    snprintf(buf, size, "%sop #%d \"%s\"", in, op, o->def->type);
  return buf;
}

/* ---- ops ---- */

pd_status pd_net_add_op(pd_net *net, const pd_op_def *def, const char *const *ins, const int *in_n,
                        const char *const *outs, const int *out_n, const pd_attr *attrs, int fwd, pd_error *err) {
  if (net->nops == net->cap_ops) {
    int cap = net->cap_ops ? net->cap_ops * 2 : 32;
    pd_op *ops = realloc(net->ops, (size_t)cap * sizeof *ops);
    if (!ops) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    net->ops = ops;
    net->cap_ops = cap;
  }
  pd_op *op = &net->ops[net->nops];
  memset(op, 0, sizeof *op);
  op->def = def;
  op->index = net->nops;
  op->fwd = fwd;
  op->file = net->file;
  op->block = net->block_name;
  for (int i = 0; i < 2; i++) pd_tensor_init(&op->work[i], net->float_dtype);
  net->nops++; /* from here on pd_net_free releases what op holds */
  const char *const *names[2] = {ins, outs};
  const int *counts[2] = {in_n, out_n};
  int nslots[2] = {def->n_inputs, def->n_outputs};
  for (int side = 0; side < 2; side++) {
    pd_arg *args = side ? op->out : op->in;
    int k = 0;
    for (int s = 0; s < nslots[side]; s++) {
      int n = counts[side] ? counts[side][s] : 1;
      args[s].vars = malloc(sizeof(int) * (size_t)(n ? n : 1));
      if (!args[s].vars) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
      args[s].n = 0;
      for (int i = 0; i < n; i++, k++) {
        const char *name = names[side][k];
        if (!name || !*name) continue;
        int v = pd_net_add_var(net, name, PD_VAR_TEMP, net->float_dtype);
        if (v < 0) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
        args[s].vars[args[s].n++] = v;
        if (side && net->vars[v].producer < 0) net->vars[v].producer = op->index;
      }
    }
  }
  for (int a = 0; a < def->n_attrs; a++) {
    if (attrs)
      op->attrs[a] = attrs[a];
    else {
      pd_status st = pd_attr_parse_default(&def->attrs[a], &op->attrs[a], err);
      if (st) return st;
    }
  }
  op->names = net->names;
  return PD_OK;
}

/* ---- building from a NetDesc ---- */

typedef struct builder {
  pd_net *net;
  pd_error *err;
  const char *const *fill_in; /* the op's inputs, filled in, while its outputs are */
  size_t n_fill_in;
} builder;

static void pos_of(const pd_net *net, const void *msg, const char *field, size_t index, int *line, int *col) {
  *line = *col = 0;
  const ProtobufCFieldDescriptor *f = NULL;
  if (field) f = protobuf_c_message_descriptor_get_field_by_name(((const ProtobufCMessage *)msg)->descriptor, field);
  if (!f || !pd_srcmap_find(&net->map, msg, f, index, line, col)) pd_srcmap_find(&net->map, msg, NULL, 0, line, col);
}

/* "net.pbtxt:12:3: " + message + caret line */
static pd_status fail_at(const pd_net *net, pd_error *err, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static pd_status fail_at(const pd_net *net, pd_error *err, int line, int col, const char *fmt, ...) {
  char msg[PD_ERROR_MAX / 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (line <= 0) return pd_errorf(err, PD_ERR_INPUT, "%s: %s", net->file, msg);
  return pd_error_at(err, PD_ERR_INPUT, net->file, net->src, net->src_len, line, col, "%s", msg);
}

/* "op #3 "fc"" — for messages that already carry the op's position. */
static const char *op_short(const pd_net *net, int op, char *buf, size_t size) {
  if (net->block_name)
    snprintf(buf, size, "block \"%s\", op #%d \"%s\"", net->block_name, op, net->ops[op].def->type);
  else
    snprintf(buf, size, "op #%d \"%s\"", op, net->ops[op].def->type);
  return buf;
}

static const char *slot_list(const pd_slot_def *slots, int n, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int s = 0; s < n && used < size; s++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s%s", s ? ", " : "", slots[s].name,
                             slots[s].flags & PD_SLOT_DISPENSABLE  ? " (optional)"
                             : slots[s].flags & PD_SLOT_DUPLICABLE ? " (one or more)"
                                                                   : "");
  return buf;
}

/* Distributes a flat list of names over the def's slots: a plain slot takes
 * one, a duplicable slot what the slots after it leave, an optional slot one
 * if there is one to spare. */
/* The length of list attribute `name` (a slot's count attribute), -1 if none. */
static int list_len(const pd_op_def *def, const pd_attr *attrs, const char *name) {
  for (int a = 0; a < def->n_attrs; a++)
    if (!strcmp(def->attrs[a].name, name)) return attrs[a].n;
  return -1;
}

static pd_status assign_slots(builder *b, int opi, const Paddle__OpDesc *od, bool outputs, const pd_attr *attrs,
                              const char *const *names, size_t n_names, int *counts) {
  const pd_op_def *def = pd_op_find(od->type);
  const pd_slot_def *slots = outputs ? def->outputs : def->inputs;
  int nslots = outputs ? def->n_outputs : def->n_inputs;
  int n = (int)n_names;
  const char *what = outputs ? "output" : "input";
  int line, col, pos = 0;
  pos_of(b->net, od, outputs ? "outputs" : "inputs", 0, &line, &col);
  char list[512];
  for (int s = 0; s < nslots; s++) {
    /* slots after this one need one name each if required; after a
     * duplicable slot every later slot keeps its position (maybe "") */
    int need_after = 0;
    for (int t = s + 1; t < nslots; t++) {
      int w = pd_slot_count_attr(def, outputs, t) && !(slots[t].flags & PD_SLOT_DISPENSABLE)
                  ? list_len(def, attrs, pd_slot_count_attr(def, outputs, t))
                  : -1;
      /* a slot of a known count leaves the later ones no placeholders to keep;
       * nor does a core-filled Outer slot (if_else's X takes every name) */
      bool keeps = (slots[s].flags & PD_SLOT_DUPLICABLE) && !pd_slot_count_attr(def, outputs, s) &&
                   !(slots[t].flags & PD_SLOT_OUTER);
      need_after += w >= 0 ? w : keeps || !(slots[t].flags & PD_SLOT_DISPENSABLE);
    }
    int avail = n - pos - need_after, take;
    const char *count = pd_slot_count_attr(def, outputs, s);
    int want = count ? list_len(def, attrs, count) : -1;
    if (want >= 0) {
      take = avail >= want ? want : 0;
      if (take < want && !(slots[s].flags & PD_SLOT_DISPENSABLE)) {
        if (!line) pos_of(b->net, od, NULL, 0, &line, &col);
        return fail_at(b->net, b->err, line, col,
                       "op #%d \"%s\": %s \"%s\" takes one variable per entry of attribute \"%s\" (%d), but only %d "
                       "%ss are left for it",
                       opi, od->type, what, slots[s].name, count, want, avail > 0 ? avail : 0, what);
      }
      if (!want) {
        counts[s] = 0;
        continue;
      }
    } else if (slots[s].flags & PD_SLOT_DUPLICABLE)
      take = avail > 0 ? avail : 0;
    else
      take = avail > 0 ? 1 : 0;
    if (take == 0 && !(slots[s].flags & PD_SLOT_DISPENSABLE)) {
      /* too few names: they fill the required slots in order, so the one
       * missing is the first required slot past the names given */
      int missing = s, req = 0;
      for (int t = 0; t < nslots; t++)
        if (!(slots[t].flags & PD_SLOT_DISPENSABLE) && req++ == n) {
          missing = t;
          break;
        }
      if (!line) pos_of(b->net, od, NULL, 0, &line, &col);
      return fail_at(b->net, b->err, line, col, "op #%d \"%s\": %s \"%s\" (%s) is missing; %s takes %ss %s, got %d",
                     opi, od->type, what, slots[missing].name, slots[missing].comment, od->type, what,
                     slot_list(slots, nslots, list, sizeof list), n);
    }
    for (int i = 0; i < take; i++)
      if (!*names[pos + i] && !(slots[s].flags & PD_SLOT_DISPENSABLE) && want < 0) {
        pos_of(b->net, od, outputs ? "outputs" : "inputs", (size_t)(pos + i), &line, &col);
        return fail_at(b->net, b->err, line, col, "op #%d \"%s\": %s \"%s\" is required but given as \"\"", opi,
                       od->type, what, slots[s].name);
      }
    counts[s] = take;
    pos += take;
  }
  if (pos < n) {
    pos_of(b->net, od, outputs ? "outputs" : "inputs", (size_t)pos, &line, &col);
    return fail_at(b->net, b->err, line, col, "op #%d \"%s\": too many %ss: %s takes %s, got %d", opi, od->type, what,
                   od->type, slot_list(slots, nslots, list, sizeof list), n);
  }
  return PD_OK;
}

static pd_status build_attrs(builder *b, int opi, const Paddle__OpDesc *od, const pd_op_def *def, pd_attr *attrs) {
  pd_net *net = b->net;
  int line, col;
  bool given[PD_MAX_ATTRS] = {0};
  const char *attr_names[PD_MAX_ATTRS];
  for (int a = 0; a < def->n_attrs; a++) attr_names[a] = def->attrs[a].name;
  for (size_t j = 0; j < od->n_attrs; j++) {
    const Paddle__OpDesc__AttrsEntry *e = od->attrs[j];
    pos_of(net, e, "key", 0, &line, &col);
    int a = 0;
    while (a < def->n_attrs && strcmp(def->attrs[a].name, e->key) != 0) a++;
    if (a == def->n_attrs) {
      const char *sug = pd_suggest(e->key, attr_names, (size_t)def->n_attrs);
      char list[512];
      size_t used = 0;
      list[0] = '\0';
      for (int k = 0; k < def->n_attrs && used < sizeof list; k++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "", def->attrs[k].name);
      if (sug)
        return fail_at(net, b->err, line, col, "op #%d \"%s\": unknown attribute \"%s\" (did you mean \"%s\"?)", opi,
                       od->type, e->key, sug);
      return fail_at(net, b->err, line, col, "op #%d \"%s\": unknown attribute \"%s\"; %s takes %s", opi, od->type,
                     e->key, od->type, def->n_attrs ? list : "no attributes");
    }
    if (given[a])
      return fail_at(net, b->err, line, col, "op #%d \"%s\": attribute \"%s\" is given twice", opi, od->type, e->key);
    given[a] = true;
    static const Paddle__AttrValue empty = PADDLE__ATTR_VALUE__INIT;
    pd_error e2;
    if (pd_attr_from_value(&def->attrs[a], e->value ? e->value : &empty, &attrs[a], &e2)) {
      if (e->value) pos_of(net, e, "value", 0, &line, &col);
      return fail_at(net, b->err, line, col, "op #%d \"%s\": %s", opi, od->type, e2.msg);
    }
    /* gradcheck runs the whole net in float64: "float32" means the net's float type */
    if (def->attrs[a].type == PD_ATTR_STRING && strcmp(def->attrs[a].name, "dtype") == 0 &&
        strcmp(attrs[a].s, "float32") == 0)
      attrs[a].s = pd_dtype_name(net->float_dtype);
  }
  for (int a = 0; a < def->n_attrs; a++) {
    if (given[a]) continue;
    if (def->attrs[a].required) {
      pos_of(net, od, NULL, 0, &line, &col);
      return fail_at(net, b->err, line, col, "op #%d \"%s\": attribute \"%s\" (%s) is required", opi, od->type,
                     def->attrs[a].name, def->attrs[a].comment);
    }
    pd_status st = pd_attr_parse_default(&def->attrs[a], &attrs[a], b->err);
    if (st) return st;
    if (def->attrs[a].type == PD_ATTR_STRING && strcmp(def->attrs[a].name, "dtype") == 0 &&
        strcmp(attrs[a].s, "float32") == 0)
      attrs[a].s = pd_dtype_name(net->float_dtype);
  }
  return PD_OK;
}

/* Whether a shape's element count (the batch, -1, taken as 1) times 8 bytes
 * stays within 63 bits, so every size computed from it is safe. */
static bool fits_64bits(int ndim, const int64_t *dims) {
  int64_t n = 8;
  for (int i = 0; i < ndim; i++) {
    /* a 0 (or the batch) counts as 1: an op multiplies the other dims
     * alone (fc's K of [0, a, b, c] is a b c) */
    int64_t d = dims[i] <= 0 ? 1 : dims[i];
    if (n > INT64_MAX / d) return false;
    n *= d;
  }
  return true;
}

/* fail_at, pointing at a field of msg (or at msg when field is NULL). */
static pd_status fail_field(builder *b, const void *msg, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static pd_status fail_field(builder *b, const void *msg, const char *field, const char *fmt, ...) {
  char text[PD_ERROR_MAX / 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  int line, col;
  pos_of(b->net, msg, field, 0, &line, &col);
  return fail_at(b->net, b->err, line, col, "%s", text);
}

/* Whether v is a value of dtype dt (integers: whole and in range), so an
 * initializer's constant or bounds are not wrapped or made infinite. */
static bool is_value_of(double v, pd_dtype dt) {
  switch (dt) {
  case PD_F32:
    return fabs(v) <= FLT_MAX;
  case PD_F64:
    return isfinite(v);
  case PD_I32:
    return v == floor(v) && v >= INT32_MIN && v <= INT32_MAX;
  case PD_I64:
    return v == floor(v) && v >= -0x1p63 && v < 0x1p63;
  case PD_U8:
    return v == floor(v) && v >= 0 && v <= 255;
  }
  return false;
}

/* The values a variable's own initializer gives must be values of its
 * dtype (uint8 1000 would wrap to 232). */
static pd_status check_init(builder *b, const Paddle__VarDesc *vd, pd_dtype dt) {
  const Paddle__Initializer *in = vd->init;
  if (!in) return PD_OK;
  const char *fields[] = {"value", "min", "max", "mean"};
  const bool has[] = {in->has_value, in->has_min, in->has_max, in->has_mean};
  const double values[] = {in->value, in->min, in->max, in->mean};
  for (int i = 0; i < 4; i++)
    if (has[i] && !is_value_of(values[i], dt)) {
      char v[32];
      pd_format_double(values[i], v, sizeof v);
      return fail_field(b, in, fields[i], "variable \"%s\" is %s: its init %s %s is not a %s value", vd->name,
                        pd_dtype_name(dt), fields[i], v, pd_dtype_name(dt));
    }
  return PD_OK;
}

/* A parameter's multipliers scale its lr and weight decay: a number >= 0. */
static pd_status check_mults(builder *b, const Paddle__VarDesc *vd) {
  const char *fields[] = {"lr_mult", "decay_mult"};
  const bool has[] = {vd->has_lr_mult, vd->has_decay_mult};
  const double values[] = {vd->lr_mult, vd->decay_mult};
  for (int i = 0; i < 2; i++)
    if (has[i] && !(isfinite(values[i]) && values[i] >= 0)) {
      char v[32];
      pd_format_double(values[i], v, sizeof v);
      return fail_field(b, vd, fields[i], "variable \"%s\": %s %s must be a finite number >= 0", vd->name, fields[i],
                        v);
    }
  return PD_OK;
}

/* trainable, lr_mult and decay_mult are a parameter's settings: on any
 * other variable they would silently do nothing. */
static pd_status check_param_settings(builder *b, const pd_var_info *vi) {
  const Paddle__VarDesc *vd = vi->decl;
  if (!vd || vi->kind == PD_VAR_PARAM) return PD_OK;
  const char *field = vd->has_trainable    ? "trainable"
                      : vd->has_lr_mult    ? "lr_mult"
                      : vd->has_decay_mult ? "decay_mult"
                                           : NULL;
  if (!field) return PD_OK;
  return fail_field(b, vd, field, "variable \"%s\" is %s, not a parameter: %s applies to parameters only", vi->name,
                    vi->kind == PD_VAR_TEMP ? "computed by an op" : pd_var_kind_name(vi->kind), field);
}

static pd_status build_vars(builder *b) {
  pd_net *net = b->net;
  const Paddle__NetDesc *d = net->desc;
  for (size_t i = 0; i < d->n_var; i++) {
    const Paddle__VarDesc *vd = d->var[i];
    int line, col;
    pos_of(net, vd, "name", 0, &line, &col);
    if (!*vd->name) return fail_at(net, b->err, line, col, "a variable needs a name");
    if (pd_net_var(net, vd->name) >= 0)
      return fail_at(net, b->err, line, col, "variable \"%s\" is declared twice", vd->name);
    pd_dtype dt = (pd_dtype)vd->dtype;
    if (dt == PD_F32) dt = net->float_dtype;
    static const pd_var_kind kinds[] = {PD_VAR_TEMP, PD_VAR_DATA, PD_VAR_PARAM, PD_VAR_STATE};
    int v = pd_net_add_var(net, vd->name, kinds[vd->kind], dt);
    if (v < 0) return pd_errorf(b->err, PD_ERR_RUNTIME, "out of memory");
    pd_var_info *vi = &net->vars[v];
    vi->declared = true;
    vi->no_grad = vd->no_gradient;
    vi->init = vd->init;
    vi->decl = vd;
    vi->frozen = vd->has_trainable && !vd->trainable;
    vi->lr_mult = vd->lr_mult;
    vi->decay_mult = vd->decay_mult;
    pd_status ist = check_init(b, vd, dt);
    if (!ist) ist = check_mults(b, vd);
    if (ist) return ist;
    vi->line = line;
    vi->col = col;
    if (vd->n_shape > PD_MAX_DIMS) {
      pos_of(net, vd, "shape", 0, &line, &col);
      return fail_at(net, b->err, line, col, "variable \"%s\" has %zu dims; at most %d are supported", vd->name,
                     vd->n_shape, PD_MAX_DIMS);
    }
    for (size_t k = 0; k < vd->n_shape; k++)
      if (vd->shape[k] < -1 || (vd->shape[k] == -1 && k != 0) || vd->shape[k] > ((int64_t)1 << 40)) {
        pos_of(net, vd, "shape", k, &line, &col);
        return fail_at(net, b->err, line, col,
                       "variable \"%s\": dimension %zu is %lld; dims must be >= 0, and only the first may be -1 "
                       "(the batch)",
                       vd->name, k, (long long)vd->shape[k]);
      }
    if (vd->n_shape && !fits_64bits((int)vd->n_shape, vd->shape)) {
      char d[128];
      return fail_at(net, b->err, line, col, "variable \"%s\" has shape %s: more elements than fit in 64 bits",
                     vd->name, pd_dims_str((int)vd->n_shape, vd->shape, d, sizeof d));
    }
    if (vd->n_shape) {
      vi->decl_ndim = (int)vd->n_shape;
      memcpy(vi->decl_dims, vd->shape, sizeof(int64_t) * vd->n_shape);
    }
    if (vd->n_shape || vd->kind != PADDLE__VAR_KIND__AUTO) {
      vi->meta.ndim = (int)vd->n_shape;
      for (size_t k = 0; k < vd->n_shape; k++) vi->meta.dims[k] = vd->shape[k];
      if (!vd->n_shape) vi->meta.ndim = -1;
    }
  }
  return PD_OK;
}

/* A copy of a flat name list with `add` names inserted where slot `slot`
 * begins (its count was 0); counts[slot] becomes n_add. */
static const char **insert_names(char *const *names, size_t n, int *counts, int slot, const char *const *add,
                                 int n_add) {
  const char **out = malloc(sizeof *out * (n + (size_t)n_add + 1));
  if (!out) return NULL;
  size_t at = 0, k = 0;
  for (int s = 0; s < slot; s++) at += (size_t)counts[s];
  for (size_t i = 0; i < at && i < n; i++) out[k++] = names[i];
  for (int i = 0; i < n_add; i++) out[k++] = add[i];
  for (size_t i = at; i < n; i++) out[k++] = names[i];
  counts[slot] = n_add;
  return out;
}

/* Whether any op of the NetDesc or any declared variable uses `name`. */
static bool name_used(const pd_net *net, const char *name) {
  if (pd_net_var(net, name) >= 0) return true;
  const Paddle__NetDesc *d = net->desc;
  for (size_t i = 0; i < d->n_op; i++) {
    for (size_t k = 0; k < d->op[i]->n_inputs; k++)
      if (!strcmp(d->op[i]->inputs[k], name)) return true;
    for (size_t k = 0; k < d->op[i]->n_outputs; k++)
      if (!strcmp(d->op[i]->outputs[k], name)) return true;
  }
  return false;
}

/* The names of an op whose inputs (outputs) stop right before the first
 * slot with a fill (op.h): the rest filled in, "" for the optional slots
 * that have none. Only where that first slot is required, so that a
 * NetDesc that loaded before means what it meant. *out NULL: as given. */
static pd_status fill_left_out(builder *b, int opi, const Paddle__OpDesc *od, const pd_op_def *def, bool outputs,
                               const char ***out, size_t *n_out) {
  const pd_slot_def *slots = outputs ? def->outputs : def->inputs;
  const char *const *fills = outputs ? def->fill_out : def->fill_in;
  int nslots = outputs ? def->n_outputs : def->n_inputs;
  char *const *names = outputs ? od->outputs : od->inputs;
  size_t n = outputs ? od->n_outputs : od->n_inputs;
  int f = 0;
  *out = NULL;
  *n_out = n;
  if (!fills) return PD_OK;
  while (f < nslots && !fills[f]) f++;
  if (f == nslots || (size_t)f != n || !od->n_outputs || !*od->outputs[0] || (slots[f].flags & PD_SLOT_DISPENSABLE))
    return PD_OK;
  for (int s = 0; s < f; s++)
    if (slots[s].flags & PD_SLOT_DUPLICABLE || pd_slot_count_attr(def, outputs, s)) return PD_OK;
  for (int s = f; s < nslots; s++)
    if (!fills[s] && !(slots[s].flags & PD_SLOT_DISPENSABLE)) return PD_OK;
  const char **all = malloc(sizeof *all * (size_t)nslots);
  if (!all) return pd_errorf(b->err, PD_ERR_RUNTIME, "out of memory");
  for (size_t i = 0; i < n; i++) all[i] = names[i];
  const char *first = od->outputs[0];
  for (int s = f; s < nslots; s++) {
    const char *fill = fills[s];
    all[s] = "";
    if (!fill) continue;
    int from = -1;
    for (int t = 0; outputs && fill[0] != '@' && t < def->n_inputs; t++)
      if (!strcmp(def->inputs[t].name, fill)) from = t;
    if (from >= 0) { /* the input's variable, as given or filled in */
      all[s] = b->fill_in && from < (int)b->n_fill_in ? b->fill_in[from] : "";
      continue;
    }
    char *name = pd_net_keep(b->net, strlen(first) + strlen(fill) + 2);
    if (!name) {
      free(all);
      return pd_errorf(b->err, PD_ERR_RUNTIME, "out of memory");
    }
    sprintf(name, fill[0] == '@' ? "%s%s" : "%s.%s", first, fill);
    if (name_used(b->net, name)) {
      int line, col;
      pos_of(b->net, od, outputs ? "outputs" : "inputs", 0, &line, &col);
      if (!line) pos_of(b->net, od, NULL, 0, &line, &col);
      free(all);
      return fail_at(b->net, b->err, line, col,
                     "op #%d \"%s\": %s %s is left out, so it would be made as \"%s\", but the net already has a "
                     "variable \"%s\"; name the %s in the op's %ss",
                     opi, od->type, outputs ? "output" : "input", slots[s].name, name, name,
                     outputs ? "output" : "parameter", outputs ? "output" : "input");
    }
    all[s] = name;
  }
  /* trailing optional slots left empty need no placeholder */
  int end = nslots;
  while (end > f && !*all[end - 1]) end--;
  *out = all;
  *n_out = (size_t)end;
  return PD_OK;
}

/* An op without blocks whose PD_SLOT_STEPS output is left out (the values
 * a fused recurrent op keeps for its gradient): named "<first output>@STEPS". */
static pd_status name_steps(builder *b, const Paddle__OpDesc *od, const pd_op_def *def, int *out_n,
                            const char ***outs) {
  for (int s = 0; s < def->n_outputs; s++) {
    if (!(def->outputs[s].flags & PD_SLOT_STEPS) || out_n[s] || !od->n_outputs) continue;
    char *name = pd_net_keep(b->net, strlen(od->outputs[0]) + sizeof "@STEPS");
    if (name) sprintf(name, "%s@STEPS", od->outputs[0]);
    const char *one[] = {name};
    if (!name || !(*outs = insert_names(od->outputs, od->n_outputs, out_n, s, one, 1)))
      return pd_errorf(b->err, PD_ERR_RUNTIME, "out of memory");
  }
  return PD_OK;
}

/* An op that runs blocks (BLOCK attributes): each block is built as a net
 * of its own (core/block.h) with the names the op feeds it. Where the
 * NetDesc leaves them out, the op's PD_SLOT_OUTER input lists the variables
 * of this net its blocks read, and its PD_SLOT_STEPS output is named
 * "<block>@STEPS"; an Outer list that is given must hold all of them. */
static pd_status build_op_blocks(builder *b, int opi, const Paddle__OpDesc *od, const pd_op_def *def, pd_attr *attrs,
                                 int *in_n, int *out_n, const char ***ins, const char ***outs) {
  pd_net *net = b->net;
  int nblk = 0, line, col;
  for (int a = 0; a < def->n_attrs; a++) nblk += def->attrs[a].type == PD_ATTR_BLOCK;
  if (!nblk) return name_steps(b, od, def, out_n, outs);
  if (net->check_only) return PD_OK;
  /* the feeds are names from the inputs and list attributes: no more than
   * all of them (a fixed list would drop the 257th state silently) */
  size_t most = od->n_inputs;
  for (int a = 0; a < def->n_attrs; a++) most += def->attrs[a].type == PD_ATTR_STRINGS ? (size_t)attrs[a].n : 0;
  const char **feeds = malloc(sizeof *feeds * (most + 1));
  if (!feeds) return pd_errorf(b->err, PD_ERR_RUNTIME, "out of memory");
  int nfeed = def->block_feeds ? def->block_feeds(attrs, (const char *const *)od->inputs, in_n, feeds, (int)most) : 0;
  pd_status st = PD_OK;
  const char *first = NULL;
  int nouter = 0, cap = 0;
  const char **outer = NULL;
  for (int a = 0; a < def->n_attrs && !st; a++) {
    if (def->attrs[a].type != PD_ATTR_BLOCK) continue;
    if ((st = pd_block_get(net, attrs[a].s, feeds, nfeed, &attrs[a].blk, b->err))) break;
    const pd_block *blk = attrs[a].blk;
    if (!first) first = blk->name;
    for (int i = 0; i < blk->nouter && !st; i++) {
      const char *name = net->vars[blk->outer_parent[i]].name;
      bool dup = false;
      for (int j = 0; j < nouter && !dup; j++) dup = !strcmp(outer[j], name);
      if (dup) continue;
      if (nouter == cap) {
        cap = cap ? 2 * cap : 16;
        const char **grown = realloc(outer, sizeof *outer * (size_t)cap);
        if (!grown) {
          st = pd_errorf(b->err, PD_ERR_RUNTIME, "out of memory");
          break;
        }
        outer = grown;
      }
      outer[nouter++] = name;
    }
  }
  for (int s = 0; s < def->n_inputs && !st; s++) {
    if (!(def->inputs[s].flags & PD_SLOT_OUTER)) continue;
    if (!in_n[s]) {
      if (!(*ins = insert_names(od->inputs, od->n_inputs, in_n, s, outer, nouter)))
        st = pd_errorf(b->err, PD_ERR_RUNTIME, "out of memory");
      break;
    }
    size_t at = 0;
    for (int t = 0; t < s; t++) at += (size_t)in_n[t];
    for (int j = 0; j < nouter && !st; j++) {
      bool listed = false;
      for (int i = 0; i < in_n[s] && !listed; i++) listed = !strcmp(od->inputs[at + (size_t)i], outer[j]);
      if (listed) continue;
      pos_of(net, od, "inputs", at, &line, &col);
      st = fail_at(net, b->err, line, col,
                   "op #%d \"%s\": input %s lists the variables its blocks read from outside, but leaves out \"%s\" "
                   "(or leave %s out and it is filled in)",
                   opi, od->type, def->inputs[s].name, outer[j], def->inputs[s].name);
    }
  }
  for (int s = 0; s < def->n_outputs && !st; s++) {
    if (!(def->outputs[s].flags & PD_SLOT_STEPS) || out_n[s]) continue;
    /* the net keeps the name (the list only points at it) */
    char *name = pd_net_keep(net, strlen(first) + sizeof "@STEPS");
    if (name) sprintf(name, "%s@STEPS", first);
    const char *one[] = {name};
    if (!name || !(*outs = insert_names(od->outputs, od->n_outputs, out_n, s, one, 1)))
      st = pd_errorf(b->err, PD_ERR_RUNTIME, "out of memory");
  }
  free(outer), free(feeds);
  return st;
}

static pd_status build_ops(builder *b) {
  pd_net *net = b->net;
  const Paddle__NetDesc *d = net->desc;
  int nnames;
  const char *const *names = pd_op_names(&nnames);
  for (size_t i = 0; i < d->n_op; i++) {
    const Paddle__OpDesc *od = d->op[i];
    int opi = (int)i, line, col;
    pos_of(net, od, "type", 0, &line, &col);
    const pd_op_def *def = pd_op_find(od->type);
    if (!def) {
      const char *sug = pd_suggest(od->type, names, (size_t)nnames);
      if (sug)
        return fail_at(net, b->err, line, col, "op #%d: unknown op type \"%s\" (did you mean \"%s\"?)", opi, od->type,
                       sug);
      return fail_at(net, b->err, line, col, "op #%d: unknown op type \"%s\" (`paddle-run ops` lists them)", opi,
                     od->type);
    }
    int in_n[PD_MAX_SLOTS], out_n[PD_MAX_SLOTS];
    pd_attr attrs[PD_MAX_ATTRS];
    memset(attrs, 0, sizeof attrs);
    /* the attributes first only where a slot's count is one of them: a
     * missing input is the first thing said otherwise */
    bool counted = false;
    for (int s = 0; s < def->n_inputs; s++) counted |= pd_slot_count_attr(def, false, s) != NULL;
    for (int s = 0; s < def->n_outputs; s++) counted |= pd_slot_count_attr(def, true, s) != NULL;
    pd_status st = counted ? build_attrs(b, opi, od, def, attrs) : PD_OK;
    /* parameters and optional outputs left out (docs/netdesc.md, "Left out") */
    const char **fin = NULL, **fout = NULL;
    size_t nfin = od->n_inputs, nfout = od->n_outputs;
    if (!st) st = fill_left_out(b, opi, od, def, false, &fin, &nfin);
    b->fill_in = fin ? fin : (const char *const *)od->inputs;
    b->n_fill_in = nfin;
    if (!st) st = fill_left_out(b, opi, od, def, true, &fout, &nfout);
    b->fill_in = NULL;
    const char *const *in_names = fin ? fin : (const char *const *)od->inputs;
    const char *const *out_names = fout ? fout : (const char *const *)od->outputs;
    if (!st) st = assign_slots(b, opi, od, false, attrs, in_names, nfin, in_n);
    if (!st) st = assign_slots(b, opi, od, true, attrs, out_names, nfout, out_n);
    if (!st && !counted) st = build_attrs(b, opi, od, def, attrs);
    const char **ins = NULL, **outs = NULL;
    if (!st) st = build_op_blocks(b, opi, od, def, attrs, in_n, out_n, &ins, &outs);
    if (!st)
      st = pd_net_add_op(net, def, ins ? ins : in_names, in_n, outs ? outs : out_names, out_n, attrs, -1, b->err);
    free(ins), free(outs), free(fin), free(fout);
    if (st) return st;
    pos_of(net, od, NULL, 0, &line, &col);
    net->ops[opi].line = line;
    net->ops[opi].col = col;
  }
  net->n_forward = net->nops;
  return PD_OK;
}

pd_status pd_net_build_desc_vars(pd_net *net, pd_error *err) {
  builder b = {.net = net, .err = err};
  return build_vars(&b);
}

pd_status pd_net_build_desc_ops(pd_net *net, pd_error *err) {
  builder b = {.net = net, .err = err};
  return build_ops(&b);
}

pd_status pd_net_build_desc(pd_net *net, pd_error *err) {
  pd_status st = pd_net_build_desc_vars(net, err);
  return st ? st : pd_net_build_desc_ops(net, err);
}

static bool op_reads(const pd_op *op, int v) {
  for (int s = 0; s < op->def->n_inputs; s++)
    for (int i = 0; i < op->in[s].n; i++)
      if (op->in[s].vars[i] == v) return true;
  return false;
}

/* Who writes what, and what each variable is. */
pd_status pd_net_resolve_kinds(pd_net *net, pd_error *err) {
  builder bb = {.net = net, .err = err}, *b = &bb;
  char l1[160], l2[160];
  bool *param_slot = calloc((size_t)net->nvars + 1, 1), *read = calloc((size_t)net->nvars + 1, 1);
  bool *state_slot = calloc((size_t)net->nvars + 1, 1);
  int *reader = calloc((size_t)net->nvars + 1, sizeof(int));
  if (!param_slot || !read || !reader || !state_slot) {
    free(param_slot), free(read), free(reader), free(state_slot);
    return pd_errorf(b->err, PD_ERR_RUNTIME, "out of memory");
  }
  pd_status st = PD_OK;
  for (int o = 0; o < net->nops && !st; o++) {
    pd_op *op = &net->ops[o];
    for (int s = 0; s < op->def->n_inputs; s++)
      for (int i = 0; i < op->in[s].n; i++) {
        int v = op->in[s].vars[i];
        if (!read[v]) reader[v] = o;
        read[v] = true;
        if ((op->def->inputs[s].flags & PD_SLOT_PARAM) && !param_slot[v] && op->def->param_init)
          net->vars[v].param_init = op->def->param_init[s];
        if (op->def->inputs[s].flags & PD_SLOT_PARAM) param_slot[v] = true;
        if ((op->def->inputs[s].flags & PD_SLOT_STATE) && !state_slot[v]) {
          state_slot[v] = true;
          net->vars[v].state_init = op->def->state_init ? op->def->state_init[s] : 0;
        }
        /* a net printed with its update ops declares their state (@lr,
         * p@MOMENT1, ...) as STATE: it starts at zero, as AddOptimizerOps's */
        if (net->vars[v].kind == PD_VAR_STATE && !(op->def->inputs[s].flags & PD_SLOT_PARAM) &&
            (op->def->flags & PD_OP_UPDATE))
          net->vars[v].optimizer_state = true;
      }
    for (int s = 0; s < op->def->n_outputs && !st; s++)
      for (int i = 0; i < op->out[s].n && !st; i++) {
        int v = op->out[s].vars[i];
        pd_var_info *vi = &net->vars[v];
        if (vi->kind == PD_VAR_DATA)
          st = fail_at(net, b->err, op->line, op->col, "%s writes \"%s\", which is declared as data",
                       op_short(net, o, l1, sizeof l1), vi->name);
        else if (vi->producer >= 0 && vi->producer != o && !op_reads(op, v))
          st = fail_at(net, b->err, op->line, op->col, "%s writes \"%s\", which %s already writes",
                       op_short(net, o, l1, sizeof l1), vi->name, op_short(net, vi->producer, l2, sizeof l2));
        else if (vi->producer < 0)
          vi->producer = o;
      }
  }
  for (int v = 0; v < net->nvars && !st; v++) {
    pd_var_info *vi = &net->vars[v];
    /* state updated in place by the op that reads it (running statistics) */
    if (state_slot[v] && vi->kind == PD_VAR_TEMP && (vi->producer < 0 || op_reads(&net->ops[vi->producer], v))) {
      vi->kind = PD_VAR_STATE;
      continue;
    }
    if (vi->producer >= 0 && vi->kind != PD_VAR_PARAM && vi->kind != PD_VAR_STATE) {
      vi->kind = PD_VAR_TEMP;
      continue;
    }
    if (vi->kind != PD_VAR_TEMP || !read[v]) continue;
    if (param_slot[v])
      vi->kind = PD_VAR_PARAM;
    else if (vi->declared)
      vi->kind = PD_VAR_DATA;
    else if (net->root)
      continue; /* a block reading a variable of an enclosing block */
    else {
      const pd_op *op = &net->ops[reader[v]];
      st = fail_at(net, b->err, op->line, op->col,
                   "%s reads \"%s\", which is neither declared (var { name: \"%s\" shape: [...] }) nor written by an "
                   "earlier op",
                   op_short(net, reader[v], l1, sizeof l1), vi->name, vi->name);
    }
  }
  for (int v = 0; v < net->nvars && !st; v++) {
    pd_var_info *vi = &net->vars[v];
    if (vi->kind == PD_VAR_DATA && vi->meta.ndim < 0 && !net->root) /* a block's get theirs from its op */
      st = fail_at(net, b->err, vi->line, vi->col, "data variable \"%s\" needs a shape (e.g. shape: [-1, 784])",
                   vi->name);
    if (!st) st = check_param_settings(b, vi);
    if (vi->kind == PD_VAR_TEMP) vi->meta.ndim = -1, vi->meta.dtype = net->float_dtype;
    /* the training loop's own (a printed sgd net declares @step, which nothing reads) */
    if (vi->kind == PD_VAR_STATE && (!strcmp(vi->name, "@lr") || !strcmp(vi->name, "@step")))
      vi->optimizer_state = true;
  }
  free(param_slot), free(read), free(reader), free(state_slot);
  return st;
}

pd_status pd_net_infer_shapes(pd_net *net, pd_error *err) {
  pd_tensor **metas = malloc(sizeof *metas * (size_t)(net->nvars + 1));
  if (!metas) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int v = 0; v < net->nvars; v++) metas[v] = &net->vars[v].meta;
  pd_status st = PD_OK;
  char l1[160], d1[128];
  for (int o = 0; o < net->nops && !st; o++) {
    pd_op *op = &net->ops[o];
    for (int s = 0; s < op->def->n_inputs && !st; s++)
      for (int i = 0; i < op->in[s].n && !st; i++) {
        const pd_var_info *vi = &net->vars[op->in[s].vars[i]];
        if (vi->meta.ndim < 0 && !(op->def->inputs[s].flags & (PD_SLOT_PARAM | PD_SLOT_STATE)) &&
            vi->kind != PD_VAR_PARAM && vi->kind != PD_VAR_STATE)
          st = fail_at(net, err, op->line, op->col, "%s reads \"%s\" before any op writes it",
                       op_short(net, o, l1, sizeof l1), vi->name);
      }
    if (st) break;
    pd_ctx c = {.op = op, .vars = metas, .exec = NULL, .err = err};
    if ((st = pd_op_infer_shape(&c))) break;
    /* what the op decided must be a size we can compute with, and agree
     * with what the file declares */
    for (int side = 0; side < 2 && !st; side++) {
      int nslots = side ? op->def->n_outputs : op->def->n_inputs;
      for (int s = 0; s < nslots && !st; s++) {
        if (!side && !(op->def->inputs[s].flags & (PD_SLOT_PARAM | PD_SLOT_STATE))) continue;
        const pd_arg *a = side ? &op->out[s] : &op->in[s];
        for (int i = 0; i < a->n && !st; i++) {
          const pd_var_info *vi = &net->vars[a->vars[i]];
          char d2[128];
          if (vi->meta.ndim >= 0 && !fits_64bits(vi->meta.ndim, vi->meta.dims))
            st = fail_at(
                net, err, op->line, op->col, "%s: \"%s\" would have shape %s: more elements than fit in 64 bits",
                op_short(net, o, l1, sizeof l1), vi->name, pd_dims_str(vi->meta.ndim, vi->meta.dims, d1, sizeof d1));
          else if (side && vi->decl_ndim >= 0 && vi->meta.ndim >= 0) {
            bool same = vi->decl_ndim == vi->meta.ndim;
            for (int k = 0; same && k < vi->meta.ndim; k++)
              same = vi->decl_dims[k] == vi->meta.dims[k] || vi->decl_dims[k] < 0 || vi->meta.dims[k] < 0;
            if (!same)
              st = fail_at(net, err, op->line, op->col, "%s writes \"%s\" with shape %s, but it is declared %s",
                           op_short(net, o, l1, sizeof l1), vi->name,
                           pd_dims_str(vi->meta.ndim, vi->meta.dims, d1, sizeof d1),
                           pd_dims_str(vi->decl_ndim, vi->decl_dims, d2, sizeof d2));
          }
        }
      }
    }
  }
  for (int v = 0; v < net->nvars && !st; v++) {
    pd_var_info *vi = &net->vars[v];
    if ((vi->kind == PD_VAR_PARAM || vi->kind == PD_VAR_STATE) && vi->meta.ndim < 0)
      st = fail_at(net, err, vi->line, vi->col,
                   "cannot infer the shape of %s \"%s\"; declare it: var { name: \"%s\" shape: [...] }",
                   pd_var_kind_name(vi->kind), vi->name, vi->name);
    if ((vi->kind == PD_VAR_PARAM || vi->kind == PD_VAR_STATE) && pd_tensor_numel(&vi->meta) < 0)
      st = fail_at(net, err, vi->line, vi->col, "%s \"%s\" has shape %s; a %s cannot have a batch dimension",
                   pd_var_kind_name(vi->kind), vi->name, pd_dims_str(vi->meta.ndim, vi->meta.dims, d1, sizeof d1),
                   pd_var_kind_name(vi->kind));
  }
  free(metas);
  return st;
}

pd_status pd_net_select_kernels(pd_net *net, pd_place_kind place, pd_error *err) {
  pd_tensor **metas = malloc(sizeof *metas * (size_t)(net->nvars + 1));
  if (!metas) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int v = 0; v < net->nvars; v++) metas[v] = &net->vars[v].meta;
  pd_status st = PD_OK;
  for (int o = 0; o < net->nops && !st; o++) {
    pd_op *op = &net->ops[o];
    pd_ctx c = {.op = op, .vars = metas, .err = err};
    pd_dtype dt = pd_op_key_dtype(&c);
    op->kernel = pd_op_kernel(op->def, place, dt);
    if (!op->kernel) {
      char have[256] = "", l1[160];
      size_t used = 0;
      for (int k = 0; k < op->def->n_kernels && used < sizeof have; k++)
        used += (size_t)snprintf(have + used, sizeof have - used, "%s{%s, %s}", k ? ", " : "",
                                 op->def->kernels[k].key.place == PD_CPU ? "CPU" : "GPU",
                                 pd_dtype_name(op->def->kernels[k].key.dtype));
      st = fail_at(net, err, op->line, op->col, "%s has no kernel for {%s, %s}; it has %s%s",
                   op_short(net, o, l1, sizeof l1), place == PD_CPU ? "CPU" : "GPU", pd_dtype_name(dt),
                   op->def->n_kernels ? have : "none",
                   place == PD_GPU ? "; --device gpu needs a GPU kernel for every op of the run (float32 only): "
                                     "use --device cpu"
                                   : "");
    }
    for (int a = 0; a < op->def->n_attrs && !st; a++)
      if (op->attrs[a].type == PD_ATTR_BLOCK && op->attrs[a].blk)
        st = pd_net_select_kernels(op->attrs[a].blk->net, place, err);
  }
  free(metas);
  return st;
}

/* The train section, checked where it is written: counts, the loss and
 * metrics (variables of the net), the optimizer and its schedule, and data
 * bindings (data variables). Flags may override it later; the file itself
 * must make sense. */
static pd_status var_in_net(builder *b, const void *msg, const char *field, size_t index, const char *name,
                            const char *what, bool data_only) {
  pd_net *net = b->net;
  int v = pd_net_var(net, name);
  if (v >= 0 && (!data_only || net->vars[v].kind == PD_VAR_DATA)) return PD_OK;
  int line, col;
  pos_of(net, msg, field, index, &line, &col);
  const char **names = malloc(sizeof *names * (size_t)(net->nvars + 1));
  size_t n = 0;
  for (int i = 0; names && i < net->nvars; i++)
    if (!data_only || net->vars[i].kind == PD_VAR_DATA) names[n++] = net->vars[i].name;
  const char *sug = names ? pd_suggest(name, names, n) : NULL;
  char hint[300] = "";
  if (sug) snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", sug);
  free(names);
  if (v >= 0)
    return fail_at(net, b->err, line, col, "%s \"%s\" is a %s variable, not data%s", what, name,
                   pd_var_kind_name(net->vars[v].kind), hint);
  return fail_at(net, b->err, line, col, "%s \"%s\" is not a variable of the net%s", what, name, hint);
}

static pd_status check_train(builder *b) {
  pd_net *net = b->net;
  const Paddle__TrainDesc *t = net->desc->train;
  if (!t) return PD_OK;
  /* the counts follow the rules of the flags that override them (--epochs
   * 0 is refused, --iterations 0 runs no step), with the same limits */
  static const struct {
    const char *field;
    int64_t min, max;
  } counts[] = {{"batch_size", 1, PD_MAX_BATCH},
                {"epochs", 1, PD_MAX_STEPS},
                {"iterations", 0, PD_MAX_STEPS},
                {"log_every", 1, PD_MAX_STEPS}};
  const bool has[] = {t->has_batch_size, t->has_epochs, t->has_iterations, t->has_log_every};
  const int64_t values[] = {t->batch_size, t->epochs, t->iterations, t->log_every};
  for (int i = 0; i < 4; i++)
    if (has[i] && (values[i] < counts[i].min || values[i] > counts[i].max))
      return fail_field(b, t, counts[i].field, "train.%s must be an integer from %lld to %lld, got %lld%s",
                        counts[i].field, (long long)counts[i].min, (long long)counts[i].max, (long long)values[i],
                        i == 1 && values[i] == 0 ? " (for no step: iterations: 0)" : "");
  if (t->has_epochs && t->has_iterations)
    return fail_field(b, t, "iterations", "train: give epochs or iterations, not both");
  pd_status st = PD_OK;
  if (t->loss && *t->loss) st = var_in_net(b, t, "loss", 0, t->loss, "train.loss", false);
  for (size_t i = 0; !st && i < t->n_metrics; i++)
    st = var_in_net(b, t, "metrics", i, t->metrics[i], "train.metrics", false);
  for (size_t i = 0; !st && i < t->n_data; i++)
    st = var_in_net(b, t->data[i], "var", 0, t->data[i]->var, "train.data: variable", true);
  for (size_t i = 0; !st && i < t->n_eval_data; i++)
    st = var_in_net(b, t->eval_data[i], "var", 0, t->eval_data[i]->var, "train.eval_data: variable", true);
  if (st) return st;
  const Paddle__OptimizerDesc *o = t->optimizer;
  if (!o) return PD_OK;
  static const char *const types[] = {"sgd", "momentum", "adam"};
  const pd_op_def *od = o->type ? pd_op_find(o->type) : NULL;
  if (o->type && (!od || !(od->flags & PD_OP_UPDATE))) {
    const char *sug = pd_suggest(o->type, types, 3);
    return fail_field(b, o, "type", "unknown optimizer \"%s\"%s%s%s; use sgd, momentum or adam", o->type,
                      sug ? " (did you mean \"" : "", sug ? sug : "", sug ? "\"?)" : "");
  }
  if (!(o->lr > 0 && o->lr <= FLT_MAX)) /* the step takes it as a float32 */
    return fail_field(b, o, "lr", "train.optimizer.lr must be > 0 and at most %g (a float32), got %g", FLT_MAX, o->lr);
  if (!(o->momentum >= 0) || !isfinite(o->momentum))
    return fail_field(b, o, "momentum", "train.optimizer.momentum must be >= 0, got %g", o->momentum);
  if (!(o->beta1 >= 0 && o->beta1 < 1))
    return fail_field(b, o, "beta1", "train.optimizer.beta1 must be in [0, 1), got %g", o->beta1);
  if (!(o->beta2 >= 0 && o->beta2 < 1))
    return fail_field(b, o, "beta2", "train.optimizer.beta2 must be in [0, 1), got %g", o->beta2);
  if (!(o->epsilon > 0)) return fail_field(b, o, "epsilon", "train.optimizer.epsilon must be > 0, got %g", o->epsilon);
  if (!(o->weight_decay >= 0))
    return fail_field(b, o, "weight_decay", "train.optimizer.weight_decay must be >= 0, got %g", o->weight_decay);
  if (!(o->clip_norm >= 0))
    return fail_field(b, o, "clip_norm", "train.optimizer.clip_norm must be >= 0 (0: no clipping), got %g",
                      o->clip_norm);
  if (o->schedule) {
    pd_error e2;
    if (pd_schedule_check(o, &e2)) return fail_field(b, o->schedule, NULL, "%s", e2.msg);
  }
  return PD_OK;
}

/* The bytes of a variable at the batch; SIZE_MAX when that does not fit, 0
 * while its shape is unknown. */
static size_t bytes_at(const pd_var_info *vi, int64_t batch) {
  if (vi->meta.ndim < 0) return 0;
  int64_t dims[PD_MAX_DIMS], n;
  for (int d = 0; d < vi->meta.ndim; d++) dims[d] = vi->meta.dims[d] < 0 ? batch : vi->meta.dims[d];
  size_t bytes;
  if (!pd_dims_product(vi->meta.ndim, dims, &n) || !pd_size_mul((size_t)n, pd_dtype_size(vi->meta.dtype), &bytes))
    return SIZE_MAX;
  return bytes;
}

pd_status pd_net_check_memory(const pd_net *net, int64_t batch, pd_error *err) {
  size_t limit = pd_physical_memory(), held = 0, largest = 0, need = 0;
  bool *counted = calloc((size_t)net->nvars + 1, 1);
  if (!counted) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  pd_status st = PD_OK;
  char l1[160], d1[128];
  /* the variables in the order the ops meet them; then (o == nops) those
   * no op reads or writes, declared parameters and state */
  for (int o = 0; o <= net->nops && !st; o++) {
    const pd_op *op = o < net->nops ? &net->ops[o] : NULL;
    int nslots = op ? op->def->n_inputs + op->def->n_outputs : 1, nin = op ? op->def->n_inputs : 0;
    for (int s = 0; s < nslots && !st; s++) {
      const pd_arg *a = !op ? NULL : s < nin ? &op->in[s] : &op->out[s - nin];
      for (int i = 0; i < (a ? a->n : net->nvars) && !st; i++) {
        int v = a ? a->vars[i] : i;
        const pd_var_info *vi = &net->vars[v];
        size_t bytes = bytes_at(vi, batch);
        if (counted[v] || vi->meta.ndim < 0) continue;
        counted[v] = true;
        if (vi->kind == PD_VAR_PARAM || vi->kind == PD_VAR_STATE)
          held = pd_size_add(held, bytes, &held) ? held : SIZE_MAX;
        else if (bytes > largest)
          largest = bytes;
        need = pd_size_add(held, largest, &need) ? need : SIZE_MAX;
        if (need <= limit) continue;
        char size[48] = "more than 2^64 bytes", total[48] = "more than 2^64 bytes", what[400];
        if (bytes != SIZE_MAX) snprintf(size, sizeof size, "%zu bytes", bytes);
        if (need != SIZE_MAX) snprintf(total, sizeof total, "at least %zu bytes", need);
        snprintf(what, sizeof what,
                 "\"%s\" %s %s takes %s: the net needs %s at batch %lld, more than this machine's memory (%zu bytes)",
                 vi->name, pd_dtype_name(vi->meta.dtype), pd_dims_str(vi->meta.ndim, vi->meta.dims, d1, sizeof d1),
                 size, total, (long long)batch, limit);
        if (op)
          st = fail_at(net, err, op->line, op->col, "%s: %s", op_short(net, o, l1, sizeof l1), what);
        else
          st = fail_at(net, err, vi->line, vi->col, "variable %s", what);
      }
    }
  }
  free(counted);
  return st;
}

pd_status pd_net_from_desc(const char *name, Paddle__NetDesc *desc, char *src, size_t src_len, pd_srcmap *map,
                           const pd_net_opts *opts, pd_net **out, pd_error *err) {
  *out = NULL;
  pd_net *net = calloc(1, sizeof *net);
  if (!net || !(net->file = strdup(name))) {
    free(net);
    free(src);
    if (map) pd_srcmap_free(map);
    protobuf_c_message_free_unpacked(&desc->base, NULL);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  net->desc = desc;
  net->src = src;
  net->src_len = src_len;
  if (map) {
    net->map = *map;
    memset(map, 0, sizeof *map);
  }
  net->float_dtype = opts ? opts->float_dtype : PD_F32;
  net->loss = -1;
  builder b = {.net = net, .err = err};
  pd_status st = PD_OK;
  for (int i = 0; opts && i < opts->n_presets && !st; i++) {
    int v = pd_net_add_var(net, opts->preset_names[i], opts->preset_kinds[i], opts->preset_metas[i].dtype);
    if (v < 0) {
      st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
      break;
    }
    pd_var_info *vi = &net->vars[v];
    vi->declared = true;
    vi->line = vi->col = 1;
    vi->meta = opts->preset_metas[i];
    vi->meta.storage = NULL;
  }
  if (!st) st = pd_blocks_check(net, err);
  if (!st) st = build_vars(&b);
  if (!st) st = build_ops(&b);
  if (!st) st = pd_net_resolve_kinds(net, err);
  if (!st) st = pd_net_infer_shapes(net, err);
  if (!st) st = pd_net_check_memory(net, 1, err);
  if (!st) st = check_train(&b);
  if (st) {
    pd_net_free(net);
    return st;
  }
  *out = net;
  return PD_OK;
}

/* The net of `text` with the first n of opts' overrides applied (0 when it
 * builds). */
static pd_status build_with(const char *name, const char *text, size_t len, const pd_net_opts *opts, int n,
                            pd_error *err) {
  pd_net_opts o = *opts;
  o.n_overrides = n;
  pd_net *net = NULL;
  pd_status st = pd_net_from_text(name, text, len, &o, &net, err);
  pd_net_free(net);
  return st;
}

/* A net that fails to build only because of a --set: the message names the
 * first --set after which it fails that way (the last when none alone
 * does), without the file position and source line
 * (they show the file's value, not the one set). Kept as it is when the
 * file fails on its own or the build ran out of memory. */
static void blame_override(const char *name, const char *text, size_t len, const pd_net_opts *opts, pd_error *err) {
  pd_error e = {0};
  if (err->status != PD_ERR_INPUT || build_with(name, text, len, opts, 0, &e) != PD_OK) return;
  /* the first --set after which the net fails as it does with all of them */
  int k = 1;
  while (k < opts->n_overrides && (build_with(name, text, len, opts, k, &e) == PD_OK || strcmp(e.msg, err->msg) != 0))
    k++;
  char msg[PD_ERROR_MAX];
  const char *m = err->msg;
  size_t nl = strlen(name);
  if (strncmp(m, name, nl) == 0 && m[nl] == ':') { /* "FILE:LINE:COL: " or "FILE: " */
    m += nl + 1;
    while ((*m >= '0' && *m <= '9') || *m == ':') m++;
    while (*m == ' ') m++;
  }
  snprintf(msg, sizeof msg, "%s", m);
  msg[strcspn(msg, "\n")] = '\0';
  pd_errorf(err, PD_ERR_INPUT, "--set '%s': %s", opts->overrides[k - 1], msg);
}

pd_status pd_net_from_text(const char *name, const char *text, size_t len, const pd_net_opts *opts, pd_net **out,
                           pd_error *err) {
  *out = NULL;
  char *src = malloc(len + 1);
  if (!src) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  memcpy(src, text, len);
  src[len] = '\0';
  ProtobufCMessage *m = NULL;
  pd_srcmap map = {0};
  pd_status st = pd_text_parse(&paddle__net_desc__descriptor, src, len, name, &m, &map, err);
  if (st) {
    free(src);
    pd_srcmap_free(&map);
    return st;
  }
  for (int i = 0; opts && i < opts->n_overrides; i++)
    if ((st = pd_pb_set(m, opts->overrides[i], err))) {
      protobuf_c_message_free_unpacked(m, NULL);
      free(src);
      pd_srcmap_free(&map);
      return st;
    }
  st = pd_net_from_desc(name, (Paddle__NetDesc *)m, src, len, &map, opts, out, err);
  if (st && opts && opts->n_overrides) blame_override(name, text, len, opts, err);
  return st;
}

pd_status pd_net_load(const char *path, const pd_net_opts *opts, pd_net **out, pd_error *err) {
  *out = NULL;
  char *buf;
  size_t len;
  pd_status st = pd_read_file(path, PD_NETDESC_MAX, &buf, &len, err);
  if (st) return st;
  st = pd_net_from_text(path, buf, len, opts, out, err);
  free(buf);
  return st;
}

void pd_net_free(pd_net *net) {
  if (!net) return;
  for (int o = 0; o < net->nops; o++) {
    for (int s = 0; s < PD_MAX_SLOTS; s++) {
      free(net->ops[o].in[s].vars);
      free(net->ops[o].out[s].vars);
    }
    for (int i = 0; i < 2; i++) pd_tensor_release(&net->ops[o].work[i]);
  }
  for (int i = 0; i < net->nblocks; i++) pd_block_free(net->blocks[i]);
  free(net->blocks);
  for (int v = 0; v < net->nvars; v++) free(net->vars[v].name);
  for (int i = 0; i < net->nkeep; i++) free(net->keep[i]);
  free(net->keep);
  free(net->ops);
  free(net->vars);
  free(net->names);
  free(net->slots);
  if (net->root) { /* a block's net: the desc is a shell around the root's messages, the text is the root's */
    free(net->desc);
    free(net->file);
    free(net);
    return;
  }
  if (net->desc) protobuf_c_message_free_unpacked(&net->desc->base, NULL);
  pd_srcmap_free(&net->map);
  free(net->src);
  free(net->file);
  free(net);
}

/* ---- pruning ---- */

void pd_net_prune(const pd_net *net, const int *targets, int ntargets, bool *needed) {
  bool *want = calloc((size_t)net->nvars + 1, 1);
  for (int o = 0; o < net->nops; o++) needed[o] = false;
  if (!want) {
    for (int o = 0; o < net->nops; o++) needed[o] = true;
    return;
  }
  for (int i = 0; i < ntargets; i++) want[targets[i]] = true;
  for (int o = net->nops - 1; o >= 0; o--) {
    const pd_op *op = &net->ops[o];
    for (int s = 0; s < op->def->n_outputs && !needed[o]; s++)
      for (int i = 0; i < op->out[s].n; i++)
        if (want[op->out[s].vars[i]]) needed[o] = true;
    if (!needed[o]) continue;
    for (int s = 0; s < op->def->n_inputs; s++)
      for (int i = 0; i < op->in[s].n; i++) want[op->in[s].vars[i]] = true;
  }
  free(want);
}

pd_status pd_net_shapes_at(const pd_net *net, int64_t batch, pd_tensor *shapes, pd_error *err) {
  pd_tensor **ptrs = malloc(sizeof *ptrs * (size_t)(net->nvars + 1));
  if (!ptrs) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int v = 0; v < net->nvars; v++) {
    shapes[v] = net->vars[v].meta;
    shapes[v].storage = NULL;
    if (net->vars[v].kind == PD_VAR_DATA)
      for (int d = 0; d < shapes[v].ndim; d++)
        if (shapes[v].dims[d] < 0) shapes[v].dims[d] = batch;
    ptrs[v] = &shapes[v];
  }
  pd_status st = PD_OK;
  for (int o = 0; o < net->nops && !st; o++) {
    pd_ctx c = {.op = &net->ops[o], .vars = ptrs, .err = err};
    st = pd_op_infer_shape(&c);
  }
  free(ptrs);
  return st;
}

double pd_net_flops(const pd_net *net, const pd_tensor *shapes, int begin, int end) {
  pd_tensor **ptrs = malloc(sizeof *ptrs * (size_t)(net->nvars + 1));
  if (!ptrs) return 0;
  for (int v = 0; v < net->nvars; v++) ptrs[v] = (pd_tensor *)&shapes[v];
  double total = 0;
  for (int o = begin; o < end; o++) {
    pd_ctx c = {.op = &net->ops[o], .vars = ptrs};
    if (net->ops[o].def->flops)
      total += net->ops[o].def->flops(&c);
    else
      for (int s = 0; s < c.op->def->n_outputs; s++)
        for (int i = 0; i < c.op->out[s].n; i++) {
          int64_t n = pd_tensor_numel(pd_out_at(&c, s, i));
          if (n > 0) total += (double)n;
        }
  }
  free(ptrs);
  return total;
}
