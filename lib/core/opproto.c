/* opproto.c — a registered op as the seeds' OpProto message, for
 * `paddle-run ops TYPE` (printed as text) and the generated op reference. */
#include <stdlib.h>
#include <string.h>

#include "core/op.h"
#include "core/opproto.h"
#include "paddle.pb-c.h"
#include "text/textformat.h"

static char *dup(const char *s) { return strdup(s ? s : ""); }

static Paddle__VarProto *var_proto(const pd_slot_def *s) {
  Paddle__VarProto *v = malloc(sizeof *v);
  if (!v) return NULL;
  paddle__var_proto__init(v);
  v->name = dup(s->name);
  v->comment = dup(s->comment);
#define FLAG(field, bit)  \
  if (s->flags & (bit)) { \
    v->has_##field = 1;   \
    v->field = 1;         \
  }
  FLAG(duplicable, PD_SLOT_DUPLICABLE)
  FLAG(dispensable, PD_SLOT_DISPENSABLE)
  FLAG(no_gradient, PD_SLOT_NO_GRAD)
  FLAG(parameter, PD_SLOT_PARAM)
  FLAG(state, PD_SLOT_STATE)
#undef FLAG
  return v;
}

static Paddle__AttrValue *number(pd_attr_type t, double x) {
  Paddle__AttrValue *v = malloc(sizeof *v);
  if (!v) return NULL;
  paddle__attr_value__init(v);
  if (t == PD_ATTR_INT || t == PD_ATTR_INTS) {
    v->has_i = 1;
    v->i = (int64_t)x;
  } else {
    v->has_f = 1;
    v->f = x;
  }
  return v;
}

static Paddle__AttrProto *attr_proto(const pd_attr_def *a) {
  Paddle__AttrProto *p = malloc(sizeof *p);
  if (!p) return NULL;
  paddle__attr_proto__init(p);
  p->name = dup(a->name);
  p->comment = dup(a->comment);
  p->type = (Paddle__AttrType)a->type;
  if (a->def && !a->required) {
    ProtobufCMessage *m = NULL;
    if (!pd_text_parse(&paddle__attr_value__descriptor, a->def, strlen(a->def), a->name, &m, NULL, NULL))
      p->default_ = (Paddle__AttrValue *)m;
  }
  if (a->min_kind) {
    p->min = number(a->type, a->min);
    if (a->min_kind == PD_GT) p->has_min_exclusive = p->min_exclusive = 1;
  }
  if (a->max_kind) {
    p->max = number(a->type, a->max);
    if (a->max_kind == PD_GT) p->has_max_exclusive = p->max_exclusive = 1;
  }
  if (a->one_of) {
    size_t n = 0;
    while (a->one_of[n]) n++;
    p->one_of = malloc(sizeof(char *) * (n ? n : 1));
    if (p->one_of) {
      for (size_t i = 0; i < n; i++) p->one_of[i] = dup(a->one_of[i]);
      p->n_one_of = n;
    }
  }
  return p;
}

Paddle__OpProto *pd_op_proto(const pd_op_def *d) {
  Paddle__OpProto *p = malloc(sizeof *p);
  if (!p) return NULL;
  paddle__op_proto__init(p);
  p->type = dup(d->type);
  p->comment = dup(d->comment);
  p->inputs = malloc(sizeof *p->inputs * (size_t)(d->n_inputs + 1));
  p->outputs = malloc(sizeof *p->outputs * (size_t)(d->n_outputs + 1));
  p->attrs = malloc(sizeof *p->attrs * (size_t)(d->n_attrs + 1));
  if (p->inputs)
    for (int i = 0; i < d->n_inputs; i++) p->inputs[p->n_inputs++] = var_proto(&d->inputs[i]);
  if (p->outputs)
    for (int i = 0; i < d->n_outputs; i++) p->outputs[p->n_outputs++] = var_proto(&d->outputs[i]);
  if (p->attrs)
    for (int i = 0; i < d->n_attrs; i++) p->attrs[p->n_attrs++] = attr_proto(&d->attrs[i]);
  return p;
}
