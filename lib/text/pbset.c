/* pbset.c — one field set by path (pbset.h). The value is parsed by the
 * text-format parser as "name: VALUE" into a scratch message of the field's
 * parent type, then moved into place, so every type, range and enum rule of
 * the text format applies to flags too. */
#include "text/pbset.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/textformat.h"

static size_t value_size(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64:
  case PROTOBUF_C_TYPE_DOUBLE:
    return 8;
  case PROTOBUF_C_TYPE_BOOL:
    return sizeof(protobuf_c_boolean);
  case PROTOBUF_C_TYPE_STRING:
  case PROTOBUF_C_TYPE_MESSAGE:
    return sizeof(void *);
  case PROTOBUF_C_TYPE_BYTES:
    return sizeof(ProtobufCBinaryData);
  default:
    return 4;
  }
}

static pd_status unknown(const ProtobufCMessageDescriptor *d, const char *path, const char *seg, pd_error *err) {
  const char *names[128];
  size_t n = 0;
  for (unsigned i = 0; i < d->n_fields && n < 128; i++) names[n++] = d->fields[i].name;
  const char *sug = pd_suggest(seg, names, n);
  if (sug)
    return pd_errorf(err, PD_ERR_INPUT, "--set '%s': %s has no field \"%s\" (did you mean \"%s\"?)", path, d->name, seg,
                     sug);
  return pd_errorf(err, PD_ERR_INPUT, "--set '%s': %s has no field \"%s\"", path, d->name, seg);
}

/* Splits off the first segment of a path: "block[cell.x].op[0].type" gives
 * "block" with *sel "cell.x" and returns the '.' after the "]" (NULL at the
 * end). A selector runs to the first "]" that ends the path or precedes a
 * '.', so a name in it may hold dots and brackets. */
static char *split_segment(char *seg, char **sel) {
  *sel = NULL;
  char *open = strchr(seg, '[');
  char *dot = strchr(seg, '.');
  if (!open || (dot && dot < open)) return dot;
  for (char *c = open + 1; (c = strchr(c, ']')) != NULL; c++)
    if (c[1] == '.' || c[1] == '\0') {
      *open = '\0';
      *c = '\0';
      *sel = open + 1;
      return c[1] == '.' ? c + 1 : NULL;
    }
  return dot; /* no closing "]": the field name is looked up as it is, and is unknown */
}

/* "ops" for "op", "data bindings" for "data" and "eval_data": the
 * elements of a repeated field, for a message (seg is a schema field's
 * name, short: the precision only bounds what the compiler must assume). */
static const char *plural(const char *seg, char *buf, size_t size) {
  size_t n = strlen(seg);
  if (n >= 4 && strcmp(seg + n - 4, "data") == 0)
    snprintf(buf, size, "%.100s bindings", seg);
  else
    snprintf(buf, size, "%.100ss", seg);
  return buf;
}

/* Element `sel` of the repeated message field f of msg (`where` names msg:
 * "the net", "block[cell]"): a 0-based index; else the element whose string
 * field `name` is sel, or, for types without one, whose `var` is sel (a
 * data binding), whose `key` is (a map's entry) or whose `outputs` hold sel
 * (an op, by what it writes).
 * Quotes around sel are optional. */
