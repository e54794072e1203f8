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
    return pd_errorf(err, PD_ERR_INPUT, "--set %s: %s has no field \"%s\" (did you mean \"%s\"?)", path, d->name, seg,
                     sug);
  return pd_errorf(err, PD_ERR_INPUT, "--set %s: %s has no field \"%s\"", path, d->name, seg);
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

/* Element `sel` of the repeated message field f of msg: a 0-based index, or
 * the element whose string field `name` is sel (quotes around it optional). */
static pd_status select_element(ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f, const char *seg, char *sel,
                                const char *assignment, ProtobufCMessage **out, pd_error *err) {
  size_t n = *(size_t *)((char *)msg + f->quantifier_offset);
  ProtobufCMessage **arr = *(ProtobufCMessage ***)((char *)msg + f->offset);
  size_t len = strlen(sel);
  if (len >= 2 && (sel[0] == '"' || sel[0] == '\'') && sel[len - 1] == sel[0]) sel[len - 1] = '\0', sel++;
  bool digits = *sel != '\0';
  for (const char *c = sel; *c; c++) digits &= *c >= '0' && *c <= '9';
  if (digits) {
    char *end;
    unsigned long long i = strtoull(sel, &end, 10);
    if (i >= n)
      return pd_errorf(err, PD_ERR_INPUT, "--set %s: %s[%s] is out of range (%s has %zu element%s)", assignment, seg,
                       sel, seg, n, n == 1 ? "" : "s");
    *out = arr[i];
    return PD_OK;
  }
  const ProtobufCFieldDescriptor *nf = protobuf_c_message_descriptor_get_field_by_name(f->descriptor, "name");
  if (!nf || nf->type != PROTOBUF_C_TYPE_STRING || nf->label == PROTOBUF_C_LABEL_REPEATED)
    return pd_errorf(err, PD_ERR_INPUT, "--set %s: %s has no name field; pick one by index (%s[0])", assignment,
                     ((const ProtobufCMessageDescriptor *)f->descriptor)->name, seg);
  for (size_t i = 0; i < n; i++) {
    const char *name = *(const char **)((const char *)arr[i] + nf->offset);
    if (name && strcmp(name, sel) == 0) {
      *out = arr[i];
      return PD_OK;
    }
  }
  return pd_errorf(err, PD_ERR_INPUT, "--set %s: no %s named \"%s\"", assignment, seg, sel);
}

pd_status pd_pb_set(ProtobufCMessage *root, const char *assignment, pd_error *err) {
  const char *eq = strchr(assignment, '=');
  if (!eq || eq == assignment)
    return pd_errorf(err, PD_ERR_INPUT, "--set \"%s\": expected FIELD=VALUE, e.g. --set train.optimizer.lr=0.01",
                     assignment);
  char path[512];
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
                         "--set %s: \"%s\" is not a repeated message; [INDEX] and [NAME] pick one of those", assignment,
                         seg);
      if (!dot)
        return pd_errorf(err, PD_ERR_INPUT,
                         "--set %s: \"%s[%s]\" is a message; set one of its fields (%s[%s].FIELD=VALUE)", assignment,
                         seg, sel, seg, sel);
      pd_status st = select_element(msg, f, seg, sel, assignment, &msg, err);
      if (st) return st;
      seg = dot + 1;
      continue;
    }
    if (dot) {
      if (f->type != PROTOBUF_C_TYPE_MESSAGE || f->label == PROTOBUF_C_LABEL_REPEATED) {
        char hint[1100] = "";
        if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
          const ProtobufCFieldDescriptor *nf = protobuf_c_message_descriptor_get_field_by_name(f->descriptor, "name");
          snprintf(hint, sizeof hint, " (pick one: %s[INDEX]%s%s%s)", seg, nf ? " or " : "", nf ? seg : "",
                   nf ? "[NAME]" : "");
        }
        return pd_errorf(err, PD_ERR_INPUT, "--set %s: \"%s\" is not a single message, so it has no fields%s",
                         assignment, seg, hint);
      }
      ProtobufCMessage **sub = (ProtobufCMessage **)(base + f->offset);
      if (!*sub) {
        const ProtobufCMessageDescriptor *sd = f->descriptor;
        *sub = malloc(sd->sizeof_message);
        if (!*sub) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
        protobuf_c_message_init(sd, *sub);
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) *(uint32_t *)(base + f->quantifier_offset) = f->id;
      }
      msg = *sub;
      seg = dot + 1;
      continue;
    }
    if (f->type == PROTOBUF_C_TYPE_MESSAGE)
      return pd_errorf(err, PD_ERR_INPUT, "--set %s: \"%s\" is a message; set one of its fields (%s.FIELD=VALUE)",
                       assignment, seg, path);
    /* parse "seg: value" as the parent type */
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
                      : r->type == PROTOBUF_C_TYPE_ENUM
                          ? ((const ProtobufCEnumDescriptor *)r->descriptor)->values[0].name
                          : "0";
      rlen += (size_t)snprintf(req + rlen, sizeof req - rlen, "%s: %s ", r->name, v);
    }
    if (rlen >= sizeof req) return pd_errorf(err, PD_ERR_INPUT, "--set %s: too many required fields", assignment);
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
    if (st) return pd_errorf(err, PD_ERR_INPUT, "--set %s: %s", assignment, perr.msg);
    char *tb = (char *)tmp;
    size_t sz = value_size(f->type);
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t *n = (size_t *)(base + f->quantifier_offset), *tn = (size_t *)(tb + f->quantifier_offset);
      char **arr = (char **)(base + f->offset), **tarr = (char **)(tb + f->offset);
      char *grown = realloc(*arr, (*n + *tn) * sz);
      if (!grown) {
        protobuf_c_message_free_unpacked(tmp, NULL);
        return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
      }
      memcpy(grown + *n * sz, *tarr, *tn * sz);
      *arr = grown;
      *n += *tn;
      *tn = 0; /* elements (strings) now belong to msg */
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
}
