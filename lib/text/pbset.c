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
    char *dot = strchr(seg, '.');
    if (dot) *dot = '\0';
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, seg);
    if (!f) return unknown(msg->descriptor, assignment, seg, err);
    char *base = (char *)msg;
    if (dot) {
      if (f->type != PROTOBUF_C_TYPE_MESSAGE || f->label == PROTOBUF_C_LABEL_REPEATED)
        return pd_errorf(err, PD_ERR_INPUT, "--set %s: \"%s\" is not a single message, so it has no fields", assignment,
                         seg);
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
    size_t tlen = strlen(seg) + strlen(value) * 4 + 8;
    char *text = malloc(tlen);
    if (!text) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    size_t k = (size_t)snprintf(text, tlen, "%s: %s", seg, quote ? "\"" : "");
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