static pd_status select_element(ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f, const char *seg, char *sel,
                                const char *where, const char *assignment, ProtobufCMessage **out, pd_error *err) {
  size_t n = *(size_t *)((char *)msg + f->quantifier_offset);
  ProtobufCMessage **arr = *(ProtobufCMessage ***)((char *)msg + f->offset);
  size_t len = strlen(sel);
  char pl[160];
  if (len >= 2 && (sel[0] == '"' || sel[0] == '\'') && sel[len - 1] == sel[0]) sel[len - 1] = '\0', sel++;
  bool digits = *sel != '\0';
  for (const char *c = sel; *c; c++) digits &= *c >= '0' && *c <= '9';
  if (digits) {
    unsigned long long i = strtoull(sel, NULL, 10);
    if (i < n) {
      *out = arr[i];
      return PD_OK;
    }
    char range[64] = "none";
    if (n) snprintf(range, sizeof range, "0..%zu", n - 1);
    return pd_errorf(err, PD_ERR_INPUT, "--set '%s': %s[%s]: %s has %zu %s (%s)", assignment, seg, sel, where, n,
                     n == 1 ? seg : plural(seg, pl, sizeof pl), range);
  }
  const ProtobufCMessageDescriptor *ed = f->descriptor;
  const ProtobufCFieldDescriptor *nf = protobuf_c_message_descriptor_get_field_by_name(ed, "name");
  if (!nf || nf->type != PROTOBUF_C_TYPE_STRING || nf->label == PROTOBUF_C_LABEL_REPEATED)
    nf = protobuf_c_message_descriptor_get_field_by_name(ed, "var");
  if (!nf || nf->type != PROTOBUF_C_TYPE_STRING || nf->label == PROTOBUF_C_LABEL_REPEATED)
    nf = protobuf_c_message_descriptor_get_field_by_name(ed, "key"); /* a map's entry */
  const ProtobufCFieldDescriptor *of = protobuf_c_message_descriptor_get_field_by_name(ed, "outputs");
  bool by_outputs = (!nf || nf->type != PROTOBUF_C_TYPE_STRING || nf->label == PROTOBUF_C_LABEL_REPEATED) && of &&
                    of->type == PROTOBUF_C_TYPE_STRING && of->label == PROTOBUF_C_LABEL_REPEATED;
  if (by_outputs) {
    for (size_t i = 0; i < n; i++) {
      size_t no = *(const size_t *)((const char *)arr[i] + of->quantifier_offset);
      char *const *outs = *(char *const *const *)((const char *)arr[i] + of->offset);
      for (size_t k = 0; k < no; k++)
        if (strcmp(outs[k], sel) == 0) {
          *out = arr[i];
          return PD_OK;
        }
    }
    return pd_errorf(err, PD_ERR_INPUT, "--set '%s': %s[%s]: no %s writes \"%s\"", assignment, seg, sel, seg, sel);
  }
  if (!nf || nf->type != PROTOBUF_C_TYPE_STRING || nf->label == PROTOBUF_C_LABEL_REPEATED)
    return pd_errorf(err, PD_ERR_INPUT, "--set '%s': %s has no name field; pick one by index (%s[0])", assignment,
                     ed->name, seg);
  for (size_t i = 0; i < n; i++) {
    const char *name = *(const char **)((const char *)arr[i] + nf->offset);
    if (name && strcmp(name, sel) == 0) {
      *out = arr[i];
      return PD_OK;
    }
  }
  if (strcmp(nf->name, "var") == 0)
    return pd_errorf(err, PD_ERR_INPUT, "--set '%s': %s[%s]: no %s binds \"%s\"", assignment, seg, sel, seg, sel);
  return pd_errorf(err, PD_ERR_INPUT, "--set '%s': %s[%s]: no %s named \"%s\"", assignment, seg, sel, seg, sel);
}

/* A map field (protobuf's map<string, V> is a repeated message of key and
 * value): its entries' descriptor has a string `key` and a `value`. */
static bool is_map(const ProtobufCFieldDescriptor *f) {
  if (f->type != PROTOBUF_C_TYPE_MESSAGE || f->label != PROTOBUF_C_LABEL_REPEATED) return false;
  const ProtobufCMessageDescriptor *d = f->descriptor;
  const ProtobufCFieldDescriptor *k = protobuf_c_message_descriptor_get_field_by_name(d, "key");
  return d->n_fields == 2 && k && k->type == PROTOBUF_C_TYPE_STRING &&
         protobuf_c_message_descriptor_get_field_by_name(d, "value");
}

static ProtobufCMessage *new_message(const ProtobufCMessageDescriptor *d) {
  ProtobufCMessage *m = malloc(d->sizeof_message);
  if (m) protobuf_c_message_init(d, m);
  return m;
}

/* The entry of map field f of msg with `key`, appended (with an empty value)
 * when there is none; *fresh says which. */
