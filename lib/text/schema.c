/* schema.c — finds message descriptors by full name ("paddle.NetDesc") for
 * the text-format tools and the CLI. paddle.proto's top-level messages and
 * ONNX's ModelProto and TensorProto are known from the start; tests add
 * their own schema with pd_schema_register.
 * Nested types (map entries, All.Nested) are found by walking fields. */
#include "text/schema.h"

#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "paddle.pb-c.h"
#include "text/textformat.h"

static const ProtobufCMessageDescriptor *const builtin[] = {
    &paddle__attr_value__descriptor,
    &paddle__attr_proto__descriptor,
    &paddle__var_proto__descriptor,
    &paddle__op_proto__descriptor,
    &paddle__op_desc__descriptor,
    &paddle__var_desc__descriptor,
    &paddle__initializer__descriptor,
    &paddle__data_binding__descriptor,
    &paddle__lr_schedule__descriptor,
    &paddle__optimizer_desc__descriptor,
    &paddle__train_desc__descriptor,
    &paddle__net_desc__descriptor,
    &paddle__block_desc__descriptor,
    &paddle__checkpoint_file__descriptor,
    &paddle__checkpoint_manifest__descriptor,
    /* ONNX's schema (Debian's onnx.proto), for `fmt --type onnx.ModelProto` */
    &onnx__model_proto__descriptor,
    &onnx__tensor_proto__descriptor,
};

/* Registered lists are kept by pointer; a handful is all a process needs. */
#define MAX_REGISTERED 32
static struct {
  const ProtobufCMessageDescriptor *const *descs;
  size_t n;
} registered[MAX_REGISTERED];
static size_t n_registered;

void pd_schema_register(const ProtobufCMessageDescriptor *const *descs, size_t n) {
  if (!descs || n == 0 || n_registered == MAX_REGISTERED) return;
  for (size_t i = 0; i < n_registered; i++)
    if (registered[i].descs == descs && registered[i].n == n) return; /* already known */
  registered[n_registered].descs = descs;
  registered[n_registered].n = n;
  n_registered++;
}

/* Depth-first search through message-typed fields; `seen` stops cycles. */
typedef struct walk {
  const ProtobufCMessageDescriptor **seen;
  size_t n, cap;
  int oom;
} walk;

static const ProtobufCMessageDescriptor *search(walk *w, const ProtobufCMessageDescriptor *d, const char *name) {
  for (size_t i = 0; i < w->n; i++)
    if (w->seen[i] == d) return NULL;
  if (strcmp(d->name, name) == 0) return d;
  if (w->n == w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 32;
    const ProtobufCMessageDescriptor **s = realloc(w->seen, cap * sizeof *s);
    if (!s) {
      w->oom = 1;
      return NULL;
    }
    w->seen = s;
    w->cap = cap;
  }
  w->seen[w->n++] = d;
  for (unsigned i = 0; i < d->n_fields && !w->oom; i++) {
    if (d->fields[i].type != PROTOBUF_C_TYPE_MESSAGE) continue;
    const ProtobufCMessageDescriptor *r = search(w, d->fields[i].descriptor, name);
    if (r) return r;
  }
  return NULL;
}

const ProtobufCMessageDescriptor *pd_schema_find(const char *full_name) {
  if (!full_name) return NULL;
  walk w = {0};
  const ProtobufCMessageDescriptor *r = NULL;
  for (size_t i = 0; i < sizeof builtin / sizeof builtin[0] && !r; i++) r = search(&w, builtin[i], full_name);
  for (size_t k = 0; k < n_registered && !r; k++)
    for (size_t i = 0; i < registered[k].n && !r; i++) r = search(&w, registered[k].descs[i], full_name);
  free(w.seen);
  return r;
}
