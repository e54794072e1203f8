/* netdesc_out.c — a built network back as a NetDesc message: what `desc`
 * prints after adding backward and optimizer ops. Every slot position is
 * written (an absent optional input as ""), every attribute explicitly, and
 * every persistable variable declared with its kind and shape, so the text
 * loads back into the same network. Sub-blocks are copied as written. */
#include <stdlib.h>
#include <string.h>

#include "core/backward.h"
#include "core/netdesc_out.h"

static char *dup(const char *s) { return strdup(s ? s : ""); }

static Paddle__AttrValue *attr_value(const pd_attr *a) {
  Paddle__AttrValue *v = malloc(sizeof *v);
  if (!v) return NULL;
  paddle__attr_value__init(v);
  switch (a->type) {
  case PD_ATTR_INT:
    v->has_i = 1, v->i = a->i;
    break;
  case PD_ATTR_FLOAT:
    v->has_f = 1, v->f = a->f;
    break;
  case PD_ATTR_STRING:
    v->s = dup(a->s);
    break;
  case PD_ATTR_BLOCK:
    v->block = dup(a->s);
    break;
  case PD_ATTR_BOOL:
    v->has_b = 1, v->b = a->b;
    break;
  case PD_ATTR_INTS:
    v->ints = malloc(sizeof *v->ints * (size_t)(a->n + 1));
    if (v->ints && a->n) memcpy(v->ints, a->ints, sizeof *v->ints * (size_t)a->n), v->n_ints = (size_t)a->n;
    if (!a->n) v->has_type = 1, v->type = PADDLE__ATTR_TYPE__INTS;
    break;
  case PD_ATTR_FLOATS:
    v->floats = malloc(sizeof *v->floats * (size_t)(a->n + 1));
    if (v->floats && a->n) memcpy(v->floats, a->floats, sizeof *v->floats * (size_t)a->n), v->n_floats = (size_t)a->n;
    if (!a->n) v->has_type = 1, v->type = PADDLE__ATTR_TYPE__FLOATS;
    break;
  case PD_ATTR_STRINGS:
    v->strings = malloc(sizeof *v->strings * (size_t)(a->n + 1));
    if (v->strings)
      for (int i = 0; i < a->n; i++) v->strings[v->n_strings++] = dup(a->strs[i]);
    if (!a->n) v->has_type = 1, v->type = PADDLE__ATTR_TYPE__STRINGS;
    break;
  }
  return v;
}

/* The flat list of an op's input or output names. An absent slot keeps its
 * position ("", or one "" per entry of its count attribute) only where a
 * later slot needs it; the Outer slot of an op running blocks is left out
 * (the loader fills it in again). */
static char **names_of(const pd_net *net, const pd_op *op, bool outputs, size_t *count) {
  const pd_arg *args = outputs ? op->out : op->in;
  const pd_slot_def *slots = outputs ? op->def->outputs : op->def->inputs;
  int nslots = outputs ? op->def->n_outputs : op->def->n_inputs;
  size_t n = 0;
  int counts[PD_MAX_SLOTS];
  for (int s = 0; s < nslots; s++) {
    const char *c = pd_slot_count_attr(op->def, outputs, s);
    counts[s] = 1;
    for (int a = 0; c && a < op->def->n_attrs; a++)
      if (!strcmp(op->def->attrs[a].name, c)) counts[s] = op->attrs[a].n;
    n += args[s].n ? (size_t)args[s].n : (size_t)counts[s];
  }
  char **out = malloc(sizeof *out * (n + 1));
  if (!out) return NULL;
  size_t k = 0;
  for (int s = 0; s < nslots; s++) {
    if (slots[s].flags & PD_SLOT_OUTER) continue;
    if (!args[s].n) {
      bool later = false;
      for (int t = s + 1; t < nslots; t++) later |= args[t].n > 0 && !(slots[t].flags & PD_SLOT_OUTER);
      if (later || !(slots[s].flags & PD_SLOT_DISPENSABLE))
        for (int i = 0; i < counts[s]; i++) out[k++] = dup("");
      continue;
    }
    for (int i = 0; i < args[s].n; i++) out[k++] = dup(net->vars[args[s].vars[i]].name);
  }
  *count = k;
  return out;
}

/* A deep copy of a message, through its binary encoding. */
static void *copy_msg(const ProtobufCMessage *in) {
  if (!in) return NULL;
  size_t n = protobuf_c_message_get_packed_size(in);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) return NULL;
  protobuf_c_message_pack(in, buf);
  ProtobufCMessage *out = protobuf_c_message_unpack(in->descriptor, NULL, n, buf);
  free(buf);
  return out;
}