static pd_status map_entry(ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f, const char *key,
                           ProtobufCMessage **out, bool *fresh, pd_error *err) {
  const ProtobufCMessageDescriptor *ed = f->descriptor;
  const ProtobufCFieldDescriptor *kf = protobuf_c_message_descriptor_get_field_by_name(ed, "key");
  const ProtobufCFieldDescriptor *vf = protobuf_c_message_descriptor_get_field_by_name(ed, "value");
  size_t *n = (size_t *)((char *)msg + f->quantifier_offset);
  ProtobufCMessage ***arr = (ProtobufCMessage ***)((char *)msg + f->offset);
  *fresh = false;
  for (size_t i = 0; i < *n; i++) {
    const char *k = *(const char **)((const char *)(*arr)[i] + kf->offset);
    if (k && strcmp(k, key) == 0) {
      *out = (*arr)[i];
      return PD_OK;
    }
  }
  ProtobufCMessage **grown = realloc(*arr, (*n + 1) * sizeof *grown);
  if (!grown) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  *arr = grown;
  ProtobufCMessage *e = new_message(ed);
  char *kcopy = strdup(key);
  ProtobufCMessage *v = vf->type == PROTOBUF_C_TYPE_MESSAGE ? new_message(vf->descriptor) : NULL;
  if (!e || !kcopy || (vf->type == PROTOBUF_C_TYPE_MESSAGE && !v)) {
    free(e), free(kcopy), free(v);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  *(char **)((char *)e + kf->offset) = kcopy;
  if (v) *(ProtobufCMessage **)((char *)e + vf->offset) = v;
  grown[(*n)++] = e;
  *out = e;
  *fresh = true;
  return PD_OK;
}

/* Whether field f of msg holds a value (a repeated one: any element). */
static bool field_is_set(const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f) {
  const char *base = (const char *)msg;
  if (f->label == PROTOBUF_C_LABEL_REPEATED) return *(const size_t *)(base + f->quantifier_offset) > 0;
  if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE) {
    const void *p = *(const void *const *)(base + f->offset);
    return p && p != f->default_value;
  }
  if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) return *(const uint32_t *)(base + f->quantifier_offset) == f->id;
  return f->quantifier_offset && *(const protobuf_c_boolean *)(base + f->quantifier_offset);
}

/* The field of a map's value message (an AttrValue) that `attrs.KEY=VALUE`
 * sets: the one the entry holds already, else the one VALUE's form implies
 * (the net's schema checks it against the op's OpProto when it loads). */
static const ProtobufCFieldDescriptor *value_field(const ProtobufCMessage *v, const char *value) {
  const ProtobufCMessageDescriptor *d = v->descriptor;
  for (unsigned i = 0; i < d->n_fields; i++)
    if (strcmp(d->fields[i].name, "type") != 0 && field_is_set(v, &d->fields[i])) return &d->fields[i];
  const char *name = "s";
  char *end;
  if (value[0] == '[') {
    name = strpbrk(value, "\"'")   ? "strings"
           : strpbrk(value, "tf")  ? "bools"
           : strpbrk(value, ".eE") ? "floats"
                                   : "ints";
  } else if (!strcmp(value, "true") || !strcmp(value, "false")) {
    name = "b";
  } else if (*value) {
    (void)strtoll(value, &end, 10);
    if (!*end) {
      name = "i";
    } else {
      (void)strtod(value, &end);
      if (!*end) name = "f";
    }
  }
  const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);
  return f ? f : protobuf_c_message_descriptor_get_field_by_name(d, "s");
}

/* A text-format error about the scratch "seg: VALUE" as the --set argument
 * reads it: "size: expected an integer, got "abc"", without the scratch
 * text's position, its source line, or the proto field and type it parsed
 * into (`seg` is what the user wrote). */
static pd_status value_error(const char *assignment, const char *seg, const char *msg, pd_error *err) {
  const char *m = msg;
  for (int colons = 0; colons < 3 && strchr(m, ':'); colons++) m = strchr(m, ':') + 1; /* "--set:L:C:" */
  while (*m == ' ') m++;
  char text[PD_ERROR_MAX];
  snprintf(text, sizeof text, "%s", m);
  char *nl = strchr(text, '\n');
  if (nl) *nl = '\0';
  char *forp = strstr(text, " for \""), *got = strstr(text, ", got ");
  if (forp && got && got > forp) memmove(forp, got, strlen(got) + 1);
  return pd_errorf(err, PD_ERR_INPUT, "--set '%s': %s: %s", assignment, seg, text);
}

/* Scalar (or repeated scalar) field f of msg set from VALUE: parsed as
 * "f: VALUE" in a scratch message of msg's type, then moved in. A repeated
 * field gets the values appended, or replaced when `replace`. `label` is
 * what the messages call the field. */
static pd_status set_field(ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f, const char *label,
                           const char *value, bool replace, const char *assignment, pd_error *err) {
  char *base = (char *)msg;
  const char *seg = f->name;
  bool quote = f->type == PROTOBUF_C_TYPE_STRING && value[0] != '"' && value[0] != '\'';
  /* the parent's other required fields (a VarDesc's name, reached by
   * var[NAME]) get placeholders in the scratch message, which only f leaves */
  char req[512];
  size_t rlen = 0;
  req[0] = '\0';
  for (unsigned i = 0; i < msg->descriptor->n_fields && rlen < sizeof req; i++) {
    const ProtobufCFieldDescriptor *r = &msg->descriptor->fields[i];
    if (r == f || r->label != PROTOBUF_C_LABEL_REQUIRED || r->type == PROTOBUF_C_TYPE_MESSAGE) continue;
    const char *v = r->type == PROTOBUF_C_TYPE_STRING || r->type == PROTOBUF_C_TYPE_BYTES ? "\"\""
                    : r->type == PROTOBUF_C_TYPE_BOOL                                     ? "false"
                    : r->type == PROTOBUF_C_TYPE_ENUM ? ((const ProtobufCEnumDescriptor *)r->descriptor)->values[0].name
                                                      : "0";
    rlen += (size_t)snprintf(req + rlen, sizeof req - rlen, "%s: %s ", r->name, v);
  }
  if (rlen >= sizeof req) return pd_errorf(err, PD_ERR_INPUT, "--set '%s': too many required fields", assignment);
  size_t tlen = rlen + strlen(seg) + strlen(value) * 4 + 8;
  char *text = malloc(tlen);
  if (!text) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  size_t k = (size_t)snprintf(text, tlen, "%s%s: %s", req, seg, quote ? "\"" : "");
  for (const char *v = value; *v && quote; v++) {
    if (*v == '"' || *v == '\\') text[k++] = '\\';
    text[k++] = *v;
  }
  if (quote)
    text[k++] = '"', text[k] = '\0';
  else
    snprintf(text + k, tlen - k, "%s", value);
  ProtobufCMessage *tmp = NULL;
  pd_error perr;
  pd_status st = pd_text_parse(msg->descriptor, text, strlen(text), "--set", &tmp, NULL, &perr);
  free(text);
  if (st) return value_error(assignment, label, perr.msg, err);
  char *tb = (char *)tmp;
  size_t sz = value_size(f->type);
  if (f->label == PROTOBUF_C_LABEL_REPEATED) {
    size_t *n = (size_t *)(base + f->quantifier_offset), *tn = (size_t *)(tb + f->quantifier_offset);
    char **arr = (char **)(base + f->offset), **tarr = (char **)(tb + f->offset);
    if (replace && *n) { /* the old elements go with the scratch message */
      char *old = *arr;
      size_t oldn = *n;
      *arr = *tarr, *n = *tn;
      *tarr = old, *tn = oldn;
    } else {
      char *grown = realloc(*arr, (*n + *tn) * sz);
      if (!grown) {
        protobuf_c_message_free_unpacked(tmp, NULL);
        return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
      }
      memcpy(grown + *n * sz, *tarr, *tn * sz);
      *arr = grown;
      *n += *tn;
      *tn = 0; /* elements (strings) now belong to msg */
    }
  } else {
    void *dst = base + f->offset, *src = tb + f->offset;
    if (f->type == PROTOBUF_C_TYPE_STRING) {
      char **d = dst, **s = src;
      if (*d && *d != f->default_value) free(*d);
      *d = *s;
      *s = (char *)f->default_value;
    } else if (f->type == PROTOBUF_C_TYPE_BYTES) {
      ProtobufCBinaryData *d = dst, *s = src;
      if (d->data && (!f->default_value || d->data != ((const ProtobufCBinaryData *)f->default_value)->data))
        free(d->data);
      *d = *s;
      s->data = NULL, s->len = 0;
    } else
      memcpy(dst, src, sz);
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
      *(uint32_t *)(base + f->quantifier_offset) = f->id;
    else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_STRING &&
             f->type != PROTOBUF_C_TYPE_MESSAGE && f->quantifier_offset)
      *(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
  }
  protobuf_c_message_free_unpacked(tmp, NULL);
  return PD_OK;
}

/* attrs.KEY=VALUE (or attrs.KEY.FIELD=VALUE): the entry of map field f
 * with KEY, made when missing; *next is the path left after KEY. */
static pd_status set_in_map(ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f, char *key, const char *value,
                            const char *assignment, ProtobufCMessage **next_msg, pd_error *err) {
  *next_msg = NULL;
  bool fresh;
  ProtobufCMessage *e = NULL;
  pd_status st = map_entry(msg, f, key, &e, &fresh, err);
  if (st) return st;
  const ProtobufCFieldDescriptor *vf = protobuf_c_message_descriptor_get_field_by_name(e->descriptor, "value");
  if (vf->type != PROTOBUF_C_TYPE_MESSAGE) return set_field(e, vf, key, value, true, assignment, err);
  ProtobufCMessage **v = (ProtobufCMessage **)((char *)e + vf->offset);
  if (!*v && !(*v = new_message(vf->descriptor))) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  *next_msg = *v;
  return PD_OK;
}