static Paddle__Initializer *copy_init(const Paddle__Initializer *in) { return in ? copy_msg(&in->base) : NULL; }

Paddle__NetDesc *pd_net_to_desc(const pd_net *net) {
  Paddle__NetDesc *d = malloc(sizeof *d);
  if (!d) return NULL;
  paddle__net_desc__init(d);
  d->name = net->desc->name ? dup(net->desc->name) : NULL;
  d->var = calloc((size_t)net->nvars + 1, sizeof *d->var);
  d->op = calloc((size_t)net->nops + 1, sizeof *d->op);
  if (!d->var || !d->op) return d;
  for (int v = 0; v < net->nvars; v++) {
    const pd_var_info *vi = &net->vars[v];
    if (!vi->declared && vi->kind == PD_VAR_TEMP) continue;
    Paddle__VarDesc *vd = malloc(sizeof *vd);
    if (!vd) break;
    paddle__var_desc__init(vd);
    vd->name = dup(vi->name);
    if (vi->meta.ndim >= 0) {
      vd->shape = malloc(sizeof *vd->shape * (size_t)(vi->meta.ndim + 1));
      if (vd->shape)
        memcpy(vd->shape, vi->meta.dims, sizeof *vd->shape * (size_t)vi->meta.ndim),
            vd->n_shape = (size_t)vi->meta.ndim;
    }
    if (vi->meta.dtype != PD_F32) vd->has_dtype = 1, vd->dtype = (Paddle__DataType)vi->meta.dtype;
    static const Paddle__VarKind kinds[] = {PADDLE__VAR_KIND__AUTO, PADDLE__VAR_KIND__DATA, PADDLE__VAR_KIND__PARAM,
                                            PADDLE__VAR_KIND__STATE};
    if (vi->kind != PD_VAR_TEMP) vd->has_kind = 1, vd->kind = kinds[vi->kind];
    if (vi->no_grad) vd->has_no_gradient = 1, vd->no_gradient = 1;
    if (vi->frozen) vd->has_trainable = 1, vd->trainable = 0;
    if (vi->lr_mult != 1) vd->has_lr_mult = 1, vd->lr_mult = vi->lr_mult;
    if (vi->decay_mult != 1) vd->has_decay_mult = 1, vd->decay_mult = vi->decay_mult;
    vd->init = copy_init(vi->init);
    d->var[d->n_var++] = vd;
  }
  for (int o = 0; o < net->nops; o++) {
    const pd_op *op = &net->ops[o];
    Paddle__OpDesc *od = malloc(sizeof *od);
    if (!od) break;
    paddle__op_desc__init(od);
    od->type = dup(op->def->type);
    od->inputs = names_of(net, op, false, &od->n_inputs);
    od->outputs = names_of(net, op, true, &od->n_outputs);
    od->attrs = calloc((size_t)op->def->n_attrs + 1, sizeof *od->attrs);
    for (int a = 0; od->attrs && a < op->def->n_attrs; a++) {
      Paddle__OpDesc__AttrsEntry *e = malloc(sizeof *e);
      if (!e) break;
      paddle__op_desc__attrs_entry__init(e);
      e->key = dup(op->def->attrs[a].name);
      e->value = attr_value(&op->attrs[a]);
      od->attrs[od->n_attrs++] = e;
    }
    d->op[d->n_op++] = od;
  }
  if (net->desc->train) d->train = copy_msg(&net->desc->train->base);
  /* sub-blocks as the file gives them (a block's net is built from them
   * again on load), less the parameters and state they declare: those live
   * in the outermost scope and are declared there above, with their shapes */
  if (net->desc->n_block && (d->block = calloc(net->desc->n_block, sizeof *d->block)))
    for (size_t i = 0; i < net->desc->n_block; i++) {
      Paddle__BlockDesc *b = copy_msg(&net->desc->block[i]->base);
      if (!b) continue;
      size_t k = 0;
      for (size_t j = 0; j < b->n_var; j++) {
        const Paddle__VarDesc *vd = b->var[j];
        int v = pd_net_var(net, vd->name);
        if ((vd->kind == PADDLE__VAR_KIND__PARAM || vd->kind == PADDLE__VAR_KIND__STATE) && v >= 0 &&
            net->vars[v].declared)
          protobuf_c_message_free_unpacked(&b->var[j]->base, NULL);
        else
          b->var[k++] = b->var[j];
      }
      b->n_var = k;
      d->block[d->n_block++] = b;
    }
  return d;
}