pd_status pd_pb_set(ProtobufCMessage *root, const char *assignment, pd_error *err) {
  const char *eq = strchr(assignment, '=');
  if (!eq || eq == assignment)
    return pd_errorf(err, PD_ERR_INPUT, "--set '%s': expected FIELD=VALUE, e.g. --set train.optimizer.lr=0.01",
                     assignment);
  char path[512], where[600] = "the net";
  size_t plen = (size_t)(eq - assignment);
  if (plen >= sizeof path) return pd_errorf(err, PD_ERR_INPUT, "--set: field path too long");
  memcpy(path, assignment, plen);
  path[plen] = '\0';
  const char *value = eq + 1;
  ProtobufCMessage *msg = root;
  char *seg = path;
  for (;;) {
    char *sel = NULL, *dot = split_segment(seg, &sel);
    if (dot) *dot = '\0';
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, seg);
    if (!f) return unknown(msg->descriptor, assignment, seg, err);
    char *base = (char *)msg;
    if (sel) {
      if (f->type != PROTOBUF_C_TYPE_MESSAGE || f->label != PROTOBUF_C_LABEL_REPEATED)
        return pd_errorf(err, PD_ERR_INPUT,
                         "--set '%s': \"%s\" is not a repeated message; [INDEX] and [NAME] pick one of those",
                         assignment, seg);
      if (!dot)
        return pd_errorf(err, PD_ERR_INPUT,
                         "--set '%s': \"%s[%s]\" is a message; set one of its fields (%s[%s].FIELD=VALUE)", assignment,
                         seg, sel, seg, sel);
      pd_status st = select_element(msg, f, seg, sel, where, assignment, &msg, err);
      if (st) return st;
      snprintf(where, sizeof where, "%s[%s]", seg, sel);
      seg = dot + 1;
      continue;
    }
    if (dot && is_map(f)) { /* attrs.KEY... */
      char *key = dot + 1, *rest = strchr(key, '.');
      if (rest) *rest = '\0';
      ProtobufCMessage *v;
      pd_status st = set_in_map(msg, f, key, value, assignment, &v, err);
      if (st || !v) return st;
      if (rest) { /* attrs.KEY.FIELD=VALUE: a field of the value named */
        msg = v;
        snprintf(where, sizeof where, "%s.%s", seg, key);
        seg = rest + 1;
        continue;
      }
      return set_field(v, value_field(v, value), key, value, true, assignment, err);
    }
    if (dot) {
      if (f->type != PROTOBUF_C_TYPE_MESSAGE || f->label == PROTOBUF_C_LABEL_REPEATED) {
        char hint[1100] = "";
        if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
          const ProtobufCMessageDescriptor *ed = f->descriptor;
          bool named = protobuf_c_message_descriptor_get_field_by_name(ed, "name") ||
                       protobuf_c_message_descriptor_get_field_by_name(ed, "var");
          bool written = protobuf_c_message_descriptor_get_field_by_name(ed, "outputs") != NULL;
          snprintf(hint, sizeof hint, " (pick one: %s[INDEX]%s%s%s)", seg, named || written ? " or " : "",
                   named || written ? seg : "",
                   named     ? "[NAME]"
                   : written ? "[OUTPUT]"
                             : "");
        }
        return pd_errorf(err, PD_ERR_INPUT, "--set '%s': \"%s\" is not a single message, so it has no fields%s",
                         assignment, seg, hint);
      }
      ProtobufCMessage **sub = (ProtobufCMessage **)(base + f->offset);
      if (!*sub) {
        if (!(*sub = new_message(f->descriptor))) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) *(uint32_t *)(base + f->quantifier_offset) = f->id;
      }
      msg = *sub;
      snprintf(where, sizeof where, "%s", seg);
      seg = dot + 1;
      continue;
    }
    if (f->type == PROTOBUF_C_TYPE_MESSAGE)
      return pd_errorf(err, PD_ERR_INPUT, "--set '%s': \"%s\" is a message; set one of its fields (%s.FIELD=VALUE)",
                       assignment, seg, path);
    return set_field(msg, f, seg, value, false, assignment, err);
  }
}
