/* onnx_import.c — an ONNX model as a NetDesc (text) plus the values of its
 * parameters and constants. Each node maps onto our ops with the attribute
 * semantics of the model's opset; where ONNX needs more than one of our ops
 * (Gemm's transposes and scaling, Softmax along an inner axis) they are
 * chained through variables named after the node's output. Shapes and
 * dtypes the mapping needs come from our own shape inference (over the ops
 * added since the last time, their inputs preset from what is known), so
 * they agree with what will run; names are looked up in hash maps, so the
 * import is linear in the graph. Anything not claimed is an error naming
 * the node, its op type and the opset. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/stat.h>
#include <unistd.h>

#include "io/checkpoint.h"
#include "base/fileutil.h"
#include "io/npy.h"
#include "onnx/onnx_import.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import_int.h"

#include "core/net.h"
#include "core/op.h"
#include "text/textformat.h"
#include "base/slice_range.h"
#include "base/util.h"

/* ---- tensors ---------------------------------------------------------------- */

static int dtype_of(int32_t onnx_type) {
  switch (onnx_type) {
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    return PD_F32;
  case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
    return PD_F64;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    return PD_I32;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    return PD_I64;
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
  case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: /* 0 or 1 in a byte: If's and Loop's conditions */
    return PD_U8;
  default:
    return -1;
  }
}

static const char *onnx_type_name(int32_t t) {
  const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(&onnx__tensor_proto__data_type__descriptor, t);
  return v ? v->name : "unknown";
}

pd_status pd_onnx_set_input(Onnx__ModelProto *m, const char *name, const pd_tensor *t, pd_error *err) {
  Onnx__GraphProto *g = m->graph;
  const Onnx__ValueInfoProto *in = NULL;
  for (size_t i = 0; g && i < g->n_input && !in; i++)
    if (g->input[i]->name && !strcmp(g->input[i]->name, name)) in = g->input[i];
  if (!in) return pd_errorf(err, PD_ERR_INPUT, "--constant %s: the model has no graph input \"%s\"", name, name);
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name))
      return pd_errorf(err, PD_ERR_INPUT, "--constant %s: graph input \"%s\" already has a value (an initializer)",
                       name, name);
  const Onnx__TypeProto *tp = in->type;
  if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type) {
    int dt = dtype_of(tp->tensor_type->elem_type);
    if (dt >= 0 && dt != (int)t->dtype)
      return pd_errorf(err, PD_ERR_INPUT, "--constant %s: graph input \"%s\" is %s, the file holds %s", name, name,
                       onnx_type_name(tp->tensor_type->elem_type), pd_dtype_name(t->dtype));
    const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
    if (sh && (int)sh->n_dim != t->ndim)
      return pd_errorf(err, PD_ERR_INPUT, "--constant %s: graph input \"%s\" has %zu dims, the file %d", name, name,
                       sh->n_dim, t->ndim);
    for (size_t d = 0; sh && d < sh->n_dim; d++)
      if (sh->dim[d]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
          sh->dim[d]->dim_value != t->dims[d])
        return pd_errorf(err, PD_ERR_INPUT, "--constant %s: dim %zu of graph input \"%s\" is %lld, the file's %lld",
                         name, d, name, (long long)sh->dim[d]->dim_value, (long long)t->dims[d]);
  }
  Onnx__TensorProto *v = pd_onnx_tensor_proto(name, t);
  Onnx__TensorProto **list = v ? realloc(g->initializer, sizeof *list * (g->n_initializer + 1)) : NULL;
  if (!list) {
    if (v) onnx__tensor_proto__free_unpacked(v, NULL);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  g->initializer = list;
  g->initializer[g->n_initializer++] = v;
  return PD_OK;
}

pd_status pd_onnx_tensor(const Onnx__TensorProto *tp, const char *what, pd_tensor *out, pd_error *err) {
  int dt = dtype_of(tp->data_type);
  if (dt < 0)
    return pd_errorf(err, PD_ERR_INPUT, "%s: data type %s is not supported (float, double, int32, int64, uint8 are)",
                     what, onnx_type_name(tp->data_type));
  if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
    return pd_errorf(err, PD_ERR_INPUT, "%s: data in an external file is not supported", what);
  if (tp->n_dims > PD_MAX_DIMS)
    return pd_errorf(err, PD_ERR_INPUT, "%s: %zu dims, at most %d are supported", what, tp->n_dims, PD_MAX_DIMS);
  int64_t numel;
  if (!pd_dims_product((int)tp->n_dims, tp->dims, &numel) || numel > ((int64_t)1 << 40))
    return pd_errorf(err, PD_ERR_INPUT, "%s: bad dims (negative or too large)", what);
  /* where the values are, and how many there are: checked before allocating */
  size_t es = pd_dtype_size((pd_dtype)dt), have;
  if (tp->has_raw_data)
    have = tp->raw_data.len / es;
  else if (dt == PD_F32)
    have = tp->n_float_data;
  else if (dt == PD_F64)
    have = tp->n_double_data;
  else if (dt == PD_I64)
    have = tp->n_int64_data;
  else
    have = tp->n_int32_data;
  if ((tp->has_raw_data && tp->raw_data.len != (size_t)numel * es) || have != (size_t)numel)
    return pd_errorf(err, PD_ERR_INPUT, "%s: holds %zu values, its dims %lld", what, have, (long long)numel);
  if (dt == PD_U8 && !tp->has_raw_data) /* uint8 values come as int32: never wrapped */
    for (int64_t i = 0; i < numel; i++)
      if (tp->int32_data[i] < 0 || tp->int32_data[i] > 255)
        return pd_errorf(err, PD_ERR_INPUT, "%s: value #%lld is %d; a uint8 holds 0 to 255", what, (long long)i,
                         (int)tp->int32_data[i]);
  pd_tensor_init(out, (pd_dtype)dt);
  pd_status st = pd_tensor_set_dims(out, (int)tp->n_dims, tp->dims, err);
  if (!st) st = pd_tensor_alloc(out, err);
  if (st) return st;
  void *d = pd_tensor_data(out);
  if (numel == 0) return PD_OK;
  if (tp->has_raw_data) { /* little-endian, as this machine */
    memcpy(d, tp->raw_data.data, tp->raw_data.len);
  } else if (dt == PD_F32) {
    memcpy(d, tp->float_data, (size_t)numel * 4);
  } else if (dt == PD_F64) {
    memcpy(d, tp->double_data, (size_t)numel * 8);
  } else if (dt == PD_I64) {
    memcpy(d, tp->int64_data, (size_t)numel * 8);
  } else if (dt == PD_I32) {
    memcpy(d, tp->int32_data, (size_t)numel * 4);
  } else {
    for (int64_t i = 0; i < numel; i++) ((uint8_t *)d)[i] = (uint8_t)tp->int32_data[i];
  }
  return PD_OK;
}

static pd_status read_message(const char *path, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **out,
                              pd_error *err) {
  char *data = NULL;
  size_t len = 0;
  pd_status st = pd_read_file(path, (size_t)2 << 30, &data, &len, err);
  if (st) return st;
  if ((st = pd_pb_check_depth(desc, (const uint8_t *)data, len, path, err))) {
    free(data);
    return st;
  }
  *out = protobuf_c_message_unpack(desc, NULL, len, (const uint8_t *)data);
  free(data);
  if (!*out)
    return pd_errorf(err, PD_ERR_INPUT, "%s: not a valid ONNX %s (truncated or not protobuf)", path, desc->short_name);
  return PD_OK;
}

pd_status pd_onnx_read(const char *path, Onnx__ModelProto **out, pd_error *err) {
  ProtobufCMessage *m = NULL;
  pd_status st = read_message(path, &onnx__model_proto__descriptor, &m, err);
  *out = (Onnx__ModelProto *)m;
  if (!st && !(*out)->graph) {
    protobuf_c_message_free_unpacked(m, NULL);
    *out = NULL;
    return pd_errorf(err, PD_ERR_INPUT, "%s: not an ONNX model (no graph)", path);
  }
  return st;
}

pd_status pd_onnx_read_tensor(const char *path, pd_tensor *out, char **name, pd_error *err) {
  ProtobufCMessage *m = NULL;
  pd_status st = read_message(path, &onnx__tensor_proto__descriptor, &m, err);
  if (st) return st;
  const Onnx__TensorProto *tp = (const Onnx__TensorProto *)m;
  st = pd_onnx_tensor(tp, path, out, err);
  if (!st && name) *name = strdup(tp->name ? tp->name : "");
  protobuf_c_message_free_unpacked(m, NULL);
  return st;
}

/* ---- name maps --------------------------------------------------------------- */

/* Grows *p (n elements of size) to hold one more, doubling at each power of
 * two: a list appended to one at a time costs linear time (realloc by one
 * each time copies the list each time under ASan). 0, or -1 out of memory. */
static int grow(void **p, size_t n, size_t size) {
  if (n & (n - 1)) return 0; /* room up to the next power of two */
  void *q = realloc(*p, size * (n ? 2 * n : 1));
  if (!q) return -1;
  *p = q;
  return 0;
}

/* Open addressing from a name (borrowed: it must outlive the map) to an int,
 * so that every lookup by name costs the same however big the graph. */
typedef struct smap {
  const char **keys;
  int *vals;
  size_t cap, n;
} smap;

static size_t smap_slot(const smap *m, const char *k) {
  size_t mask = m->cap - 1, i = (size_t)pd_hash_str(k) & mask;
  while (m->keys[i] && strcmp(m->keys[i], k) != 0) i = (i + 1) & mask;
  return i;
}

static int smap_get(const smap *m, const char *k) {
  if (!m->cap) return -1;
  size_t i = smap_slot(m, k);
  return m->keys[i] ? m->vals[i] : -1;
}

/* 0, or -1 out of memory. */
static int smap_put(smap *m, const char *k, int v) {
  if ((m->n + 1) * 2 > m->cap) {
    smap g = {.cap = m->cap ? m->cap * 2 : 64};
    g.keys = calloc(g.cap, sizeof *g.keys), g.vals = malloc(g.cap * sizeof *g.vals);
    if (!g.keys || !g.vals) {
      free(g.keys), free(g.vals);
      return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
      if (m->keys[i]) {
        size_t j = smap_slot(&g, m->keys[i]);
        g.keys[j] = m->keys[i], g.vals[j] = m->vals[i];
      }
    g.n = m->n;
    free(m->keys), free(m->vals);
    *m = g;
  }
  size_t i = smap_slot(m, k);
  if (!m->keys[i]) m->keys[i] = k, m->n++;
  m->vals[i] = v;
  return 0;
}

static void smap_free(smap *m) {
  free(m->keys), free(m->vals);
  memset(m, 0, sizeof *m);
}

/* ---- the importer's state ---------------------------------------------------- */

typedef struct konst { /* a constant known at import: initializer or Constant output */
  const char *name;
  pd_tensor t;
  bool declared; /* a var of the net by now */
  bool is_initializer;
} konst;

typedef struct pattern {
  const char *type; /* "gelu", "layer_norm" */
  const char *x, *scale, *bias, *y;
  int64_t axes[PD_MAX_DIMS];
  int naxes;
  double eps;
} pattern;

typedef struct imp {
  const Onnx__ModelProto *m;
  const Onnx__GraphProto *g;
  const char *file;
  int64_t opset;
  pd_error *err;
  pd_onnx_import *out;
  pd_buf vars, ops;
  konst *k;
  int nk, capk;
  smap kmap;         /* name -> index in k */
  smap names;        /* every value name in the graph, and those we made */
  smap fresh;        /* "<base>.<what>" -> the next number to try */
  smap uses;         /* name -> node inputs and graph outputs that read it */
  smap graph_inputs; /* name -> index in g->input */
  char **owned;      /* the names we made */
  int nowned;
  /* The dtype and load-time shape of every value known so far (a declared
   * variable, or an output of an op whose shapes were inferred), and its
   * kind. Ops emitted since (pend, their text; pio, their input and output
   * names) are inferred together when a shape is asked for: a small net of
   * them alone, whose inputs come from here, so the import is linear. */
  smap mmap; /* name -> index in mnames */
  const char **mnames;
  pd_tensor *mmeta;
  pd_var_kind *mkind;
  int nm, capm;
  pd_buf pend;
  struct pio {
    const char *name;
    bool out;
  } * pio;
  int npio, cappio;
  pd_net *net; /* the whole net, built at the end */
  /* Whether the graph inputs' fixed first dim (the exported batch) is
   * made -1: then a node that needs its value fails the import, which is
   * run again without (pd_onnx_import_model). */
  bool relax;
  smap weights; /* graph inputs read as BatchNormalization's weights: 1 param, 2 state */
  int *pat;     /* per node: 0, -1 (in a decomposition, skipped) or 1 + its pattern (emitted there) */
  pattern *pats;
  int npats;
  /* the node being mapped, for messages */
  const Onnx__NodeProto *node;
  int node_index;
} imp;

static pd_status oom(imp *im) { return pd_errorf(im->err, PD_ERR_RUNTIME, "out of memory"); }

/* "FILE: node #3 "conv1" (Conv, opset 13): unsupported: <why>" */
static pd_status unsupported(imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pd_status unsupported(imp *im, const char *fmt, ...) {
  char why[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  im->out->unsupported = true;
  const Onnx__NodeProto *n = im->node;
  if (!im->out->unsupported_op) im->out->unsupported_op = strdup(n ? n->op_type : "(graph)");
  if (!n) return pd_errorf(im->err, PD_ERR_INPUT, "%s: unsupported: %s", im->file, why);
  char label[600];
  if (n->name && n->name[0])
    snprintf(label, sizeof label, "\"%.500s\"", n->name);
  else
    snprintf(label, sizeof label, "(unnamed, output \"%.480s\")", n->n_output ? n->output[0] : "");
  return pd_errorf(im->err, PD_ERR_INPUT, "%s: node #%d %s (%s, opset %lld): unsupported: %s", im->file, im->node_index,
                   label, n->op_type, (long long)im->opset, why);
}

/* torch.onnx.export writes x.view(x.size(0), -1) as Shape, Gather,
 * Unsqueeze and Concat feeding a Reshape. Over the static shapes such
 * chains are constants, computed here; an entry that is the batch (-1 at
 * load) is BATCH_MARK: moved around freely, it becomes Reshape's 0 (or
 * -1), and any other use of it (arithmetic, as an op's input) needs the
 * batch's value, which is known only at run time. */
#define BATCH_MARK INT64_MIN
#define FOLD_MAX 4096 /* elements: shape vectors, not tensors */

static bool has_mark(const pd_tensor *t) {
  if (t->dtype != PD_I64) return false;
  for (int64_t i = 0; i < pd_tensor_numel(t); i++)
    if (PD_DATA(t, int64_t)[i] == BATCH_MARK) return true;
  return false;
}

/* "<why>": a node that needs the batch's value (see imp.relax). */
static pd_status batch_dep(imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pd_status batch_dep(imp *im, const char *fmt, ...) {
  char why[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return unsupported(im, "%s", why);
}

static pd_status add_name(imp *im, const char *name) {
  if (smap_get(&im->names, name) >= 0) return PD_OK;
  return smap_put(&im->names, name, 1) ? oom(im) : PD_OK;
}

static bool has_name(const imp *im, const char *name) { return smap_get(&im->names, name) >= 0; }

/* Takes s (malloc'd, or NULL) into im->owned; s, or NULL out of memory. */
static char *own(imp *im, char *s) {
  if (!s || grow((void **)&im->owned, (size_t)im->nowned, sizeof *im->owned)) {
    free(s);
    return NULL;
  }
  return im->owned[im->nowned++] = s;
}

/* A new variable name "<base>.<what>" (with a number if taken), of any
 * length; the numbers tried go on from the last one given for that stem. */
static const char *fresh(imp *im, const char *base, const char *what) {
  char *stem = pd_strf("%s.%s", base, what), *s = NULL;
  if (!stem) return NULL;
  int i = smap_get(&im->fresh, stem);
  if (i < 0) { /* the stem itself first */
    if (!own(im, stem) || smap_put(&im->fresh, stem, 2)) return NULL;
    if (!has_name(im, stem)) return add_name(im, stem) ? NULL : stem;
    i = 2;
  } else {
    const char *key = im->fresh.keys[smap_slot(&im->fresh, stem)];
    free(stem);
    stem = (char *)key;
  }
  for (;; i++) {
    if (!(s = pd_strf("%s%d", stem, i))) return NULL;
    if (!has_name(im, s)) break;
    free(s);
  }
  if (smap_put(&im->fresh, stem, i + 1) || !own(im, s) || add_name(im, s)) return NULL;
  return s;
}

static konst *find_const(imp *im, const char *name) {
  int i = smap_get(&im->kmap, name);
  return i < 0 ? NULL : &im->k[i];
}

static bool is_initializer(imp *im, const char *name) {
  konst *k = name ? find_const(im, name) : NULL;
  return k && k->is_initializer;
}

/* Takes t (its storage) as the constant `name`. */
static pd_status add_const(imp *im, const char *name, pd_tensor *t, bool is_initializer) {
  if (im->nk == im->capk) {
    int cap = im->capk ? im->capk * 2 : 16;
    konst *k = realloc(im->k, sizeof *k * (size_t)cap);
    if (!k) return oom(im);
    im->k = k, im->capk = cap;
  }
  if (smap_put(&im->kmap, name, im->nk)) return oom(im);
  im->k[im->nk++] = (konst){.name = name, .t = *t, .is_initializer = is_initializer};
  return add_name(im, name);
}

/* ---- the NetDesc text ------------------------------------------------------------ */

static void put_str(pd_buf *b, const char *s) {
  pd_buf_append(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      pd_buf_printf(b, "\\%c", *p);
    else if (*p < 0x20 || *p >= 0x7f)
      pd_buf_printf(b, "\\%03o", *p);
    else
      pd_buf_append(b, (const char *)p, 1);
  }
  pd_buf_append(b, "\"", 1);
}

/* Text inside a # comment: printable ASCII only (a newline would end it). */
static void put_comment(pd_buf *b, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char c = *p >= 0x20 && *p < 0x7f ? (char)*p : '?';
    pd_buf_append(b, &c, 1);
  }
}

static const char *const dtype_enum[] = {"FLOAT32", "FLOAT64", "INT32", "INT64", "UINT8"};

/* Records what value `name` is (see imp.mmap). */
static pd_status set_meta(imp *im, const char *name, const pd_tensor *t, pd_var_kind kind) {
  int i = smap_get(&im->mmap, name);
  if (i < 0) {
    if (im->nm == im->capm) {
      int cap = im->capm ? im->capm * 2 : 64;
      const char **n = realloc(im->mnames, sizeof *n * (size_t)cap);
      if (n) im->mnames = n;
      pd_tensor *m = n ? realloc(im->mmeta, sizeof *m * (size_t)cap) : NULL;
      if (m) im->mmeta = m;
      pd_var_kind *k = m ? realloc(im->mkind, sizeof *k * (size_t)cap) : NULL;
      if (!k) return oom(im);
      im->mkind = k, im->capm = cap;
    }
    i = im->nm++;
    im->mnames[i] = name;
    if (smap_put(&im->mmap, name, i)) return oom(im);
  }
  im->mmeta[i] = *t;
  im->mmeta[i].storage = NULL;
  im->mkind[i] = kind;
  return PD_OK;
}

static pd_status declare(imp *im, const char *name, pd_dtype dt, int ndim, const int64_t *dims, const char *kind) {
  pd_buf *b = &im->vars;
  pd_buf_printf(b, "var { name: ");
  put_str(b, name);
  pd_buf_printf(b, " shape: [");
  for (int i = 0; i < ndim; i++) pd_buf_printf(b, "%s%lld", i ? ", " : "", (long long)dims[i]);
  pd_buf_printf(b, "] dtype: %s kind: %s }\n", dtype_enum[dt], kind);
  pd_tensor t;
  pd_tensor_init(&t, dt);
  t.ndim = ndim;
  memcpy(t.dims, dims, sizeof *dims * (size_t)ndim);
  return set_meta(im, name, &t, kind[0] == 'D' ? PD_VAR_DATA : kind[0] == 'P' ? PD_VAR_PARAM : PD_VAR_STATE);
}

/* The name of value `name` as an op input; a constant becomes a declared
 * variable (and a value for the parameter directory) on first use: a float
 * initializer a parameter (trainable), anything else state. `kind` forces one. */
static pd_status scalar_input(imp *im, const char *name);

static pd_status use_as(imp *im, const char *name, const char *kind) {
  pd_status sst = scalar_input(im, name);
  if (sst) return sst;
  konst *k = find_const(im, name);
  if (!k || k->declared) return PD_OK;
  if (has_mark(&k->t))
    return batch_dep(im, "\"%s\" holds the batch size, known only at run time, and is read as a value", name);
  if (!kind) kind = k->is_initializer && pd_dtype_is_float(k->t.dtype) ? "PARAM" : "STATE";
  if (k->t.ndim == 0) /* a NetDesc shape has at least one dim: a scalar is [1] (the same under broadcasting) */
    k->t.ndim = 1, k->t.dims[0] = 1;
  pd_status dst = declare(im, name, k->t.dtype, k->t.ndim, k->t.dims, kind);
  if (dst) return dst;
  k->declared = true;
  pd_onnx_import *o = im->out;
  if (grow((void **)&o->values, (size_t)o->nvalues, sizeof *o->values)) return oom(im);
  pd_onnx_value *v = o->values;
  if (!(v[o->nvalues].name = strdup(name))) return oom(im);
  pd_tensor_init(&v[o->nvalues].t, k->t.dtype);
  pd_tensor_share(&v[o->nvalues].t, &k->t);
  o->nvalues++;
  return PD_OK;
}

/* Attributes of the op being written, as text. */
typedef struct attrs {
  pd_buf b;
} attrs;

static void at_i(attrs *a, const char *key, int64_t v) {
  pd_buf_printf(&a->b, " attrs { key: \"%s\" value { i: %lld } }", key, (long long)v);
}
static void at_f(attrs *a, const char *key, double v) {
  char num[32];
  pd_format_double(v, num, sizeof num);
  pd_buf_printf(&a->b, " attrs { key: \"%s\" value { f: %s } }", key, num);
}
static void at_s(attrs *a, const char *key, const char *v) {
  pd_buf_printf(&a->b, " attrs { key: \"%s\" value { s: \"%s\" } }", key, v);
}
static void at_b(attrs *a, const char *key, bool v) {
  pd_buf_printf(&a->b, " attrs { key: \"%s\" value { b: %s } }", key, v ? "true" : "false");
}
static void at_ints(attrs *a, const char *key, int n, const int64_t *v) {
  pd_buf_printf(&a->b, " attrs { key: \"%s\" value { ints: [", key);
  for (int i = 0; i < n; i++) pd_buf_printf(&a->b, "%s%lld", i ? ", " : "", (long long)v[i]);
  pd_buf_printf(&a->b, "] } }");
}

static pd_status add_pio(imp *im, const char *name, bool out) {
  if (im->npio == im->cappio) {
    int cap = im->cappio ? im->cappio * 2 : 64;
    struct pio *p = realloc(im->pio, sizeof *p * (size_t)cap);
    if (!p) return oom(im);
    im->pio = p, im->cappio = cap;
  }
  im->pio[im->npio++] = (struct pio){name, out};
  return PD_OK;
}

/* Appends op `type` (inputs "" = left out); frees a. The names must live
 * as long as the import (the model's, or made by fresh). */
static pd_status emit(imp *im, const char *type, int nin, const char *const *ins, int nout, const char *const *outs,
                      attrs *a) {
  if (!pd_op_find(type)) { /* a mapping written ahead of its op */
    if (a) pd_buf_free(&a->b);
    return unsupported(im, "its op %s is not in this build", type);
  }
  pd_status st = PD_OK;
  for (int i = 0; i < nin && !st; i++)
    if (ins[i][0]) st = use_as(im, ins[i], NULL);
  for (int i = 0; i < nout && !st; i++) st = add_name(im, outs[i]);
  for (int i = 0; i < nin && !st; i++)
    if (ins[i][0]) st = add_pio(im, ins[i], false);
  for (int i = 0; i < nout && !st; i++)
    if (outs[i][0]) st = add_pio(im, outs[i], true);
  pd_buf *bufs[2] = {&im->ops, &im->pend};
  for (int k = 0; k < 2; k++) {
    pd_buf *b = bufs[k];
    pd_buf_printf(b, "op { type: \"%s\" inputs: [", type);
    for (int i = 0; i < nin; i++) {
      if (i) pd_buf_append(b, ", ", 2);
      put_str(b, ins[i]);
    }
    pd_buf_printf(b, "] outputs: [");
    for (int i = 0; i < nout; i++) {
      if (i) pd_buf_append(b, ", ", 2);
      put_str(b, outs[i]);
    }
    pd_buf_printf(b, "]%s }\n", a && a->b.data ? a->b.data : "");
  }
  if (a) pd_buf_free(&a->b);
  return st;
}

static pd_status emit1(imp *im, const char *type, const char *in, const char *out, attrs *a) {
  return emit(im, type, 1, (const char *[]){in}, 1, (const char *[]){out}, a);
}

/* The whole text so far. */
static pd_status text(imp *im, pd_buf *t) {
  t->len = 0;
  if (pd_buf_append(t, im->vars.data ? im->vars.data : "", im->vars.len) ||
      pd_buf_append(t, im->ops.data ? im->ops.data : "", im->ops.len) || pd_buf_append(t, "", 1))
    return oom(im);
  t->len--;
  return PD_OK;
}

/* A rank-0 graph input: it cannot be data (data comes in rows), only a
 * constant that a node needs (see need_const). */
static pd_status scalar_input(imp *im, const char *name) {
  const Onnx__GraphProto *g = im->g;
  if (find_const(im, name)) return PD_OK;
  int gi = smap_get(&im->graph_inputs, name);
  if (gi >= 0) {
    const Onnx__ValueInfoProto *v = g->input[gi];
    if (v->type && v->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && v->type->tensor_type &&
        v->type->tensor_type->shape && v->type->tensor_type->shape->n_dim == 0)
      return unsupported(im, "graph input \"%s\" is a scalar (rank 0); data inputs need rank >= 1", name);
  }
  return PD_OK;
}

static pd_status does_not_build(imp *im, pd_status st, const pd_error *e) {
  return pd_errorf(im->err, st, "%s: node #%d (%s): the net it maps to does not build: %s", im->file, im->node_index,
                   im->node ? im->node->op_type : "", e->msg);
}

/* Infers the shapes of the ops emitted since the last time (our own checks
 * and shape inference, over a net of them alone whose inputs are preset
 * from what is known), and records their outputs. */
static pd_status infer_pending(imp *im) {
  if (!im->npio) return PD_OK;
  smap made = {0}, preset = {0};
  const char **names = malloc(sizeof *names * (size_t)im->npio);
  pd_tensor *metas = malloc(sizeof *metas * (size_t)im->npio);
  pd_var_kind *kinds = malloc(sizeof *kinds * (size_t)im->npio);
  int np = 0;
  pd_status st = names && metas && kinds ? PD_OK : oom(im);
  for (int i = 0; i < im->npio && !st; i++) {
    const char *n = im->pio[i].name;
    if (im->pio[i].out) {
      if (smap_put(&made, n, 1)) st = oom(im);
      continue;
    }
    int m = smap_get(&im->mmap, n);
    if (m < 0 || smap_get(&made, n) >= 0 || smap_get(&preset, n) >= 0) continue;
    if (smap_put(&preset, n, 1)) st = oom(im);
    names[np] = n, metas[np] = im->mmeta[m], kinds[np] = im->mkind[m] == PD_VAR_TEMP ? PD_VAR_DATA : im->mkind[m];
    np++;
  }
  pd_net *net = NULL;
  if (!st && pd_buf_append(&im->pend, "", 1)) st = oom(im);
  if (!st) {
    pd_net_opts o = {
        .float_dtype = PD_F32, .preset_names = names, .preset_metas = metas, .preset_kinds = kinds, .n_presets = np};
    pd_error e = {0};
    st = pd_net_from_text(im->file, im->pend.data, im->pend.len - 1, &o, &net, &e);
    if (st) st = does_not_build(im, st, &e);
  }
  for (int i = 0; i < im->npio && !st; i++) {
    if (!im->pio[i].out) continue;
    int v = pd_net_var(net, im->pio[i].name), old = smap_get(&im->mmap, im->pio[i].name);
    /* a state written in place (batch_norm's running statistics) stays state */
    st = set_meta(im, im->pio[i].name, &net->vars[v].meta, old >= 0 ? im->mkind[old] : PD_VAR_TEMP);
  }
  if (net) pd_net_free(net);
  smap_free(&made), smap_free(&preset);
  free(names), free(metas), free(kinds);
  im->npio = 0;
  im->pend.len = 0;
  return st;
}

/* The dtype and shape (load-time: -1 for the batch) of a value. */
static pd_status meta(imp *im, const char *name, pd_tensor *out) {
  pd_status sst = scalar_input(im, name);
  if (sst) return sst;
  konst *k = find_const(im, name);
  if (k && !k->declared) {
    pd_tensor_init(out, k->t.dtype);
    return pd_tensor_set_dims(out, k->t.ndim, k->t.dims, im->err);
  }
  int m = smap_get(&im->mmap, name);
  if (m < 0 && im->npio) {
    pd_status st0 = infer_pending(im);
    if (st0) return st0;
    m = smap_get(&im->mmap, name);
  }
  if (m < 0) return pd_errorf(im->err, PD_ERR_INPUT, "%s: value \"%s\" is used before it is computed", im->file, name);
  *out = im->mmeta[m];
  return PD_OK;
}

/* Whether value `name` has the batch made -1 first (imp.relax): then a
 * node that mixes its rows, or moves the batch elsewhere, needs the
 * batch's value (batch_dep), and the import is run again without. */
static bool relaxed(imp *im, const char *name) {
  pd_tensor t;
  pd_error e = {0}, *keep = im->err;
  if (!im->relax || !im->out->batch_from || !name) return false;
  im->err = &e; /* a value not known yet is not relaxed */
  bool r = meta(im, name, &t) == PD_OK && t.ndim > 0 && t.dims[0] == -1;
  im->err = keep;
  return r;
}

/* Builds the whole net from the text (our own checks and shape inference). */
static pd_status build_net(imp *im) {
  pd_buf t = {0};
  pd_status st = text(im, &t);
  if (!st) {
    pd_error e = {0};
    st = pd_net_from_text(im->file, t.data, t.len, NULL, &im->net, &e);
    if (st) st = does_not_build(im, st, &e);
  }
  pd_buf_free(&t);
  return st;
}

/* ---- reading a node -------------------------------------------------------------------- */

static const char *in_at(const Onnx__NodeProto *n, size_t i) {
  return i < n->n_input && n->input[i][0] ? n->input[i] : NULL;
}
static const char *out_at(const Onnx__NodeProto *n, size_t i) {
  return i < n->n_output && n->output[i][0] ? n->output[i] : NULL;
}

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
  return NULL;
}
static int64_t attr_i(const Onnx__NodeProto *n, const char *name, int64_t def) {
  const Onnx__AttributeProto *a = attr(n, name);
  return a ? a->i : def;
}
static double attr_f(const Onnx__NodeProto *n, const char *name, double def) {
  const Onnx__AttributeProto *a = attr(n, name);
  return a ? a->f : def;
}
/* The ints of a list attribute (n = 0 when absent). */
static const int64_t *attr_ints(const Onnx__NodeProto *n, const char *name, int *count) {
  const Onnx__AttributeProto *a = attr(n, name);
  *count = a ? (int)a->n_ints : 0;
  return a ? a->ints : NULL;
}
static bool attr_s_is(const Onnx__NodeProto *n, const char *name, const char *want, const char *def) {
  const Onnx__AttributeProto *a = attr(n, name);
  if (!a) return strcmp(def, want) == 0;
  return a->s.len == strlen(want) && memcmp(a->s.data, want, a->s.len) == 0;
}

/* A constant input: its tensor, or an error that says it must be one. */
static pd_status need_const(imp *im, const char *name, const char *what, konst **out) {
  *out = find_const(im, name);
  if (*out) return PD_OK;
  bool graph_input = smap_get(&im->graph_inputs, name) >= 0;
  if (graph_input && !im->out->need_const) im->out->need_const = strdup(name);
  if (graph_input)
    return unsupported(im,
                       "%s \"%s\" must be a constant (an initializer or a Constant node's output); it is a graph "
                       "input: `import --constant %s=FILE.npy` gives its value",
                       what, name, name);
  return unsupported(im, "%s \"%s\" must be a constant (an initializer or a Constant node's output)", what, name);
}

static pd_status need_float(imp *im, const char *name) {
  pd_tensor t;
  pd_status st = meta(im, name, &t);
  if (!st && !pd_dtype_is_float(t.dtype))
    return unsupported(im, "input \"%s\" is %s; only float and double are supported", name, pd_dtype_name(t.dtype));
  return st;
}

/* ---- the ops ------------------------------------------------------------------------------ */

typedef pd_status (*map_fn)(imp *im, const Onnx__NodeProto *n);

static pd_status map_act(imp *im, const Onnx__NodeProto *n, const char *type) {
  pd_status st = need_float(im, in_at(n, 0));
  return st ? st : emit1(im, type, n->input[0], n->output[0], NULL);
}
static pd_status map_relu(imp *im, const Onnx__NodeProto *n) { return map_act(im, n, "relu"); }
static pd_status map_sigmoid(imp *im, const Onnx__NodeProto *n) { return map_act(im, n, "sigmoid"); }
static pd_status map_tanh(imp *im, const Onnx__NodeProto *n) { return map_act(im, n, "tanh"); }
static pd_status map_identity(imp *im, const Onnx__NodeProto *n) {
  return emit1(im, "identity", n->input[0], n->output[0], NULL);
}

/* From opset 7 NumPy broadcasting both ways. Before, a `broadcast` flag:
 * 0 means equal shapes, 1 that B lines up with A's dims from `axis` (absent:
 * with A's trailing dims, as NumPy does) -- reshaped with trailing 1s so the
 * NumPy rule lines it up the same. */
static pd_status map_binary_names(imp *im, const Onnx__NodeProto *n, const char *type, const char *A, const char *B,
                                  const char *Y) {
  pd_tensor a, b;
  pd_status st = meta(im, A, &a);
  if (!st) st = meta(im, B, &b);
  if (st) return st;
  if (a.dtype != b.dtype)
    return unsupported(im, "inputs of two dtypes, %s and %s", pd_dtype_name(a.dtype), pd_dtype_name(b.dtype));
  if (im->opset < 7 && attr_i(n, "broadcast", 0) && attr(n, "axis")) {
    int64_t axis = attr_i(n, "axis", 0), shape[PD_MAX_DIMS];
    if (axis < 0) axis += a.ndim;
    int r = (int)(a.ndim - axis);
    if (axis < 0 || r < b.ndim)
      return unsupported(im, "B of rank %d does not fit A of rank %d at axis %lld", b.ndim, a.ndim, (long long)axis);
    for (int i = 0; i < r; i++) shape[i] = i < b.ndim ? 0 : 1;
    const char *B2 = fresh(im, Y, "b");
    if (!B2) return oom(im);
    attrs at = {0};
    at_ints(&at, "shape", r, shape);
    if ((st = emit1(im, "reshape", B, B2, &at))) return st;
    B = B2;
  }
  return emit(im, type, 2, (const char *[]){A, B}, 1, (const char *[]){Y}, NULL);
}

static pd_status map_binary(imp *im, const Onnx__NodeProto *n, const char *type) {
  return map_binary_names(im, n, type, n->input[0], n->input[1], n->output[0]);
}
static pd_status map_add(imp *im, const Onnx__NodeProto *n) { return map_binary(im, n, "broadcast_add"); }
static pd_status map_sub(imp *im, const Onnx__NodeProto *n) { return map_binary(im, n, "broadcast_sub"); }
static pd_status map_mul(imp *im, const Onnx__NodeProto *n) { return map_binary(im, n, "broadcast_mul"); }
static pd_status map_div(imp *im, const Onnx__NodeProto *n) { return map_binary(im, n, "broadcast_div"); }

static pd_status map_matmul(imp *im, const Onnx__NodeProto *n) {
  if (relaxed(im, n->input[1])) return batch_dep(im, "B has the batch first (a product over the rows)");
  pd_status st = need_float(im, n->input[0]);
  return st ? st
            : emit(im, "matmul", 2, (const char *[]){n->input[0], n->input[1]}, 1, (const char *[]){n->output[0]},
                   NULL);
}

/* Whether value `name` is read by exactly one node input in the graph. */
static bool used_once(const imp *im, const char *name) { return smap_get(&im->uses, name) == 1; }

/* Counts the readers of every value, for used_once. */
/* A value read inside a subgraph (a Scan's body, an If's branch) is never
 * used once: a constant converted in place for one reader would change
 * under the other. */
static pd_status count_subgraph_uses(imp *im, const Onnx__NodeProto *node) {
  for (size_t a = 0; a < node->n_attribute; a++) {
    const Onnx__AttributeProto *at = node->attribute[a];
    for (size_t k = 0; k < at->n_graphs + (at->g != NULL); k++) {
      const Onnx__GraphProto *sub = k < at->n_graphs ? at->graphs[k] : at->g;
      for (size_t i = 0; i < sub->n_node; i++) {
        for (size_t j = 0; j < sub->node[i]->n_input; j++)
          if (smap_put(&im->uses, sub->node[i]->input[j], 2)) return oom(im);
        pd_status st = count_subgraph_uses(im, sub->node[i]);
        if (st) return st;
      }
    }
  }
  return PD_OK;
}

static pd_status count_uses(imp *im) {
  const Onnx__GraphProto *g = im->g;
  for (size_t i = 0; i < g->n_node; i++) {
    for (size_t j = 0; j < g->node[i]->n_input; j++) {
      const char *n = g->node[i]->input[j];
      if (smap_put(&im->uses, n, smap_get(&im->uses, n) < 0 ? 1 : smap_get(&im->uses, n) + 1)) return oom(im);
    }
    pd_status st = count_subgraph_uses(im, g->node[i]);
    if (st) return st;
  }
  for (size_t i = 0; i < g->n_output; i++) {
    const char *n = g->output[i]->name;
    if (smap_put(&im->uses, n, smap_get(&im->uses, n) < 0 ? 1 : smap_get(&im->uses, n) + 1)) return oom(im);
  }
  return PD_OK;
}

/* Gemm: Y = alpha op(A) op(B) + beta C. A constant B and bias with alpha =
 * beta = 1 and A untransposed is our fc (its weight stored [K, N], so a
 * transB weight is stored transposed); anything else is transpose, matmul,
 * scale and broadcast_add in a chain. */
static pd_status map_gemm(imp *im, const Onnx__NodeProto *n) {
  const char *A = in_at(n, 0), *B = in_at(n, 1), *C = in_at(n, 2), *Y = n->output[0];
  double alpha = attr_f(n, "alpha", 1), beta = attr_f(n, "beta", 1);
  int64_t ta = attr_i(n, "transA", 0), tb = attr_i(n, "transB", 0);
  if ((ta && relaxed(im, A)) || relaxed(im, B)) return batch_dep(im, "a product over the rows of the batch");
  pd_tensor a, b;
  pd_status st = need_float(im, A);
  if (!st) st = meta(im, A, &a);
  if (!st) st = meta(im, B, &b);
  if (st) return st;
  if (a.ndim != 2 || b.ndim != 2) return unsupported(im, "A and B must be matrices");
  konst *kb = find_const(im, B), *kc = C ? find_const(im, C) : NULL;
  int64_t N = tb ? b.dims[0] : b.dims[1];
  bool fc =
      !ta && alpha == 1 && kb && !kb->declared && used_once(im, B) && b.dtype == a.dtype &&
      (!C || (beta == 1 && kc && !kc->declared && used_once(im, C) && kc->t.dtype == a.dtype &&
              pd_tensor_numel(&kc->t) == N && N > 1 && (kc->t.ndim == 1 || (kc->t.ndim == 2 && kc->t.dims[0] == 1))));
  if (fc) {
    if (tb) { /* store W = B^T */
      pd_tensor w;
      pd_tensor_init(&w, b.dtype);
      int64_t rows = kb->t.dims[0], cols = kb->t.dims[1];
      if (pd_tensor_set_dims(&w, 2, (int64_t[]){cols, rows}, im->err) || pd_tensor_alloc(&w, im->err))
        return PD_ERR_RUNTIME;
      size_t es = pd_dtype_size(b.dtype);
      const char *src = pd_tensor_data(&kb->t);
      char *dst = pd_tensor_data(&w);
      for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) memcpy(dst + (c * rows + r) * es, src + (r * cols + c) * es, es);
      pd_tensor_release(&kb->t);
      kb->t = w;
    }
    if (kc) kc->t.ndim = 1, kc->t.dims[0] = N;
    attrs at = {0};
    at_i(&at, "size", N);
    return emit(im, "fc", 3, (const char *[]){A, B, C ? C : ""}, 1, (const char *[]){Y}, &at);
  }
  const char *a2 = A, *b2 = B;
  if (ta && (!(a2 = fresh(im, Y, "a_t")) || (st = emit1(im, "transpose", A, a2, NULL)))) return st ? st : oom(im);
  if (tb && (!(b2 = fresh(im, Y, "b_t")) || (st = emit1(im, "transpose", B, b2, NULL)))) return st ? st : oom(im);
  const char *p = C || alpha != 1 ? fresh(im, Y, "ab") : Y;
  if (!p) return oom(im);
  if ((st = emit(im, "matmul", 2, (const char *[]){a2, b2}, 1, (const char *[]){p}, NULL))) return st;
  if (alpha != 1) {
    const char *q = C ? fresh(im, Y, "alpha_ab") : Y;
    if (!q) return oom(im);
    attrs at = {0};
    at_f(&at, "scale", alpha);
    if ((st = emit1(im, "scale", p, q, &at))) return st;
    p = q;
  }
  if (!C) return PD_OK;
  const char *c2 = C;
  if (beta != 1) {
    if ((st = need_float(im, C))) return st;
    if (!(c2 = fresh(im, Y, "beta_c"))) return oom(im);
    attrs at = {0};
    at_f(&at, "scale", beta);
    if ((st = emit1(im, "scale", C, c2, &at))) return st;
  }
  return emit(im, "broadcast_add", 2, (const char *[]){p, c2}, 1, (const char *[]){Y}, NULL);
}

/* Softmax and LogSoftmax. Before opset 13 the input is read as a matrix
 * [d0 * ... * d(axis-1), the rest] (axis default 1), each row normalised:
 * reshape, normalise the last dim, reshape back. From 13 one axis (default
 * -1) is normalised: transposed to the end and back when it is not last. */
static pd_status map_softmax_like(imp *im, const Onnx__NodeProto *n, const char *type) {
  const char *X = n->input[0], *Y = n->output[0];
  pd_tensor x;
  pd_status st = need_float(im, X);
  if (!st) st = meta(im, X, &x);
  if (st) return st;
  int r = x.ndim;
  int64_t axis = attr_i(n, "axis", im->opset >= 13 ? -1 : 1);
  if (axis < -r || axis >= (r ? r : 1))
    return unsupported(im, "axis %lld is outside the input's %d dims", (long long)axis, r);
  if (axis < 0) axis += r;
  if (r == 0) return unsupported(im, "a rank-0 input");
  if (axis == 0 && relaxed(im, X)) return batch_dep(im, "axis 0 (normalising across the batch)");
  if (axis == r - 1) return emit1(im, type, X, Y, NULL);
  const char *t1 = fresh(im, Y, "in"), *t2 = fresh(im, Y, "norm");
  if (!t1 || !t2) return oom(im);
  if (im->opset >= 13) {
    int64_t perm[PD_MAX_DIMS];
    for (int i = 0; i < r; i++) perm[i] = i;
    perm[axis] = r - 1, perm[r - 1] = axis; /* a swap: its own inverse */
    attrs p1 = {0}, p2 = {0};
    at_ints(&p1, "perm", r, perm);
    at_ints(&p2, "perm", r, perm);
    if ((st = emit1(im, "transpose", X, t1, &p1)) || (st = emit1(im, type, t1, t2, NULL))) {
      pd_buf_free(&p2.b);
      return st;
    }
    return emit1(im, "transpose", t2, Y, &p2);
  }
  /* [outer, inner]: one side may hold the batch -1 */
  int64_t outer = 1, inner = 1;
  bool outer_known = true, inner_known = true;
  for (int i = 0; i < r; i++) {
    bool known = x.dims[i] >= 0;
    if (i < axis)
      known ? (void)(outer *= x.dims[i]) : (void)(outer_known = false);
    else
      known ? (void)(inner *= x.dims[i]) : (void)(inner_known = false);
  }
  if (!outer_known && !inner_known) return unsupported(im, "input shape with unknown dims on both sides of axis");
  int64_t shape2[2] = {outer_known ? outer : -1, outer_known ? -1 : inner};
  attrs s1 = {0}, s2 = {0};
  at_ints(&s1, "shape", 2, shape2);
  at_ints(&s2, "shape", r, x.dims);
  if ((st = emit1(im, "reshape", X, t1, &s1)) || (st = emit1(im, type, t1, t2, NULL))) {
    pd_buf_free(&s2.b);
    return st;
  }
  return emit1(im, "reshape", t2, Y, &s2);
}
static pd_status map_softmax(imp *im, const Onnx__NodeProto *n) { return map_softmax_like(im, n, "softmax"); }
static pd_status map_log_softmax(imp *im, const Onnx__NodeProto *n) { return map_softmax_like(im, n, "log_softmax"); }

/* A convolution or pooling window over 1 or 2 spatial dims, in 2-D terms:
 * a 1-D window runs as a 2-D one of height 1 over X reshaped [N, C, 1, L]. */
typedef struct window {
  int ns; /* spatial dims: 1 or 2 */
  int64_t k[2], stride[2], dil[2], pad[2];
} window;

/* A list attribute with one value per spatial dim (absent: `def`). */
static pd_status spatial_ints(imp *im, const Onnx__NodeProto *n, const char *name, int64_t def, int64_t dummy, int ns,
                              int64_t *v) {
  int c;
  const int64_t *p = attr_ints(n, name, &c);
  if (c != 0 && c != ns) return unsupported(im, "%s with %d values for %d spatial dims", name, c, ns);
  v[0] = ns == 1 ? dummy : c ? p[0] : def;
  v[1] = c ? p[c - 1] : def;
  return PD_OK;
}

/* Padding: explicit pads (symmetric only), or auto_pad VALID / SAME_UPPER /
 * SAME_LOWER (which need the input's size and come out symmetric only when
 * the total is even). */
static pd_status window_pads(imp *im, const Onnx__NodeProto *n, const pd_tensor *x, window *w) {
  w->pad[0] = w->pad[1] = 0;
  if (attr_s_is(n, "auto_pad", "SAME_UPPER", "NOTSET") || attr_s_is(n, "auto_pad", "SAME_LOWER", "NOTSET")) {
    for (int i = 2 - w->ns; i < 2; i++) {
      int64_t in = x->dims[x->ndim - 2 + i];
      if (in < 0) return unsupported(im, "auto_pad SAME with an unknown spatial size");
      int64_t out = (in + w->stride[i] - 1) / w->stride[i];
      int64_t total = (out - 1) * w->stride[i] + (w->k[i] - 1) * w->dil[i] + 1 - in;
      if (total < 0) total = 0;
      if (total % 2)
        return unsupported(im, "auto_pad SAME needs asymmetric padding here (%lld in all)", (long long)total);
      w->pad[i] = total / 2;
    }
    return PD_OK;
  }
  if (attr_s_is(n, "auto_pad", "VALID", "NOTSET")) return PD_OK;
  if (!attr_s_is(n, "auto_pad", "NOTSET", "NOTSET")) return unsupported(im, "an unknown auto_pad");
  int np;
  const int64_t *p = attr_ints(n, "pads", &np);
  if (np == 0) return PD_OK;
  if (np != 2 * w->ns) return unsupported(im, "pads with %d values for %d spatial dims", np, w->ns);
  for (int i = 0; i < w->ns; i++)
    if (p[i] != p[w->ns + i])
      return unsupported(im, "asymmetric pads (begin %lld, end %lld)", (long long)p[i], (long long)p[w->ns + i]);
  w->pad[1] = p[w->ns - 1];
  if (w->ns == 2) w->pad[0] = p[0];
  return PD_OK;
}

/* X of rank 3 or 4 (1 or 2 spatial dims), float. */
static pd_status window_input(imp *im, const char *X, pd_tensor *x, window *w) {
  pd_status st = need_float(im, X);
  if (!st) st = meta(im, X, x);
  if (!st && x->ndim != 3 && x->ndim != 4)
    return unsupported(im, "a %d-D input; only 1-D [N, C, L] and 2-D [N, C, H, W] windows are supported", x->ndim);
  w->ns = x->ndim - 2;
  return st;
}

/* Emits the 2-D op `type` for a 1-D or 2-D window: a 1-D one between
 * reshapes to [N, C, 1, L] and back. ins[0] is X; with `w_in`, ins[1] is a
 * [M, C/g, k] weight reshaped too. */
static pd_status emit_window(imp *im, const window *w, const char *type, int nin, const char **ins, bool w_in,
                             const char *Y, attrs *at) {
  if (w->ns == 2) return emit(im, type, nin, ins, 1, (const char *[]){Y}, at);
  const char *x4 = fresh(im, Y, "in2d"), *y4 = fresh(im, Y, "out2d"), *w4 = w_in ? fresh(im, Y, "w2d") : NULL;
  if (!x4 || !y4 || (w_in && !w4)) {
    pd_buf_free(&at->b);
    return oom(im);
  }
  attrs s1 = {0}, s2 = {0}, s3 = {0};
  at_ints(&s1, "shape", 4, (int64_t[]){0, 0, 1, -1});
  at_ints(&s2, "shape", 4, (int64_t[]){0, 0, 1, -1});
  at_ints(&s3, "shape", 3, (int64_t[]){0, 0, -1});
  pd_status st = emit1(im, "reshape", ins[0], x4, &s1);
  if (!st && w_in)
    st = emit1(im, "reshape", ins[1], w4, &s2);
  else
    pd_buf_free(&s2.b);
  const char *in4[3] = {x4, w_in ? w4 : nin > 1 ? ins[1] : "", nin > 2 ? ins[2] : ""};
  if (!st)
    st = emit(im, type, nin, in4, 1, (const char *[]){y4}, at);
  else
    pd_buf_free(&at->b);
  if (st) pd_buf_free(&s3.b);
  return st ? st : emit1(im, "reshape", y4, Y, &s3);
}

static pd_status map_conv(imp *im, const Onnx__NodeProto *n) {
  const char *X = in_at(n, 0), *W = in_at(n, 1), *B = in_at(n, 2);
  pd_tensor x, wt;
  window w;
  pd_status st = window_input(im, X, &x, &w);
  if (!st) st = meta(im, W, &wt);
  if (st) return st;
  if (wt.ndim != x.ndim || wt.dims[0] < 0 || wt.dims[wt.ndim - 1] < 0 || wt.dims[2] < 0)
    return unsupported(im, "weights of rank %d with unknown sizes; [M, C/group, k...] is needed", wt.ndim);
  int64_t ks[2];
  w.k[0] = w.ns == 2 ? wt.dims[2] : 1, w.k[1] = wt.dims[wt.ndim - 1];
  if ((st = spatial_ints(im, n, "strides", 1, 1, w.ns, w.stride)) ||
      (st = spatial_ints(im, n, "dilations", 1, 1, w.ns, w.dil)) ||
      (st = spatial_ints(im, n, "kernel_shape", 0, 1, w.ns, ks)) || (st = window_pads(im, n, &x, &w)))
    return st;
  if (attr(n, "kernel_shape") && (ks[0] != w.k[0] || ks[1] != w.k[1]))
    return unsupported(im, "kernel_shape differs from the weights'");
  attrs at = {0};
  at_i(&at, "num_filters", wt.dims[0]);
  at_ints(&at, "kernel_size", 2, w.k);
  at_ints(&at, "strides", 2, w.stride);
  at_ints(&at, "paddings", 2, w.pad);
  at_ints(&at, "dilations", 2, w.dil);
  at_i(&at, "groups", attr_i(n, "group", 1));
  return emit_window(im, &w, "conv2d", 3, (const char *[]){X, W, B ? B : ""}, true, n->output[0], &at);
}

static pd_status map_pool(imp *im, const Onnx__NodeProto *n, bool max) {
  const char *X = in_at(n, 0);
  pd_tensor x;
  window w;
  pd_status st = window_input(im, X, &x, &w);
  if (st) return st;
  if (out_at(n, 1)) return unsupported(im, "the Indices output");
  if (!attr(n, "kernel_shape")) return unsupported(im, "no kernel_shape");
  if ((st = spatial_ints(im, n, "kernel_shape", 0, 1, w.ns, w.k)) ||
      (st = spatial_ints(im, n, "strides", 1, 1, w.ns, w.stride)) ||
      (st = spatial_ints(im, n, "dilations", 1, 1, w.ns, w.dil)))
    return st;
  if (w.dil[0] != 1 || w.dil[1] != 1) return unsupported(im, "dilations other than 1");
  if ((st = window_pads(im, n, &x, &w))) return st;
  attrs at = {0};
  at_s(&at, "pooling_type", max ? "max" : "avg");
  at_ints(&at, "ksize", 2, w.k);
  at_ints(&at, "strides", 2, w.stride);
  at_ints(&at, "paddings", 2, w.pad);
  at_b(&at, "ceil_mode", attr_i(n, "ceil_mode", 0) != 0);
  if (!max) at_b(&at, "exclusive", attr_i(n, "count_include_pad", 0) == 0);
  return emit_window(im, &w, "pool2d", 1, (const char *[]){X}, false, n->output[0], &at);
}
static pd_status map_maxpool(imp *im, const Onnx__NodeProto *n) { return map_pool(im, n, true); }
static pd_status map_avgpool(imp *im, const Onnx__NodeProto *n) { return map_pool(im, n, false); }

static pd_status map_global_pool(imp *im, const Onnx__NodeProto *n, bool max) {
  pd_tensor x;
  pd_status st = need_float(im, n->input[0]);
  if (!st) st = meta(im, n->input[0], &x);
  if (st) return st;
  if (x.ndim != 4) return unsupported(im, "a %d-D input; only 2-D images [N, C, H, W] are supported", x.ndim);
  attrs at = {0};
  at_s(&at, "pooling_type", max ? "max" : "avg");
  at_b(&at, "global_pooling", true);
  return emit1(im, "pool2d", n->input[0], n->output[0], &at);
}
static pd_status map_global_avgpool(imp *im, const Onnx__NodeProto *n) { return map_global_pool(im, n, false); }
static pd_status map_global_maxpool(imp *im, const Onnx__NodeProto *n) { return map_global_pool(im, n, true); }

/* Sum: from opset 8 with NumPy broadcasting (before, of equal shapes), a
 * chain of broadcast_add; one input is its identity. */
static pd_status map_sum(imp *im, const Onnx__NodeProto *n) {
  const char *acc = n->input[0];
  pd_status st = PD_OK;
  if (n->n_input == 1) return emit1(im, "identity", acc, n->output[0], NULL);
  for (size_t i = 1; i < n->n_input && !st; i++) {
    const char *next = i + 1 == n->n_input ? n->output[0] : fresh(im, n->output[0], "partial");
    if (!next) return oom(im);
    st = map_binary_names(im, n, "broadcast_add", acc, n->input[i], next);
    acc = next;
  }
  return st;
}

/* Inference only: the running statistics as state, scale and bias as
 * parameters (all four constants). */
static pd_status map_batchnorm(imp *im, const Onnx__NodeProto *n) {
  if (attr_i(n, "training_mode", 0) || out_at(n, 1) || out_at(n, 2))
    return unsupported(im, "training mode (batch statistics and running-statistic outputs)");
  if (attr(n, "spatial") && attr_i(n, "spatial", 1) != 1) return unsupported(im, "spatial = 0");
  if (im->opset < 7 && !attr_i(n, "is_test", 0)) return unsupported(im, "is_test = 0 (training mode)");
  pd_tensor x;
  pd_status st = need_float(im, n->input[0]);
  if (!st) st = meta(im, n->input[0], &x);
  if (!st && x.ndim < 2) return unsupported(im, "an input of rank %d", x.ndim);
  konst *k;
  static const char *const what[] = {"scale", "B", "input_mean", "input_var"};
  for (int i = 1; i <= 4 && !st; i++) /* a weight graph input is declared already (find_weights) */
    st = !in_at(n, (size_t)i)                      ? unsupported(im, "a missing input")
         : smap_get(&im->weights, n->input[i]) > 0 ? PD_OK
                                                   : need_const(im, n->input[i], what[i - 1], &k);
  if (!st) st = use_as(im, n->input[3], "STATE");
  if (!st) st = use_as(im, n->input[4], "STATE");
  if (st) return st;
  attrs at = {0};
  at_f(&at, "epsilon", attr_f(n, "epsilon", 1e-5));
  at_f(&at, "momentum", attr_f(n, "momentum", 0.9));
  return emit(im, "batch_norm", 5, (const char *[]){n->input[0], n->input[1], n->input[2], n->input[3], n->input[4]}, 3,
              (const char *[]){n->output[0], n->input[3], n->input[4]}, &at);
}

/* Inference: Y = X. Before opset 12 the ratio is an attribute; from 12 it
 * and training_mode are optional constant inputs. */
static pd_status map_dropout(imp *im, const Onnx__NodeProto *n) {
  if (out_at(n, 1)) return unsupported(im, "the mask output");
  if (im->opset < 7 && !attr_i(n, "is_test", 0)) return unsupported(im, "is_test = 0 (training mode)");
  double ratio = attr_f(n, "ratio", 0.5);
  konst *k;
  pd_status st;
  if (im->opset >= 12 && in_at(n, 1)) { /* a ratio given at run time does not matter in inference */
    if (!(k = find_const(im, n->input[1])))
      ratio = 0;
    else if (pd_tensor_numel(&k->t) != 1)
      return unsupported(im, "a ratio that is not a scalar");
    else
      ratio = pd_tensor_get(&k->t, 0);
  }
  if (im->opset >= 12 && in_at(n, 2)) {
    if ((st = need_const(im, n->input[2], "training_mode", &k))) return st;
    if (pd_tensor_numel(&k->t) != 1 || pd_tensor_get(&k->t, 0) != 0) return unsupported(im, "training mode");
  }
  if ((st = need_float(im, n->input[0]))) return st;
  if (!(ratio >= 0 && ratio < 1)) return emit1(im, "identity", n->input[0], n->output[0], NULL);
  const char *mask = fresh(im, n->output[0], "mask");
  if (!mask) return oom(im);
  attrs at = {0};
  at_f(&at, "dropout_prob", ratio);
  return emit(im, "dropout", 1, (const char *[]){n->input[0]}, 2, (const char *[]){n->output[0], mask}, &at);
}

static pd_status map_concat(imp *im, const Onnx__NodeProto *n) {
  if (!attr(n, "axis")) return unsupported(im, "no axis");
  pd_tensor x;
  pd_status st = meta(im, n->input[0], &x);
  if (st) return st;
  int64_t axis = attr_i(n, "axis", 0);
  if ((axis == 0 || axis == -x.ndim) && relaxed(im, n->input[0])) return batch_dep(im, "axis 0 (joining batches)");
  attrs at = {0};
  at_i(&at, "axis", attr_i(n, "axis", 0));
  return emit(im, "concat", (int)n->n_input, (const char *const *)n->input, 1, (const char *[]){n->output[0]}, &at);
}

static pd_status map_flatten(imp *im, const Onnx__NodeProto *n) {
  pd_tensor x;
  pd_status st = meta(im, n->input[0], &x);
  if (st) return st;
  int64_t axis = attr_i(n, "axis", 1);
  if (axis < -x.ndim || axis > x.ndim)
    return unsupported(im, "axis %lld outside [-%d, %d]", (long long)axis, x.ndim, x.ndim);
  if ((axis < 0 ? axis + x.ndim : axis) != 1 && relaxed(im, n->input[0]))
    return batch_dep(im, "axis %lld (rows that are not the batch's)", (long long)axis);
  attrs at = {0};
  at_i(&at, "axis", axis < 0 ? axis + x.ndim : axis);
  return emit1(im, "flatten", n->input[0], n->output[0], &at);
}

static pd_status map_reshape(imp *im, const Onnx__NodeProto *n) {
  konst *k;
  pd_status st = need_const(im, n->input[1], "shape", &k);
  if (st) return st;
  int64_t ns = pd_tensor_numel(&k->t);
  if (k->t.dtype != PD_I64 || k->t.ndim != 1 || ns > PD_MAX_DIMS)
    return unsupported(im, "a shape that is not int64 [r <= 8]");
  const int64_t *s0 = PD_DATA(&k->t, int64_t);
  int64_t s[PD_MAX_DIMS];
  bool allowzero = im->opset >= 14 && attr_i(n, "allowzero", 0);
  pd_tensor x;
  if ((st = meta(im, n->input[0], &x))) return st;
  bool batched = x.ndim > 0 && x.dims[0] == -1;
  int infer = 0;
  for (int64_t i = 0; i < ns; i++) infer += s0[i] == -1;
  for (int64_t i = 0; i < ns; i++) {
    s[i] = s0[i];
    if (s0[i] == BATCH_MARK) { /* the input's batch: 0 (copy) in place, else the one inferred dim */
      if (i == 0 && batched)
        s[i] = 0;
      else if (!infer++)
        s[i] = -1;
      else
        return batch_dep(im, "a target shape that needs the batch size, known only at run time, at entry %lld",
                         (long long)i);
    } else if (s0[i] < -1) {
      return unsupported(im, "a shape entry %lld", (long long)s0[i]);
    }
    if (s0[i] == 0 && allowzero) return unsupported(im, "allowzero = 1 with a 0 in the shape (a zero-sized dim)");
  }
  if (im->relax && batched && ns > 0 && s0[0] != BATCH_MARK && s0[0] != 0) {
    /* torch writes x.view(x.size(0), -1) of a fixed batch as [B, -1]: the
     * batch, when the rest keeps each row's size */
    int64_t row = 1, rest = 1;
    bool free_dim = false;
    for (int i = 1; i < x.ndim; i++) row *= x.dims[i];
    for (int64_t i = 1; i < ns; i++)
      free_dim |= s[i] == -1, rest *= s[i] == -1 ? 1 : s[i] ? s[i] : i < x.ndim ? x.dims[i] : 0;
    if ((s0[0] != im->out->batch_from && s0[0] != -1) || (s0[0] == -1 && free_dim) ||
        !(free_dim ? rest > 0 && row % rest == 0 : rest == row))
      return batch_dep(im, "a constant target shape whose first entry %lld is not the batch", (long long)s0[0]);
    s[0] = 0;
  }
  attrs at = {0};
  at_ints(&at, "shape", (int)ns, s);
  return emit1(im, "reshape", n->input[0], n->output[0], &at);
}

static pd_status map_transpose(imp *im, const Onnx__NodeProto *n) {
  int np;
  const int64_t *p = attr_ints(n, "perm", &np);
  if (relaxed(im, n->input[0]) && (np ? p[0] != 0 : true))
    return batch_dep(im, "a perm that moves the batch from the first dim");
  attrs at = {0};
  if (np) at_ints(&at, "perm", np, p);
  return emit1(im, "transpose", n->input[0], n->output[0], &at);
}

static pd_status map_cast(imp *im, const Onnx__NodeProto *n) {
  int to = dtype_of((int32_t)attr_i(n, "to", 0));
  if (attr_i(n, "to", 0) == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) to = -1; /* nonzero -> 1: not uint8's cast */
  if (to < 0) return unsupported(im, "a cast to %s", onnx_type_name((int32_t)attr_i(n, "to", 0)));
  pd_tensor x;
  pd_status st = meta(im, n->input[0], &x);
  if (st) return st;
  attrs at = {0};
  at_s(&at, "dtype", pd_dtype_name((pd_dtype)to));
  return emit1(im, "cast", n->input[0], n->output[0], &at);
}

/* A Constant's value becomes a constant of the importer (state once used). */
static pd_status map_constant(imp *im, const Onnx__NodeProto *n) {
  const Onnx__AttributeProto *a = n->n_attribute == 1 ? n->attribute[0] : NULL;
  pd_tensor t;
  pd_status st = PD_OK;
  char what[512];
  snprintf(what, sizeof what, "%s: Constant \"%s\"", im->file, n->output[0]);
  if (!a) return unsupported(im, "not exactly one attribute");
  if (strcmp(a->name, "value") == 0 && a->t) {
    if (dtype_of(a->t->data_type) < 0) return unsupported(im, "a value of type %s", onnx_type_name(a->t->data_type));
    st = pd_onnx_tensor(a->t, what, &t, im->err);
  } else if (strcmp(a->name, "value_float") == 0 || strcmp(a->name, "value_int") == 0 ||
             strcmp(a->name, "value_floats") == 0 || strcmp(a->name, "value_ints") == 0) {
    bool is_f = a->name[6] == 'f', list = a->name[strlen(a->name) - 1] == 's';
    int64_t cnt = list ? (int64_t)(is_f ? a->n_floats : a->n_ints) : 1;
    pd_tensor_init(&t, is_f ? PD_F32 : PD_I64);
    st = pd_tensor_set_dims(&t, list ? 1 : 0, &cnt, im->err);
    if (!st) st = pd_tensor_alloc(&t, im->err);
    for (int64_t i = 0; i < cnt && !st; i++)
      pd_tensor_set(&t, i, is_f ? (list ? a->floats[i] : a->f) : (double)(list ? a->ints[i] : a->i));
    if (!is_f && !st) /* exact int64 (not through a double) */
      for (int64_t i = 0; i < cnt; i++) PD_DATA(&t, int64_t)[i] = list ? a->ints[i] : a->i;
  } else {
    return unsupported(im, "a %s value", a->name);
  }
  if (st) return st;
  return add_const(im, n->output[0], &t, false);
}

/* ---- recurrent nodes and Gather ------------------------------------------------------- */

/* A new tensor of t's dtype and dims[0..ndim). */
static pd_status new_tensor(imp *im, pd_tensor *t, pd_dtype dt, int ndim, const int64_t *dims) {
  pd_tensor_init(t, dt);
  if (pd_tensor_set_dims(t, ndim, dims, im->err) || pd_tensor_alloc(t, im->err)) return PD_ERR_RUNTIME;
  return PD_OK;
}

/* Replaces constant k's value by t (in place when only this node reads it
 * and it is not declared yet, keeping its name; else as a new constant
 * "<base>.<what>", a parameter like the original): its name in *name. */
static pd_status replace_const(imp *im, konst *k, pd_tensor *t, const char *base, const char *what, const char **name) {
  if (!k->declared && used_once(im, k->name)) {
    pd_tensor_release(&k->t);
    k->t = *t;
    *name = k->name;
    return PD_OK;
  }
  const char *fn = fresh(im, base, what);
  if (!fn) {
    pd_tensor_release(t);
    return oom(im);
  }
  *name = fn;
  pd_status st = add_const(im, fn, t, k->is_initializer);
  if (st) pd_tensor_release(t);
  return st;
}

/* ONNX's gate blocks to ours: block j of ours is ONNX's block perm[j]
 * (LSTM i o f c -> i f c o, GRU z r h -> r z h; docs/netdesc.md). The
 * tensor is [outer, G blocks of `blk` values]. */
static pd_status permute_gates(imp *im, konst *k, int G, const int *perm, int64_t outer, int64_t blk, const char *base,
                               const char *what, const char **name) {
  pd_tensor t;
  if (new_tensor(im, &t, k->t.dtype, k->t.ndim, k->t.dims)) return PD_ERR_RUNTIME;
  size_t es = pd_dtype_size(k->t.dtype), row = (size_t)blk * es;
  const char *src = pd_tensor_data(&k->t);
  char *dst = pd_tensor_data(&t);
  for (int64_t o = 0; o < outer; o++)
    for (int j = 0; j < G; j++)
      memcpy(dst + ((size_t)o * (size_t)G + (size_t)j) * row, src + ((size_t)o * (size_t)G + (size_t)perm[j]) * row,
             row);
  return replace_const(im, k, &t, base, what, name);
}

static bool dims_are(const pd_tensor *t, int ndim, const int64_t *want) {
  if (t->ndim != ndim) return false;
  for (int i = 0; i < ndim; i++)
    if (t->dims[i] != want[i]) return false;
  return true;
}

/* Whether string attribute `name` of n is `want`, ignoring case (ONNX's
 * activation names are spelled Tanh, some exporters write tanh). */
static bool str_is(const ProtobufCBinaryData *s, const char *want) {
  return s->len == strlen(want) && strncasecmp((const char *)s->data, want, s->len) == 0;
}

/* LSTM, GRU and RNN: one layer, our lstm / gru / rnn with num_layers 1.
 * Layout 0 ([seq, batch, ...]) is transposed around the op, ours being
 * batch-major; Y comes back from [batch, seq, dirs*H] by reshape (and
 * transpose for layout 0). W, R, B must be constants: their gate blocks
 * are permuted to our order at import, exactly. */
static pd_status map_recurrent(imp *im, const Onnx__NodeProto *n, const char *type, int G, const int *perm,
                               const char *const *acts) {
  bool lstm = G == 4;
  const char *X = in_at(n, 0), *W = in_at(n, 1), *R = in_at(n, 2), *B = in_at(n, 3), *L = in_at(n, 4),
             *H0 = in_at(n, 5), *C0 = lstm ? in_at(n, 6) : NULL, *P = lstm ? in_at(n, 7) : NULL;
  const char *Y = out_at(n, 0), *YH = out_at(n, 1), *YC = lstm ? out_at(n, 2) : NULL;
  const char *base = Y ? Y : YH ? YH : YC ? YC : n->output[0];
  int64_t layout = im->opset >= 14 ? attr_i(n, "layout", 0) : 0;
  if (layout != 0 && layout != 1) return unsupported(im, "layout %lld (0 and 1 are defined)", (long long)layout);
  if (layout == 0 && relaxed(im, n->input[0])) return batch_dep(im, "layout 0 (the sequence first, not the batch)");
  const char *dir = "forward";
  int dirs = 1;
  const Onnx__AttributeProto *a = attr(n, "direction");
  if (a) {
    if (str_is(&a->s, "bidirectional"))
      dir = "bidirectional", dirs = 2;
    else if (str_is(&a->s, "reverse"))
      dir = "reverse";
    else if (!str_is(&a->s, "forward"))
      return unsupported(im, "attribute direction \"%.*s\"", (int)a->s.len, (const char *)a->s.data);
  }
  if (attr(n, "activation_alpha") || attr(n, "activation_beta"))
    return unsupported(im, "attribute activation_alpha/activation_beta (only the default activations are supported)");
  const char *act = "tanh";
  if ((a = attr(n, "activations"))) {
    int per = lstm ? 3 : G == 3 ? 2 : 1;
    if (a->n_strings != (size_t)(per * dirs))
      return unsupported(im, "attribute activations with %zu names (%d per direction expected)", a->n_strings, per);
    for (size_t i = 0; i < a->n_strings; i++) {
      const ProtobufCBinaryData *s = &a->strings[i];
      bool ok = str_is(s, acts[i % (size_t)per]);
      if (G == 1 && str_is(s, "Relu") && (i == 0 || strcmp(act, "relu") == 0)) ok = true, act = "relu";
      if (G == 1 && i > 0 && !str_is(s, act)) ok = false; /* one activation for both directions */
      if (!ok)
        return unsupported(im, "attribute activations: \"%.*s\" (only the defaults%s are supported)", (int)s->len,
                           (const char *)s->data, G == 1 ? ", Tanh or Relu," : "");
    }
  }
  if (lstm && attr_i(n, "input_forget", 0) != 0) return unsupported(im, "attribute input_forget = 1");
  double clip = attr_f(n, "clip", 0);
  if (attr(n, "clip") && !(clip > 0)) return unsupported(im, "attribute clip %g (a positive bound is supported)", clip);
  int64_t lbr = attr_i(n, "linear_before_reset", 0);
  if (lbr != 0 && lbr != 1) return unsupported(im, "attribute linear_before_reset %lld", (long long)lbr);
  pd_tensor x;
  pd_status st = need_float(im, X);
  if (!st) st = meta(im, X, &x);
  if (st) return st;
  if (x.ndim != 3) return unsupported(im, "X of rank %d; [seq, batch, input] or [batch, seq, input] is needed", x.ndim);
  konst *kw, *kr, *kb = NULL, *kp = NULL;
  if ((st = need_const(im, W, "W", &kw)) || (st = need_const(im, R, "R", &kr)) ||
      (B && (st = need_const(im, B, "B", &kb))) || (P && (st = need_const(im, P, "P", &kp))))
    return st;
  /* hidden_size is optional in ONNX: R [dirs, G*H, H] gives it */
  int64_t H = attr_i(n, "hidden_size", kr->t.ndim == 3 ? kr->t.dims[2] : 0);
  int64_t in = x.dims[2], GH = (int64_t)G * H;
  if (!dims_are(&kw->t, 3, (int64_t[]){dirs, GH, in}) || !dims_are(&kr->t, 3, (int64_t[]){dirs, GH, H}) ||
      (kb && !dims_are(&kb->t, 2, (int64_t[]){dirs, 2 * GH})) || (kp && !dims_are(&kp->t, 2, (int64_t[]){dirs, 3 * H})))
    return pd_errorf(im->err, PD_ERR_INPUT,
                     "%s: node #%d (%s): W, R, B or P does not have the shape that X, hidden_size %lld and %d "
                     "direction(s) give ([%d, %lld, %lld], [%d, %lld, %lld], [%d, %lld], [%d, %lld])",
                     im->file, im->node_index, n->op_type, (long long)H, dirs, dirs, (long long)GH, (long long)in, dirs,
                     (long long)GH, (long long)H, dirs, (long long)(2 * GH), dirs, (long long)(3 * H));
  const konst *ks[] = {kw, kr, kb, kp};
  for (int i = 0; i < 4; i++)
    if (ks[i] && ks[i]->t.dtype != x.dtype)
      return unsupported(im, "\"%s\" is %s and X %s", ks[i]->name, pd_dtype_name(ks[i]->t.dtype),
                         pd_dtype_name(x.dtype));
  if (G > 1) {
    if ((st = permute_gates(im, kw, G, perm, dirs, H * in, base, "w", &W)) ||
        (st = permute_gates(im, kr, G, perm, dirs, H * H, base, "r", &R)) ||
        (kb && (st = permute_gates(im, kb, G, perm, 2 * dirs, H, base, "b", &B))))
      return st;
  }
  /* inputs: X batch-major, lengths int64, states [dirs, batch, H] */
  const char *ins[8] = {X, W, R, B ? B : "", "", "", "", P ? P : ""};
  attrs t1 = {0};
  if (layout == 0) {
    if (!(ins[0] = fresh(im, base, "x_bt"))) return oom(im);
    at_ints(&t1, "perm", 3, (int64_t[]){1, 0, 2});
    if ((st = emit1(im, "transpose", X, ins[0], &t1))) return st;
  }
  if (L) {
    pd_tensor l;
    if ((st = meta(im, L, &l))) return st;
    if (l.dtype != PD_I32 && l.dtype != PD_I64)
      return unsupported(im, "sequence_lens of dtype %s (int32 is ONNX's)", pd_dtype_name(l.dtype));
    ins[4] = L;
    if (l.dtype == PD_I32) {
      attrs c = {0};
      at_s(&c, "dtype", "int64");
      if (!(ins[4] = fresh(im, base, "lengths")) || (st = emit1(im, "cast", L, ins[4], &c))) return st ? st : oom(im);
    }
  }
  const char *states[2] = {H0, C0};
  for (int i = 0; i < 2; i++) {
    if (!states[i]) continue;
    ins[5 + i] = states[i];
    if (layout == 1) { /* [batch, dirs, H] -> ours [dirs, batch, H] */
      attrs p = {0};
      at_ints(&p, "perm", 3, (int64_t[]){1, 0, 2});
      if (!(ins[5 + i] = fresh(im, base, i ? "c0" : "h0")) || (st = emit1(im, "transpose", states[i], ins[5 + i], &p)))
        return st ? st : oom(im);
    }
  }
  int nin = lstm ? 8 : 6;
  while (!ins[nin - 1][0]) nin--;
  /* outputs: ours Y [batch, seq, dirs*H], HT and CT [dirs, batch, H] */
  const char *outs[3] = {fresh(im, base, "y_bt"), "", ""};
  const char *finals[2] = {YH, YC};
  for (int i = 0; i < 2; i++)
    if (finals[i]) outs[1 + i] = layout == 1 ? fresh(im, base, i ? "ct" : "ht") : finals[i];
  if (!outs[0] || !outs[1] || !outs[2]) return oom(im);
  int nout = lstm ? 3 : 2;
  while (!outs[nout - 1][0]) nout--;
  attrs at = {0};
  at_i(&at, "hidden_size", H);
  at_s(&at, "direction", dir);
  if (clip > 0) at_f(&at, "clip", clip);
  if (G == 1) at_s(&at, "activation", act);
  if (G == 3) at_i(&at, "linear_before_reset", lbr);
  if ((st = emit(im, type, nin, ins, nout, outs, &at))) return st;
  for (int i = 0; i < 2 && layout == 1; i++) {
    if (!finals[i]) continue;
    attrs p = {0};
    at_ints(&p, "perm", 3, (int64_t[]){1, 0, 2});
    if ((st = emit1(im, "transpose", outs[1 + i], finals[i], &p))) return st;
  }
  if (!Y) return PD_OK;
  /* [batch, seq, dirs*H] -> [batch, seq, dirs, H] (layout 1) -> [seq, dirs, batch, H] (layout 0) */
  const char *y4 = layout == 1 ? Y : fresh(im, base, "y4");
  if (!y4) return oom(im);
  attrs s = {0};
  at_ints(&s, "shape", 4, (int64_t[]){0, 0, dirs, H});
  if ((st = emit1(im, "reshape", outs[0], y4, &s)) || layout == 1) return st;
  attrs p = {0};
  at_ints(&p, "perm", 4, (int64_t[]){1, 2, 0, 3});
  return emit1(im, "transpose", y4, Y, &p);
}

static const char *const lstm_acts[] = {"Sigmoid", "Tanh", "Tanh"};
static const char *const gru_acts[] = {"Sigmoid", "Tanh"};
static const char *const rnn_acts[] = {"Tanh"};
static pd_status map_lstm(imp *im, const Onnx__NodeProto *n) {
  return map_recurrent(im, n, "lstm", 4, (const int[]){0, 2, 3, 1}, lstm_acts);
}
static pd_status map_gru(imp *im, const Onnx__NodeProto *n) {
  return map_recurrent(im, n, "gru", 3, (const int[]){1, 0, 2}, gru_acts);
}
static pd_status map_rnn(imp *im, const Onnx__NodeProto *n) {
  return map_recurrent(im, n, "rnn", 1, (const int[]){0}, rnn_acts);
}

/* A constant int64 [1] holding v, as state: its name. */
static const char *const_i64(imp *im, const char *base, const char *what, int64_t v) {
  const char *name = fresh(im, base, what);
  pd_tensor t;
  if (!name || new_tensor(im, &t, PD_I64, 1, (int64_t[]){1})) return NULL;
  PD_DATA(&t, int64_t)[0] = v;
  if (add_const(im, name, &t, false)) {
    pd_tensor_release(&t);
    return NULL;
  }
  return name;
}

/* Gather of a constant float table: our embedding, the table [V, D] being
 * the data with `axis` moved first and the other dims flattened (as is for
 * axis 0 of a matrix), its output reshaped and transposed back. Indices
 * may be negative (counted from the end): constant ones are normalised at
 * import, data ones by idx - V * ((idx - (M-1)) / M) with M = 2^62 (the
 * quotient is -1 for a negative index, 0 else), so an index outside
 * [-V, V) still stops the run as embedding's out of range. */
static pd_status map_gather(imp *im, const Onnx__NodeProto *n) {
  const char *D = n->input[0], *I = n->input[1], *Y = n->output[0];
  konst *kd;
  pd_status st = need_const(im, D, "data", &kd);
  if (st) return st;
  if (!pd_dtype_is_float(kd->t.dtype))
    return unsupported(im, "data of dtype %s (a float or double table is supported)", pd_dtype_name(kd->t.dtype));
  int r = kd->t.ndim;
  int64_t axis = attr_i(n, "axis", 0);
  if (r < 1 || axis < -r || axis >= r) return unsupported(im, "axis %lld of data of rank %d", (long long)axis, r);
  if (axis < 0) axis += r;
  int64_t V = kd->t.dims[axis], rest = pd_tensor_numel(&kd->t) / (V ? V : 1), other[PD_MAX_DIMS];
  int no = 0;
  for (int i = 0; i < r; i++)
    if (i != axis) other[no++] = kd->t.dims[i];
  if (V <= 0 || rest <= 0) return unsupported(im, "an empty table");
  const char *table = D;
  if (r != 2 || axis != 0) { /* [V, rest]: the axis first */
    pd_tensor t;
    if (new_tensor(im, &t, kd->t.dtype, 2, (int64_t[]){V, rest})) return PD_ERR_RUNTIME;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= kd->t.dims[i];
    for (int i = (int)axis + 1; i < r; i++) inner *= kd->t.dims[i];
    size_t es = pd_dtype_size(kd->t.dtype);
    const char *src = pd_tensor_data(&kd->t);
    char *dst = pd_tensor_data(&t);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t v = 0; v < V; v++)
        memcpy(dst + ((size_t)v * (size_t)rest + (size_t)(o * inner)) * es,
               src + ((size_t)(o * V + v) * (size_t)inner) * es, (size_t)inner * es);
    if ((st = replace_const(im, kd, &t, Y, "table", &table))) return st;
  }
  pd_tensor it;
  if ((st = meta(im, I, &it))) return st;
  if (it.dtype != PD_I32 && it.dtype != PD_I64)
    return unsupported(im, "indices of dtype %s (int32, int64 are)", pd_dtype_name(it.dtype));
  int q = it.ndim;
  const char *ids = I;
  konst *ki = find_const(im, I);
  if (ki && !ki->declared) { /* normalised now, each checked */
    int64_t cnt = pd_tensor_numel(&ki->t), one = 1;
    pd_tensor t;
    if (new_tensor(im, &t, PD_I64, q ? q : 1, q ? ki->t.dims : &one)) return PD_ERR_RUNTIME;
    for (int64_t i = 0; i < cnt; i++) {
      int64_t v = (int64_t)pd_tensor_get(&ki->t, i);
      if (ki->t.dtype == PD_I64) v = PD_DATA(&ki->t, int64_t)[i];
      if (v < -V || v >= V) {
        pd_tensor_release(&t);
        return pd_errorf(im->err, PD_ERR_INPUT, "%s: node #%d (Gather): index #%lld is %lld, outside [-%lld, %lld)",
                         im->file, im->node_index, (long long)i, (long long)v, (long long)V, (long long)V);
      }
      PD_DATA(&t, int64_t)[i] = v < 0 ? v + V : v;
    }
    if (!(ids = fresh(im, Y, "ids"))) return oom(im);
    if ((st = add_const(im, ids, &t, false))) {
      pd_tensor_release(&t);
      return st;
    }
  } else {
    if (it.dtype == PD_I32) {
      attrs c = {0};
      at_s(&c, "dtype", "int64");
      if (!(ids = fresh(im, Y, "ids64")) || (st = emit1(im, "cast", I, ids, &c))) return st ? st : oom(im);
    }
    const int64_t M = (int64_t)1 << 62;
    const char *m1 = const_i64(im, Y, "m1", M - 1), *m = const_i64(im, Y, "m", M), *vv = const_i64(im, Y, "v", V);
    const char *t1 = fresh(im, Y, "shift"), *t2 = fresh(im, Y, "neg"), *t3 = fresh(im, Y, "wrap"),
               *t4 = fresh(im, Y, "ids");
    if (!m1 || !m || !vv || !t1 || !t2 || !t3 || !t4) return oom(im);
    if ((st = emit(im, "broadcast_sub", 2, (const char *[]){ids, m1}, 1, (const char *[]){t1}, NULL)) ||
        (st = emit(im, "broadcast_div", 2, (const char *[]){t1, m}, 1, (const char *[]){t2}, NULL)) ||
        (st = emit(im, "broadcast_mul", 2, (const char *[]){t2, vv}, 1, (const char *[]){t3}, NULL)) ||
        (st = emit(im, "broadcast_sub", 2, (const char *[]){ids, t3}, 1, (const char *[]){t4}, NULL)))
      return st;
    ids = t4;
  }
  if (r == 2 && axis == 0 && q > 0)
    return emit(im, "embedding", 2, (const char *[]){ids, table}, 1, (const char *[]){Y}, NULL);
  /* [idx..., rest] -> [idx..., other...] -> other dims around the idx dims at axis */
  const char *e = fresh(im, Y, "rows"), *e2 = axis && q ? fresh(im, Y, "split") : Y;
  if (!e || !e2) return oom(im);
  if ((st = emit(im, "embedding", 2, (const char *[]){ids, table}, 1, (const char *[]){e}, NULL))) return st;
  int64_t shape[PD_MAX_DIMS], perm[PD_MAX_DIMS];
  if (q + no > PD_MAX_DIMS) return unsupported(im, "an output of rank %d", q + no);
  for (int i = 0; i < q; i++) shape[i] = 0;
  for (int i = 0; i < no; i++) shape[q + i] = other[i];
  int ns = q + no;
  if (ns == 0) shape[ns++] = 1; /* a scalar gathered from a vector: [1] */
  attrs s = {0};
  at_ints(&s, "shape", ns, shape);
  if ((st = emit1(im, "reshape", e, e2, &s)) || e2 == Y) return st;
  int k = 0;
  for (int i = 0; i < axis; i++) perm[k++] = q + i;
  for (int i = 0; i < q; i++) perm[k++] = i;
  for (int i = (int)axis; i < no; i++) perm[k++] = q + i;
  attrs p = {0};
  at_ints(&p, "perm", k, perm);
  return emit1(im, "transpose", e2, Y, &p);
}

/* ---- shape arithmetic, folded at import ----------------------------------------------- */

/* An integer constant of at most FOLD_MAX elements, or NULL. */
static konst *int_const(imp *im, const char *name) {
  konst *k = name ? find_const(im, name) : NULL;
  if (!k || (k->t.dtype != PD_I64 && k->t.dtype != PD_I32) || pd_tensor_numel(&k->t) > FOLD_MAX) return NULL;
  return k;
}

static int64_t iget(const pd_tensor *t, int64_t i) {
  return t->dtype == PD_I64 ? PD_DATA(t, int64_t)[i] : (int64_t)PD_DATA(t, int32_t)[i];
}

/* Axes from the attribute (before opset `since`) or the constant input 1;
 * false when they are neither. */
static bool fold_axes(imp *im, const Onnx__NodeProto *n, int since, int64_t *axes, int *na) {
  *na = 0;
  if (im->opset < since) {
    int c;
    const int64_t *a = attr_ints(n, "axes", &c);
    if (c > PD_MAX_DIMS) return false;
    for (int i = 0; i < c; i++) axes[(*na)++] = a[i];
    return true;
  }
  if (!in_at(n, 1)) return true;
  konst *k = int_const(im, in_at(n, 1));
  if (!k || pd_tensor_numel(&k->t) > PD_MAX_DIMS) return false;
  for (int64_t i = 0; i < pd_tensor_numel(&k->t); i++) axes[(*na)++] = iget(&k->t, i);
  return true;
}

/* The result of a fold: v[0..numel) of dims as dtype dt (int64 when it
 * holds a mark), the constant `out`. */
static pd_status fold_result(imp *im, const char *out, pd_dtype dt, int ndim, const int64_t *dims, const int64_t *v) {
  pd_tensor t;
  int64_t cnt = 1;
  for (int i = 0; i < ndim; i++) cnt *= dims[i];
  for (int64_t i = 0; i < cnt; i++)
    if (v[i] == BATCH_MARK) dt = PD_I64;
  if (new_tensor(im, &t, dt, ndim, dims)) return PD_ERR_RUNTIME;
  for (int64_t i = 0; i < cnt; i++) {
    if (dt == PD_I64)
      PD_DATA(&t, int64_t)[i] = v[i];
    else
      pd_tensor_set(&t, i, (double)v[i]);
  }
  pd_status st = add_const(im, out, &t, false);
  if (st) pd_tensor_release(&t);
  return st;
}

/* The dims of Unsqueeze (unsq) or Squeeze of dims[0..r) by axes (a
 * Squeeze without axes drops every dim of 1) into nd; the rank, or -1 when
 * the axes do not fit (out of range, repeated, a squeezed dim not of 1). */
static int squeeze_dims(bool unsq, int r, const int64_t *dims, const int64_t *axes, int na, int64_t *nd) {
  int out_r = unsq ? r + na : r;
  if (out_r > PD_MAX_DIMS) return -1;
  bool pick[PD_MAX_DIMS] = {false};
  for (int i = 0; i < na; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + out_r : axes[i];
    if (a < 0 || a >= out_r || pick[a] || (!unsq && dims[a] != 1)) return -1;
    pick[a] = true;
  }
  int k = 0;
  for (int i = 0, j = 0; i < out_r; i++) {
    if (unsq)
      nd[k++] = pick[i] ? 1 : dims[j++];
    else if (!(na ? pick[i] : dims[i] == 1))
      nd[k++] = dims[i];
  }
  return k;
}

/* Folds node n when it is shape arithmetic over constants (*done then). */
static pd_status try_fold(imp *im, const Onnx__NodeProto *n, bool *done) {
  const char *op = n->op_type;
  *done = false;
  int64_t v[FOLD_MAX], dims[PD_MAX_DIMS];
  if (strcmp(op, "Shape") == 0) {
    pd_tensor x;
    pd_status st = meta(im, n->input[0], &x);
    if (st) return st;
    int64_t r = x.ndim, s = im->opset >= 15 ? attr_i(n, "start", 0) : 0, e = im->opset >= 15 ? attr_i(n, "end", r) : r;
    s = s < 0 ? s + r : s, e = e < 0 ? e + r : e;
    s = s < 0 ? 0 : s > r ? r : s, e = e < 0 ? 0 : e > r ? r : e;
    int64_t len = e > s ? e - s : 0;
    for (int64_t i = 0; i < len; i++) v[i] = x.dims[s + i] < 0 ? BATCH_MARK : x.dims[s + i];
    *done = true;
    return fold_result(im, n->output[0], PD_I64, 1, &len, v);
  }
  if (strcmp(op, "ConstantOfShape") == 0) {
    konst *k = int_const(im, n->input[0]);
    const Onnx__AttributeProto *a = attr(n, "value");
    if (!k || k->t.ndim != 1 || has_mark(&k->t)) return PD_OK;
    pd_tensor val, t;
    pd_tensor_init(&val, PD_F32);
    int64_t total = 1;
    for (int64_t i = 0; i < k->t.dims[0] && i < PD_MAX_DIMS; i++) dims[i] = iget(&k->t, i), total *= dims[i];
    if (k->t.dims[0] > PD_MAX_DIMS || total > FOLD_MAX || total < 0) return PD_OK;
    if (a && a->t) {
      if (dtype_of(a->t->data_type) < 0) return PD_OK;
      pd_status st = pd_onnx_tensor(a->t, "ConstantOfShape value", &val, im->err);
      if (st) return st;
      if (pd_tensor_numel(&val) != 1) {
        pd_tensor_release(&val);
        return PD_OK;
      }
    }
    pd_status st = new_tensor(im, &t, a && a->t ? val.dtype : PD_F32, (int)k->t.dims[0], dims);
    for (int64_t i = 0; !st && i < total; i++) pd_tensor_set(&t, i, a && a->t ? pd_tensor_get(&val, 0) : 0);
    if (!st && t.dtype == PD_I64 && a && a->t)
      for (int64_t i = 0; i < total; i++) PD_DATA(&t, int64_t)[i] = PD_DATA(&val, int64_t)[0];
    pd_tensor_release(&val);
    if (!st && (st = add_const(im, n->output[0], &t, false))) pd_tensor_release(&t);
    *done = !st;
    return st;
  }
  static const char *const foldable[] = {"Identity", "Cast", "Unsqueeze", "Squeeze", "Concat",  "Gather",   "Slice",
                                         "Add",      "Sub",  "Mul",       "Div",     "Reshape", "Transpose"};
  bool known = false;
  for (size_t i = 0; i < sizeof foldable / sizeof *foldable; i++) known |= strcmp(op, foldable[i]) == 0;
  if (!known || n->n_output != 1) return PD_OK;
  for (size_t j = 0; j < n->n_input; j++)
    if (n->input[j][0] && !int_const(im, n->input[j])) return PD_OK;
  const pd_tensor *x = &int_const(im, n->input[0])->t;
  int64_t cnt = pd_tensor_numel(x);
  int r = x->ndim;
  pd_dtype dt = x->dtype;
  memcpy(dims, x->dims, sizeof *dims * (size_t)r);
  for (int64_t i = 0; i < cnt; i++) v[i] = iget(x, i);
  if (strcmp(op, "Cast") == 0) {
    int to = dtype_of((int32_t)attr_i(n, "to", 0));
    if (to != PD_I64 && to != PD_I32) {
      if (has_mark(x)) return batch_dep(im, "the batch size (known at run time) cast to a non-integer type");
      return PD_OK;
    }
    dt = (pd_dtype)to;
  } else if (strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Squeeze") == 0) {
    int64_t axes[PD_MAX_DIMS];
    int na;
    bool unsq = op[0] == 'U';
    int64_t nd[PD_MAX_DIMS];
    if (!fold_axes(im, n, 13, axes, &na) || (r = squeeze_dims(unsq, r, dims, axes, na, nd)) < 0) return PD_OK;
    memcpy(dims, nd, sizeof *dims * (size_t)r);
  } else if (strcmp(op, "Concat") == 0) {
    int64_t axis = attr_i(n, "axis", 0);
    if (r != 1 || (axis != 0 && axis != -1)) return PD_OK;
    cnt = 0;
    for (size_t j = 0; j < n->n_input; j++) {
      const pd_tensor *t = &int_const(im, n->input[j])->t;
      if (t->ndim != 1 || cnt + t->dims[0] > FOLD_MAX) return PD_OK;
      for (int64_t i = 0; i < t->dims[0]; i++) v[cnt++] = iget(t, i);
      if (t->dtype != dt) return PD_OK;
    }
    dims[0] = cnt;
  } else if (strcmp(op, "Gather") == 0) {
    const pd_tensor *ix = &int_const(im, n->input[1])->t;
    int64_t ax = attr_i(n, "axis", 0);
    if (r != 1 || (ax != 0 && ax != -1)) return PD_OK;
    int64_t ni = pd_tensor_numel(ix), src[FOLD_MAX];
    memcpy(src, v, sizeof *v * (size_t)cnt);
    for (int64_t i = 0; i < ni; i++) {
      int64_t k = iget(ix, i);
      k = k < 0 ? k + cnt : k;
      if (k < 0 || k >= cnt)
        return unsupported(im, "index %lld outside a shape of %lld entries", (long long)iget(ix, i), (long long)cnt);
      v[i] = src[k];
    }
    r = ix->ndim;
    memcpy(dims, ix->dims, sizeof *dims * (size_t)r);
  } else if (strcmp(op, "Slice") == 0) {
    int64_t sb[PD_MAX_DIMS], se[PD_MAX_DIMS], sa[PD_MAX_DIMS], sp[PD_MAX_DIMS];
    int ns = 0;
    if (im->opset < 10) {
      int cs, ce, ca;
      const int64_t *as = attr_ints(n, "starts", &cs), *ae = attr_ints(n, "ends", &ce), *aa = attr_ints(n, "axes", &ca);
      if (cs != ce || cs > r || (ca && ca != cs)) return PD_OK;
      for (ns = 0; ns < cs; ns++) sb[ns] = as[ns], se[ns] = ae[ns], sa[ns] = ca ? aa[ns] : ns, sp[ns] = 1;
    } else {
      konst *ks = int_const(im, in_at(n, 1)), *ke = int_const(im, in_at(n, 2)), *ka = int_const(im, in_at(n, 3)),
            *kp = int_const(im, in_at(n, 4));
      ns = ks ? (int)pd_tensor_numel(&ks->t) : -1;
      if (!ks || !ke || ns > r || pd_tensor_numel(&ke->t) != ns || (ka && pd_tensor_numel(&ka->t) != ns) ||
          (kp && pd_tensor_numel(&kp->t) != ns))
        return PD_OK;
      for (int i = 0; i < ns; i++)
        sb[i] = iget(&ks->t, i), se[i] = iget(&ke->t, i), sa[i] = ka ? iget(&ka->t, i) : i,
        sp[i] = kp ? iget(&kp->t, i) : 1;
    }
    int64_t b0[PD_MAX_DIMS], st0[PD_MAX_DIMS], src[FOLD_MAX];
    for (int d = 0; d < r; d++) b0[d] = 0, st0[d] = 1;
    for (int i = 0; i < ns; i++) {
      int64_t a = sa[i] < 0 ? sa[i] + r : sa[i];
      if (a < 0 || a >= r || sp[i] == 0 || sp[i] == INT64_MIN) return PD_OK;
      dims[a] = pd_slice_range(dims[a], sb[i], se[i], sp[i], &b0[a]), st0[a] = sp[i];
    }
    memcpy(src, v, sizeof *v * (size_t)cnt);
    int64_t stride[PD_MAX_DIMS], idx[PD_MAX_DIMS] = {0}, total = 1;
    for (int d = r - 1, acc = 1; d >= 0; acc *= (int)x->dims[d], d--) stride[d] = acc;
    for (int d = 0; d < r; d++) total *= dims[d];
    for (int64_t o = 0; o < total; o++) {
      int64_t off = 0;
      for (int d = 0; d < r; d++) off += (b0[d] + idx[d] * st0[d]) * stride[d];
      v[o] = src[off];
      for (int d = r - 1; d >= 0 && ++idx[d] == dims[d]; d--) idx[d] = 0;
    }
  } else if (strcmp(op, "Transpose") == 0) {
    int np;
    const int64_t *pm = attr_ints(n, "perm", &np);
    int64_t perm[PD_MAX_DIMS], stride[PD_MAX_DIMS], idx[PD_MAX_DIMS] = {0}, src[FOLD_MAX], od[PD_MAX_DIMS];
    if (np && np != r) return PD_OK;
    for (int d = 0; d < r; d++) perm[d] = np ? pm[d] : r - 1 - d;
    for (int d = r - 1, acc = 1; d >= 0; acc *= (int)dims[d], d--) stride[d] = acc;
    for (int d = 0; d < r; d++) {
      if (perm[d] < 0 || perm[d] >= r) return PD_OK;
      od[d] = dims[perm[d]];
    }
    memcpy(src, v, sizeof *v * (size_t)cnt);
    for (int64_t o = 0; o < cnt; o++) {
      int64_t off = 0;
      for (int d = 0; d < r; d++) off += idx[d] * stride[perm[d]];
      v[o] = src[off];
      for (int d = r - 1; d >= 0 && ++idx[d] == od[d]; d--) idx[d] = 0;
    }
    memcpy(dims, od, sizeof od);
  } else if (strcmp(op, "Reshape") == 0) {
    const pd_tensor *sh = &int_const(im, n->input[1])->t;
    int64_t ns = pd_tensor_numel(sh), known = 1, nd[PD_MAX_DIMS];
    int infer = -1;
    if (sh->ndim != 1 || ns > PD_MAX_DIMS || has_mark(sh)) return PD_OK;
    for (int i = 0; i < ns; i++) {
      int64_t e = iget(sh, i);
      if (e == 0 && !(im->opset >= 14 && attr_i(n, "allowzero", 0))) e = i < r ? dims[i] : -2;
      if (e == -1 && infer < 0)
        infer = i;
      else if (e < 0)
        return PD_OK;
      else
        known *= e;
      nd[i] = e;
    }
    if (infer >= 0) nd[infer] = known ? cnt / known : 0;
    if (infer >= 0 ? known == 0 || cnt % known : known != cnt) return PD_OK;
    r = (int)ns;
    memcpy(dims, nd, sizeof *nd * (size_t)r);
  } else if (strcmp(op, "Identity") != 0) { /* Add, Sub, Mul, Div */
    const pd_tensor *y = &int_const(im, n->input[1])->t;
    int64_t cy = pd_tensor_numel(y);
    if (y->dtype != dt || !((cy == cnt && x->ndim == y->ndim) || cy == 1 || cnt == 1)) return PD_OK;
    if (has_mark(x) || has_mark(y))
      return batch_dep(im, "arithmetic (%s) on the batch size, which is known only at run time", op);
    if (y->ndim > r) {
      r = y->ndim;
      memcpy(dims, y->dims, sizeof *dims * (size_t)r);
    }
    int64_t m = cnt > cy ? cnt : cy;
    for (int64_t i = 0; i < m; i++) {
      int64_t a = iget(x, cnt == 1 ? 0 : i), b = iget(y, cy == 1 ? 0 : i);
      if (op[0] == 'D' && (b == 0 || (b == -1 && a == INT64_MIN))) return PD_OK;
      uint64_t ua = (uint64_t)a, ub = (uint64_t)b; /* wrapping, as ONNX's integers */
      v[i] = op[0] == 'A'   ? (int64_t)(ua + ub)
             : op[0] == 'S' ? (int64_t)(ua - ub)
             : op[0] == 'M' ? (int64_t)(ua * ub)
                            : a / b;
    }
  }
  *done = true;
  return fold_result(im, n->output[0], dt, r, dims, v);
}

/* Shape and ConstantOfShape are mapped only as shape arithmetic over
 * constants (try_fold): reaching here, an input was not one. */
static pd_status map_fold_only(imp *im, const Onnx__NodeProto *n) {
  return unsupported(im, "%s only as shape arithmetic over constants (an input is computed at run time)", n->op_type);
}

/* ---- Unsqueeze, Squeeze and Slice of values computed at run time ----------------------- */

/* Unsqueeze and Squeeze: a reshape to the dims ONNX gives. The batch (-1
 * first) must stay first: 0 (copy) in the reshape's shape. */
static pd_status map_squeeze_like(imp *im, const Onnx__NodeProto *n) {
  bool unsq = n->op_type[0] == 'U';
  int64_t axes[PD_MAX_DIMS], nd[PD_MAX_DIMS];
  int na;
  if (!fold_axes(im, n, 13, axes, &na)) {
    konst *k;
    pd_status st = need_const(im, n->input[1], "axes", &k);
    return st ? st : unsupported(im, "axes that are not an integer constant of at most 8 entries");
  }
  pd_tensor x;
  pd_status st = meta(im, n->input[0], &x);
  if (st) return st;
  int out_r = unsq ? x.ndim + na : x.ndim;
  bool batched = x.ndim > 0 && x.dims[0] == -1;
  if (unsq && !na) return unsupported(im, "Unsqueeze without axes");
  for (int i = 0; i < na && batched; i++) /* before squeeze_dims, which sees -1 as a dim not of 1 */
    if ((axes[i] < 0 ? axes[i] + out_r : axes[i]) == 0) return batch_dep(im, "%s at the batch dim", n->op_type);
  char xs[128];
  int k = squeeze_dims(unsq, x.ndim, x.dims, axes, na, nd);
  if (k < 0)
    return unsupported(im,
                       "axes that do not fit an input of shape %s (out of range, repeated, or a squeezed dim not of 1)",
                       pd_dims_str(x.ndim, x.dims, xs, sizeof xs));
  if (batched) nd[0] = 0;
  for (int i = batched; i < k; i++)
    if (nd[i] < 0) return batch_dep(im, "%s of a value with a dim known only at run time", n->op_type);
  attrs at = {0};
  at_ints(&at, "shape", k, nd);
  return emit1(im, "reshape", n->input[0], n->output[0], &at);
}

/* The node of the graph being mapped that computes `name`, or NULL. */
static const Onnx__NodeProto *producer_of(const imp *im, const char *name) {
  for (size_t i = 0; i < im->g->n_node; i++)
    for (size_t j = 0; j < im->g->node[i]->n_output; j++)
      if (strcmp(im->g->node[i]->output[j], name) == 0) return im->g->node[i];
  return NULL;
}

/* Whether value `name` holds k elements. */
static bool holds(imp *im, const char *name, int64_t k) {
  pd_tensor t;
  return meta(im, name, &t) == PD_OK && pd_tensor_numel(&t) == k;
}

/* Value `name` (k elements) as base + off, element by element: through the
 * nodes that keep the elements as they are (Identity, Unsqueeze, Squeeze,
 * Reshape) and the adding or subtracting of an integer constant. Returns
 * the base: the first value reached that is neither. */
static const char *offset_of(imp *im, const char *name, int k, int64_t *off) {
  for (int i = 0; i < k; i++) off[i] = 0;
  for (int hops = 0; hops < 64; hops++) {
    const Onnx__NodeProto *p = producer_of(im, name);
    if (!p || !p->op_type || p->n_input < 1 || !p->input[0][0] || !holds(im, p->input[0], k)) return name;
    const char *t = p->op_type;
    if (strcmp(t, "Identity") == 0 || strcmp(t, "Unsqueeze") == 0 || strcmp(t, "Squeeze") == 0 ||
        strcmp(t, "Reshape") == 0) {
      name = p->input[0];
      continue;
    }
    bool add = strcmp(t, "Add") == 0;
    if ((!add && strcmp(t, "Sub") != 0) || p->n_input != 2) return name;
    konst *c1 = int_const(im, p->input[1]), *c0 = add ? int_const(im, p->input[0]) : NULL;
    konst *c = c1 ? c1 : c0;
    const char *other = c1 ? p->input[0] : p->input[1];
    int64_t nc = c ? pd_tensor_numel(&c->t) : 0;
    if (!c || (c0 && c1) || (nc != 1 && nc != k) || !holds(im, other, k) || !holds(im, p->output[0], k)) return name;
    for (int i = 0; i < k; i++) { /* wrapping, as ONNX's integers */
      uint64_t v = (uint64_t)iget(&c->t, nc == 1 ? 0 : i);
      off[i] = (int64_t)(add ? (uint64_t)off[i] + v : (uint64_t)off[i] - v);
    }
    name = other;
  }
  return name;
}

/* Slice of a float value: the slice op with constant bounds (ONNX's
 * clamping is the op's), or, where starts are computed at run time and
 * ends are starts plus constants (a Loop's body taking element i), with a
 * window of fixed size read from Starts. Such a window must lie inside
 * the dim, which the op checks at run time: where ONNX would clamp it, the
 * run fails instead of differing. */
static pd_status map_slice(imp *im, const Onnx__NodeProto *n) {
  pd_tensor x;
  pd_status st = need_float(im, n->input[0]);
  if (!st) st = meta(im, n->input[0], &x);
  if (st) return st;
  int64_t sb[PD_MAX_DIMS] = {0}, se[PD_MAX_DIMS] = {0}, sa[PD_MAX_DIMS] = {0}, sp[PD_MAX_DIMS] = {0},
          size[PD_MAX_DIMS] = {0};
  int k = 0;
  const char *starts = NULL; /* computed at run time */
  if (im->opset < 10) {
    int cs, ce, ca;
    const int64_t *as = attr_ints(n, "starts", &cs), *ae = attr_ints(n, "ends", &ce), *aa = attr_ints(n, "axes", &ca);
    if (cs != ce || cs > x.ndim || (ca && ca != cs))
      return unsupported(im, "%d starts, %d ends and %d axes", cs, ce, ca);
    for (k = 0; k < cs; k++) sb[k] = as[k], se[k] = ae[k], sa[k] = ca ? aa[k] : k, sp[k] = 1;
  } else {
    if (!in_at(n, 1) || !in_at(n, 2)) return unsupported(im, "no starts or ends");
    konst *ka = in_at(n, 3) ? int_const(im, n->input[3]) : NULL, *kp = in_at(n, 4) ? int_const(im, n->input[4]) : NULL;
    konst *ks = int_const(im, n->input[1]), *ke = int_const(im, n->input[2]), *kc;
    for (int i = 3; i <= 4; i++)
      if (in_at(n, i) && !(i == 3 ? ka : kp))
        return (st = need_const(im, n->input[i], i == 3 ? "axes" : "steps", &kc))
                   ? st
                   : unsupported(im, "%s that are not an integer constant", i == 3 ? "axes" : "steps");
    pd_tensor ts;
    if ((st = meta(im, n->input[1], &ts))) return st;
    int64_t cnt = pd_tensor_numel(&ts);
    if (cnt > x.ndim || !holds(im, n->input[2], cnt) || (ka && pd_tensor_numel(&ka->t) != cnt) ||
        (kp && pd_tensor_numel(&kp->t) != cnt))
      return unsupported(im, "starts, ends, axes and steps of different lengths, or more than X's dims");
    k = (int)cnt;
    for (int i = 0; i < k; i++) sa[i] = ka ? iget(&ka->t, i) : i, sp[i] = kp ? iget(&kp->t, i) : 1;
    if (ks && ke) {
      for (int i = 0; i < k; i++) sb[i] = iget(&ks->t, i), se[i] = iget(&ke->t, i);
    } else {
      int64_t ob[PD_MAX_DIMS], oe[PD_MAX_DIMS];
      if (ts.dtype != PD_I64)
        return unsupported(im, "starts computed at run time of dtype %s", pd_dtype_name(ts.dtype));
      const char *base = offset_of(im, n->input[1], k, ob);
      if (strcmp(base, offset_of(im, n->input[2], k, oe)) != 0) {
        konst *kk; /* a graph input, maybe, that the user can give a value */
        st = need_const(im, n->input[ks ? 2 : 1], ks ? "ends" : "starts", &kk);
        if (!st) st = need_const(im, n->input[2], "ends", &kk);
        if (!st)
          st = unsupported(im, "starts and ends computed at run time, where ends are not starts plus a constant");
        return st;
      }
      for (int i = 0; i < k; i++) {
        size[i] = (int64_t)((uint64_t)oe[i] - (uint64_t)ob[i]);
        if (sp[i] != 1 || size[i] < 1)
          return unsupported(im,
                             "a slice of starts computed at run time with step %lld and ends - starts = %lld "
                             "(step 1 and a positive constant are)",
                             (long long)sp[i], (long long)size[i]);
      }
      starts = n->input[1];
    }
  }
  for (int i = 0; i < k; i++) {
    int64_t a = sa[i] < 0 ? sa[i] + x.ndim : sa[i];
    if (a < 0 || a >= x.ndim) return unsupported(im, "axis %lld of an input of rank %d", (long long)sa[i], x.ndim);
    if (sp[i] == 0) return unsupported(im, "a step of 0");
    if (a == 0 && x.dims[0] == -1 && (starts || sb[i] != 0 || !pd_slice_to_end(se[i]) || sp[i] != 1))
      return batch_dep(im, "Slice along the batch dim");
    sa[i] = a;
  }
  if (!k) return emit1(im, "identity", n->input[0], n->output[0], NULL);
  attrs at = {0};
  at_ints(&at, "axes", k, sa);
  if (starts) {
    at_ints(&at, "sizes", k, size);
  } else {
    at_ints(&at, "starts", k, sb);
    at_ints(&at, "ends", k, se);
    bool ones = true;
    for (int i = 0; i < k; i++) ones &= sp[i] == 1;
    if (!ones) at_ints(&at, "steps", k, sp);
  }
  return emit(im, "slice", starts ? 2 : 1, (const char *[]){n->input[0], starts}, 1, (const char *[]){n->output[0]},
              &at);
}

/* ---- activations and normalisation of issue 22 ---------------------------------------- */

static pd_status map_leaky_relu(imp *im, const Onnx__NodeProto *n) {
  pd_status st = need_float(im, n->input[0]);
  if (st) return st;
  attrs at = {0};
  at_f(&at, "alpha", attr_f(n, "alpha", 0.01));
  return emit1(im, "leaky_relu", n->input[0], n->output[0], &at);
}

static pd_status map_softplus(imp *im, const Onnx__NodeProto *n) { return map_act(im, n, "softplus"); }

/* Gelu (ai.onnx from opset 20; written by some exporters before): erf or
 * the tanh approximation. */
static pd_status map_gelu(imp *im, const Onnx__NodeProto *n) {
  bool tanh_ = attr_s_is(n, "approximate", "tanh", "none");
  if (!tanh_ && !attr_s_is(n, "approximate", "none", "none"))
    return unsupported(im, "an approximate other than none, tanh");
  pd_status st = need_float(im, n->input[0]);
  if (st) return st;
  attrs at = {0};
  at_s(&at, "approximate", tanh_ ? "tanh" : "none");
  return emit1(im, "gelu", n->input[0], n->output[0], &at);
}

/* Clip: bounds as attributes before opset 11, as optional constant scalar
 * inputs from 11 (torch's ReLU6 and clamp). */
static pd_status map_clip(imp *im, const Onnx__NodeProto *n) {
  double lo = -INFINITY, hi = INFINITY;
  if (im->opset < 11) {
    lo = attr_f(n, "min", -INFINITY), hi = attr_f(n, "max", INFINITY);
  } else {
    static const char *const what[] = {"min", "max"};
    for (size_t i = 1; i <= 2; i++) {
      konst *k;
      if (!in_at(n, i)) continue;
      pd_status st = need_const(im, n->input[i], what[i - 1], &k);
      if (st) return st;
      if (pd_tensor_numel(&k->t) != 1) return unsupported(im, "a %s that is not a scalar", what[i - 1]);
      *(i == 1 ? &lo : &hi) = pd_tensor_get(&k->t, 0);
    }
  }
  pd_status st = need_float(im, n->input[0]);
  if (st) return st;
  attrs at = {0};
  if (lo > -INFINITY) at_f(&at, "min", lo);
  if (hi < INFINITY) at_f(&at, "max", hi);
  return emit1(im, "clip", n->input[0], n->output[0], &at);
}

/* layer_norm over the dims from `axis` on; X, Scale (B optional). */
static pd_status emit_layer_norm(imp *im, const char *X, const char *S, const char *B, int64_t axis, double eps,
                                 const char *Y) {
  pd_status st = need_float(im, X);
  if (st) return st;
  attrs at = {0};
  at_i(&at, "axis", axis);
  at_f(&at, "epsilon", eps);
  return emit(im, "layer_norm", 3, (const char *[]){X, S ? S : "", B ? B : ""}, 1, (const char *[]){Y}, &at);
}

static pd_status map_layer_norm(imp *im, const Onnx__NodeProto *n) {
  if (out_at(n, 1) || out_at(n, 2)) return unsupported(im, "the Mean and InvStdDev outputs");
  if (attr_i(n, "stash_type", 1) != 1) return unsupported(im, "stash_type other than 1 (float)");
  return emit_layer_norm(im, n->input[0], in_at(n, 1), in_at(n, 2), attr_i(n, "axis", -1), attr_f(n, "epsilon", 1e-5),
                         n->output[0]);
}

/* Pad: pads as an attribute before opset 11, a constant int64 input from
 * 11 (what torch writes computes it from constants: folded); `mode`
 * constant, reflect, edge; the constant value an optional input (11+). */
static pd_status map_pad(imp *im, const Onnx__NodeProto *n) {
  int64_t pads[2 * PD_MAX_DIMS];
  int np = 0;
  double value = attr_f(n, "value", 0);
  pd_status st;
  konst *k;
  if (im->opset < 11) {
    const int64_t *p = attr_ints(n, "pads", &np);
    if (np > 2 * PD_MAX_DIMS) return unsupported(im, "%d pads", np);
    memcpy(pads, p, sizeof *pads * (size_t)np);
  } else {
    if (!in_at(n, 1)) return unsupported(im, "no pads");
    if ((st = need_const(im, n->input[1], "pads", &k))) return st;
    np = (int)pd_tensor_numel(&k->t);
    if (!int_const(im, n->input[1]) || np > 2 * PD_MAX_DIMS) return unsupported(im, "pads that are not int64 [2 r]");
    for (int i = 0; i < np; i++) pads[i] = iget(&k->t, i);
    if (in_at(n, 2)) {
      if ((st = need_const(im, n->input[2], "constant_value", &k))) return st;
      if (pd_tensor_numel(&k->t) != 1) return unsupported(im, "a constant_value that is not a scalar");
      value = pd_tensor_get(&k->t, 0);
    }
    if (in_at(n, 3)) return unsupported(im, "the axes input");
  }
  const char *mode = attr_s_is(n, "mode", "reflect", "constant")    ? "reflect"
                     : attr_s_is(n, "mode", "edge", "constant")     ? "edge"
                     : attr_s_is(n, "mode", "constant", "constant") ? "constant"
                                                                    : NULL;
  if (!mode) return unsupported(im, "a mode other than constant, reflect, edge");
  pd_tensor x;
  if ((st = need_float(im, n->input[0])) || (st = meta(im, n->input[0], &x))) return st;
  if (np != 2 * x.ndim) return unsupported(im, "%d pads for an input of rank %d", np, x.ndim);
  for (int i = 0; i < np; i++)
    if (pads[i] < 0) return unsupported(im, "a negative pad (cropping)");
  if (pads[0] || pads[x.ndim]) return unsupported(im, "padding of the first (batch) dim");
  attrs at = {0};
  at_ints(&at, "pads", np, pads);
  at_s(&at, "mode", mode);
  if (value != 0) at_f(&at, "value", value);
  return emit1(im, "pad", n->input[0], n->output[0], &at);
}

/* Resize (and Upsample) in the nearest mode torch.nn.Upsample exports:
 * asymmetric coordinates, floor rounding, constant scales over the
 * spatial dims of [N, C, H, W]; anything else is refused naming it. */
static pd_status map_resize(imp *im, const Onnx__NodeProto *n) {
  bool upsample = strcmp(n->op_type, "Upsample") == 0;
  if (!attr_s_is(n, "mode", "nearest", "nearest")) return unsupported(im, "mode other than nearest");
  /* Resize-11+: asymmetric + floor is our op; half_pixel with either
   * round mode is the same for whole upscales (the source coordinate
   * (o + 0.5) / k - 0.5 is within 0.5 of floor(o / k), never halfway) */
  bool half = false;
  if (!upsample && im->opset >= 11) {
    bool asym = attr_s_is(n, "coordinate_transformation_mode", "asymmetric", "half_pixel");
    half = attr_s_is(n, "coordinate_transformation_mode", "half_pixel", "half_pixel") ||
           attr_s_is(n, "coordinate_transformation_mode", "pytorch_half_pixel", "half_pixel");
    bool floor_ = attr_s_is(n, "nearest_mode", "floor", "round_prefer_floor");
    bool round_ = attr_s_is(n, "nearest_mode", "round_prefer_floor", "round_prefer_floor") ||
                  attr_s_is(n, "nearest_mode", "round_prefer_ceil", "round_prefer_floor");
    if (!asym && !half)
      return unsupported(im, "coordinate_transformation_mode other than asymmetric (or half_pixel with whole scales)");
    if (asym ? !floor_ : !round_)
      return unsupported(im, "nearest_mode other than floor with asymmetric (or round_prefer_* with half_pixel)");
  }
  if (attr_i(n, "exclude_outside", 0)) return unsupported(im, "exclude_outside = 1");
  pd_tensor x;
  pd_status st;
  if ((st = need_float(im, n->input[0])) || (st = meta(im, n->input[0], &x))) return st;
  if (x.ndim != 4) return unsupported(im, "an input of rank %d (4, [N, C, H, W], is supported)", x.ndim);
  double sc[PD_MAX_DIMS];
  int ns = 0;
  const char *S = upsample ? (im->opset >= 9 ? in_at(n, 1) : NULL) : im->opset >= 11 ? in_at(n, 2) : in_at(n, 1);
  const char *Z = !upsample && im->opset >= 11 ? in_at(n, 3) : NULL;
  konst *k;
  if (upsample && im->opset < 9) {
    const Onnx__AttributeProto *a = attr(n, "scales");
    ns = a ? (int)a->n_floats : 0;
    for (int i = 0; i < ns && i < PD_MAX_DIMS; i++) sc[i] = a->floats[i];
  } else if (S && (k = find_const(im, S)) && pd_tensor_numel(&k->t) > 0) {
    ns = (int)pd_tensor_numel(&k->t);
    for (int i = 0; i < ns && i < PD_MAX_DIMS; i++) sc[i] = pd_tensor_get(&k->t, i);
  } else if (Z) { /* sizes: the scales they imply, which must be exact */
    if ((st = need_const(im, Z, "sizes", &k))) return st;
    ns = (int)pd_tensor_numel(&k->t);
    for (int i = 0; i < ns && i < x.ndim; i++) {
      double want = pd_tensor_get(&k->t, i);
      if (i < 2 ? want != x.dims[i] && x.dims[i] >= 0 : x.dims[i] <= 0 || fmod(want, (double)x.dims[i]) != 0)
        return unsupported(im, "sizes that are not whole multiples of the spatial dims");
      sc[i] = i < 2 ? 1 : want / (double)x.dims[i];
    }
  } else if (S) {
    return need_const(im, S, "scales", &k);
  }
  if (ns != 4) return unsupported(im, "%d scales for an input of rank 4", ns);
  if (sc[0] != 1 || sc[1] != 1) return unsupported(im, "scaling of the batch or channel dim");
  if (half && (sc[2] != floor(sc[2]) || sc[3] != floor(sc[3]) || sc[2] < 1 || sc[3] < 1))
    return unsupported(im, "coordinate_transformation_mode half_pixel with scales that are not whole numbers");
  attrs at = {0};
  pd_buf_printf(&at.b, " attrs { key: \"scales\" value { floats: [");
  for (int i = 2; i < 4; i++) {
    char num[32];
    pd_format_double(sc[i], num, sizeof num);
    pd_buf_printf(&at.b, "%s%s", i > 2 ? ", " : "", num);
  }
  pd_buf_printf(&at.b, "] } }");
  return emit1(im, "resize_nearest", n->input[0], n->output[0], &at);
}

static const struct {
  const char *type;
  map_fn fn;
  int since;  /* the first opset whose version of the op we map */
  int min_in; /* inputs it must have */
} maps[] = {
    {"Add", map_add, 6, 2},
    {"AveragePool", map_avgpool, 1, 1},
    {"BatchNormalization", map_batchnorm, 6, 5},
    {"Cast", map_cast, 6, 1},
    {"Clip", map_clip, 6, 1},
    {"Concat", map_concat, 4, 1},
    {"ConstantOfShape", map_fold_only, 9, 1},
    {"Constant", map_constant, 1, 0},
    {"Conv", map_conv, 1, 2},
    {"Div", map_div, 6, 2},
    {"Dropout", map_dropout, 6, 1},
    {"Flatten", map_flatten, 1, 1},
    {"Gelu", map_gelu, 1, 1},
    {"Gemm", map_gemm, 6, 2},
    {"GlobalAveragePool", map_global_avgpool, 1, 1},
    {"Gather", map_gather, 1, 2},
    {"GlobalMaxPool", map_global_maxpool, 1, 1},
    {"GRU", map_gru, 7, 3},
    {"Identity", map_identity, 1, 1},
    {"If", pd_onnx_map_if, 1, 1},
    {"LSTM", map_lstm, 7, 3},
    {"LayerNormalization", map_layer_norm, 17, 1},
    {"LeakyRelu", map_leaky_relu, 6, 1},
    {"LogSoftmax", map_log_softmax, 1, 1},
    {"Loop", pd_onnx_map_loop, 1, 0},
    {"MatMul", map_matmul, 1, 2},
    {"MaxPool", map_maxpool, 1, 1},
    {"Mul", map_mul, 6, 2},
    {"Pad", map_pad, 2, 1},
    {"Relu", map_relu, 6, 1},
    {"Reshape", map_reshape, 5, 2},
    {"Scan", pd_onnx_map_scan, 8, 0},
    {"RNN", map_rnn, 7, 3},
    {"Resize", map_resize, 10, 1},
    {"Shape", map_fold_only, 1, 1},
    {"Sigmoid", map_sigmoid, 6, 1},
    {"Slice", map_slice, 1, 1},
    {"Softmax", map_softmax, 1, 1},
    {"Softplus", map_softplus, 1, 1},
    {"Squeeze", map_squeeze_like, 1, 1},
    {"Sub", map_sub, 6, 2},
    {"Sum", map_sum, 6, 1},
    {"Tanh", map_tanh, 6, 1},
    {"Transpose", map_transpose, 1, 1},
    {"Unsqueeze", map_squeeze_like, 1, 1},
    {"Upsample", map_resize, 7, 1},
};

/* ---- decompositions recognised ------------------------------------------------------ */

/* torch.onnx.export writes GELU (below opset 20) and LayerNorm (below 17)
 * as chains of elementary nodes, most of which (Erf, Pow, Sqrt,
 * ReduceMean) we do not map one by one. Before the nodes are mapped, such
 * chains are found and become one gelu or layer_norm, emitted at the
 * chain's last node; its other nodes are skipped. A chain qualifies only
 * when its inner values are read by nothing outside it. */

/* The producer and (for values read once) the reader of each value. */
typedef struct graph_index {
  smap producer, reader, init;
} graph_index;

static const Onnx__NodeProto *producer(const imp *im, const graph_index *gi, const char *name, const char *type) {
  int i = name ? smap_get(&gi->producer, name) : -1;
  if (i < 0 || !im->g->node[i]->op_type || strcmp(im->g->node[i]->op_type, type) != 0) return NULL;
  return im->g->node[i];
}

/* The only node reading `name`, when it is of `type`. */
static const Onnx__NodeProto *reader(const imp *im, const graph_index *gi, const char *name, const char *type) {
  if (!name || !used_once(im, name)) return NULL;
  int i = smap_get(&gi->reader, name);
  if (i < 0 || !im->g->node[i]->op_type || strcmp(im->g->node[i]->op_type, type) != 0) return NULL;
  return im->g->node[i];
}

/* The value of a constant scalar (an initializer or a Constant node). */
static bool scalar_of(imp *im, const graph_index *gi, const char *name, double *v) {
  const Onnx__TensorProto *tp = NULL;
  int i = smap_get(&gi->init, name);
  if (i >= 0) tp = im->g->initializer[i];
  const Onnx__NodeProto *c = producer(im, gi, name, "Constant");
  if (c && c->n_attribute == 1 && strcmp(c->attribute[0]->name, "value") == 0) tp = c->attribute[0]->t;
  if (c && c->n_attribute == 1 && strcmp(c->attribute[0]->name, "value_float") == 0) {
    *v = c->attribute[0]->f;
    return true;
  }
  if (!tp || dtype_of(tp->data_type) < 0) return false;
  pd_tensor t;
  pd_error e = {0};
  if (pd_onnx_tensor(tp, name, &t, &e)) return false;
  bool one = pd_tensor_numel(&t) == 1;
  if (one) *v = pd_tensor_get(&t, 0);
  pd_tensor_release(&t);
  return one;
}

static bool near(double a, double b) { return fabs(a - b) <= 1e-6 * fabs(b); }

/* The input of binary node n that is not `this` (either order). */
static const char *other_in(const Onnx__NodeProto *n, const char *this) {
  if (n->n_input != 2) return NULL;
  return strcmp(n->input[0], this) == 0 ? n->input[1] : strcmp(n->input[1], this) == 0 ? n->input[0] : NULL;
}

static int node_at(const imp *im, const Onnx__NodeProto *n) {
  for (size_t i = 0; i < im->g->n_node; i++)
    if (im->g->node[i] == n) return (int)i;
  return -1;
}

/* y = x * 0.5 * (1 + erf(x / sqrt 2)), from its Erf node. */
static bool match_gelu(imp *im, const graph_index *gi, const Onnx__NodeProto *erf, pattern *p,
                       const Onnx__NodeProto **nodes, int *nn) {
  double c;
  const Onnx__NodeProto *d = producer(im, gi, erf->input[0], "Div"), *a, *m1, *m2 = NULL, *h = NULL;
  if (!d || d->n_input != 2 || !used_once(im, d->output[0]) || !scalar_of(im, gi, d->input[1], &c) ||
      !near(c, sqrt(2.0)))
    return false;
  const char *x = d->input[0];
  if (!(a = reader(im, gi, erf->output[0], "Add")) || !scalar_of(im, gi, other_in(a, erf->output[0]), &c) || c != 1)
    return false;
  if (!(m1 = reader(im, gi, a->output[0], "Mul"))) return false;
  const char *o = other_in(m1, a->output[0]);
  if (o && strcmp(o, x) == 0) { /* (x * (1 + erf)) * 0.5 */
    if (!(m2 = reader(im, gi, m1->output[0], "Mul")) || !scalar_of(im, gi, other_in(m2, m1->output[0]), &c) || c != 0.5)
      return false;
  } else if (o && (h = producer(im, gi, o, "Mul")) && used_once(im, o)) { /* (x * 0.5) * (1 + erf) */
    const char *hx = other_in(h, x);
    if (!hx || !scalar_of(im, gi, hx, &c) || c != 0.5) return false;
  } else {
    return false;
  }
  const Onnx__NodeProto *all[] = {d, erf, a, m1, m2 ? m2 : h};
  *nn = 5;
  memcpy(nodes, all, sizeof all);
  *p = (pattern){.type = "gelu", .x = x, .y = m2 ? m2->output[0] : m1->output[0]};
  return true;
}

/* (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* scale [+ bias]]
 * over trailing axes, from its Sqrt node. */
static bool match_layer_norm(imp *im, const graph_index *gi, const Onnx__NodeProto *sq, pattern *p,
                             const Onnx__NodeProto **nodes, int *nn) {
  double c;
  const Onnx__NodeProto *e = producer(im, gi, sq->input[0], "Add"), *r2, *pw, *s, *r1, *dv, *w, *b;
  if (!e || !used_once(im, e->output[0]) || !used_once(im, sq->output[0])) return false;
  const char *v = NULL;
  for (int i = 0; i < 2 && !v; i++)
    if (scalar_of(im, gi, e->input[1 - i], &c)) v = e->input[i];
  if (!v || !(r2 = producer(im, gi, v, "ReduceMean")) || !used_once(im, v)) return false;
  double eps = c;
  if (!(pw = producer(im, gi, r2->input[0], "Pow")) || !used_once(im, pw->output[0]) ||
      !scalar_of(im, gi, pw->input[1], &c) || c != 2)
    return false;
  if (!(s = producer(im, gi, pw->input[0], "Sub")) || smap_get(&im->uses, s->output[0]) != 2) return false;
  if (!(r1 = producer(im, gi, s->input[1], "ReduceMean")) || !used_once(im, r1->output[0]) ||
      strcmp(r1->input[0], s->input[0]) != 0)
    return false;
  if (!(dv = reader(im, gi, sq->output[0], "Div")) || strcmp(dv->input[0], s->output[0]) != 0) return false;
  int n1, n2;
  const int64_t *a1 = attr_ints(r1, "axes", &n1), *a2 = attr_ints(r2, "axes", &n2);
  if (!n1 || n1 != n2 || n1 > PD_MAX_DIMS || memcmp(a1, a2, sizeof *a1 * (size_t)n1) != 0 ||
      attr_i(r1, "keepdims", 1) != 1 || attr_i(r2, "keepdims", 1) != 1 || r1->n_input > 1 || r2->n_input > 1)
    return false;
  const Onnx__NodeProto *all[9] = {r1, s, pw, r2, e, sq, dv};
  int k = 7;
  *p = (pattern){.type = "layer_norm", .x = r1->input[0], .y = dv->output[0], .eps = eps, .naxes = n1};
  memcpy(p->axes, a1, sizeof *a1 * (size_t)n1);
  if ((w = reader(im, gi, dv->output[0], "Mul")) && is_initializer(im, other_in(w, dv->output[0]))) {
    all[k++] = w, p->scale = other_in(w, dv->output[0]), p->y = w->output[0];
    if ((b = reader(im, gi, w->output[0], "Add")) && is_initializer(im, other_in(b, w->output[0])))
      all[k++] = b, p->bias = other_in(b, w->output[0]), p->y = b->output[0];
  }
  *nn = k;
  memcpy(nodes, all, sizeof *all * (size_t)k);
  return true;
}

/* Finds the chains (im->pat: for each node, 0, -1 skipped, or 1 + the
 * pattern emitted there). */
static pd_status find_patterns(imp *im) {
  const Onnx__GraphProto *g = im->g;
  graph_index gi = {0};
  pd_status st = PD_OK;
  if (!(im->pat = calloc(g->n_node + 1, sizeof *im->pat))) return oom(im);
  for (size_t i = 0; i < g->n_initializer && !st; i++)
    if (g->initializer[i]->name && smap_put(&gi.init, g->initializer[i]->name, (int)i)) st = oom(im);
  bool any = false;
  for (size_t i = 0; i < g->n_node && !st; i++) {
    const Onnx__NodeProto *n = g->node[i];
    any |= n->op_type && (strcmp(n->op_type, "Erf") == 0 || strcmp(n->op_type, "Sqrt") == 0);
    for (size_t j = 0; j < n->n_output && !st; j++)
      if (n->output[j][0] && smap_put(&gi.producer, n->output[j], (int)i)) st = oom(im);
    for (size_t j = 0; j < n->n_input && !st; j++)
      if (n->input[j][0] && smap_put(&gi.reader, n->input[j], (int)i)) st = oom(im);
  }
  for (size_t i = 0; i < g->n_node && !st && any; i++) {
    const Onnx__NodeProto *n = g->node[i], *nodes[9];
    pattern p;
    int nn = 0;
    bool hit =
        n->op_type && ((strcmp(n->op_type, "Erf") == 0 && n->n_input == 1 && match_gelu(im, &gi, n, &p, nodes, &nn)) ||
                       (strcmp(n->op_type, "Sqrt") == 0 && match_layer_norm(im, &gi, n, &p, nodes, &nn)));
    if (!hit) continue;
    int last = -1, at[9];
    bool free_ = true;
    for (int j = 0; j < nn; j++) {
      at[j] = node_at(im, nodes[j]);
      free_ &= at[j] >= 0 && im->pat[at[j]] == 0;
      last = at[j] > last ? at[j] : last;
    }
    if (!free_) continue;
    if (grow((void **)&im->pats, (size_t)im->npats, sizeof *im->pats)) {
      st = oom(im);
      break;
    }
    im->pats[im->npats++] = p;
    for (int j = 0; j < nn; j++) im->pat[at[j]] = -1;
    im->pat[last] = im->npats;
  }
  smap_free(&gi.producer), smap_free(&gi.reader), smap_free(&gi.init);
  return st;
}

/* The fused op of pattern p, at its last node. */
static pd_status emit_pattern(imp *im, const pattern *p) {
  if (strcmp(p->type, "gelu") == 0) {
    pd_status st = need_float(im, p->x);
    if (st) return st;
    attrs at = {0};
    at_s(&at, "approximate", "none");
    return emit1(im, "gelu", p->x, p->y, &at);
  }
  pd_tensor x;
  pd_status st = meta(im, p->x, &x);
  if (st) return st;
  bool pick[PD_MAX_DIMS] = {false};
  int64_t lo = x.ndim;
  for (int i = 0; i < p->naxes; i++) {
    int64_t a = p->axes[i] < 0 ? p->axes[i] + x.ndim : p->axes[i];
    if (a < 0 || a >= x.ndim || pick[a])
      return unsupported(im, "a layer norm (ReduceMean chain) over axis %lld", (long long)p->axes[i]);
    pick[a] = true, lo = a < lo ? a : lo;
  }
  if (lo + p->naxes != x.ndim)
    return unsupported(im, "a layer norm (ReduceMean chain) over dims that are not the last ones");
  return emit_layer_norm(im, p->x, p->scale, p->bias, lo, p->eps, p->y);
}

/* ---- the graph ---------------------------------------------------------------------------- */

static pd_status strlist_add(char ***list, int *n, const char *s) {
  if (grow((void **)list, (size_t)*n, sizeof **list)) return PD_ERR_RUNTIME;
  char **l = *list;
  if (!(l[*n] = strdup(s))) return PD_ERR_RUNTIME;
  (*n)++;
  return PD_OK;
}

static pd_status graph_inputs(imp *im) {
  const Onnx__GraphProto *g = im->g;
  for (size_t i = 0; i < g->n_input; i++) {
    const Onnx__ValueInfoProto *v = g->input[i];
    if (!v->name || is_initializer(im, v->name)) continue;
    const Onnx__TypeProto *tp = v->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
      return unsupported(im, "graph input \"%s\" is not a tensor", v->name);
    int dt = dtype_of(tp->tensor_type->elem_type);
    if (dt < 0)
      return unsupported(im, "graph input \"%s\" is %s (float, double, int32, int64, uint8 are supported)", v->name,
                         onnx_type_name(tp->tensor_type->elem_type));
    const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
    if (!sh) return unsupported(im, "graph input \"%s\" has no shape", v->name);
    if (sh->n_dim > PD_MAX_DIMS) return unsupported(im, "graph input \"%s\" has %zu dims", v->name, sh->n_dim);
    if (sh->n_dim == 0) { /* data comes in rows; a scalar can only be a constant (see is_scalar_input) */
      if (add_name(im, v->name)) return oom(im);
      continue;
    }
    int64_t dims[PD_MAX_DIMS];
    int wk = smap_get(&im->weights, v->name);
    for (size_t d = 0; d < sh->n_dim; d++) {
      const Onnx__TensorShapeProto__Dimension *dm = sh->dim[d];
      bool known = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dm->dim_value >= 0;
      if (!known && (d > 0 || wk > 0))
        return unsupported(im, "graph input \"%s\" has an unknown dim %zu; only the first (the batch) may be unknown",
                           v->name, d);
      dims[d] = known ? dm->dim_value : -1;
    }
    if (wk > 0) { /* a weight given at run time: from the parameter directory */
      pd_status st = declare(im, v->name, (pd_dtype)dt, (int)sh->n_dim, dims, wk == 1 ? "PARAM" : "STATE");
      if (st) return st;
      if (add_name(im, v->name) || strlist_add(&im->out->weights, &im->out->nweights, v->name)) return oom(im);
      continue;
    }
    /* the exported batch: -1 where nothing needs its value (see imp.relax) */
    if (sh->n_dim >= 2 && dims[0] > 0) {
      if (!im->out->batch_from) im->out->batch_from = dims[0];
      if (im->relax && dims[0] != im->out->batch_from)
        return batch_dep(im, "graph inputs of different first dims (%lld, %lld): not one batch",
                         (long long)im->out->batch_from, (long long)dims[0]);
      if (im->relax) dims[0] = -1;
    }
    pd_status st = declare(im, v->name, (pd_dtype)dt, (int)sh->n_dim, dims, "DATA");
    if (st) return st;
    if (add_name(im, v->name) || strlist_add(&im->out->inputs, &im->out->ninputs, v->name)) return oom(im);
  }
  return PD_OK;
}

/* The model's ai.onnx opset, which must be one the mappings cover. */
static pd_status check_opset(imp *im) {
  const Onnx__ModelProto *m = im->m;
  im->opset = -1;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const char *d = m->opset_import[i]->domain;
    if (!d || !d[0] || strcmp(d, "ai.onnx") == 0) im->opset = m->opset_import[i]->version;
  }
  im->out->opset = im->opset;
  if (im->opset < 0)
    return unsupported(im, "the model imports no ai.onnx opset (only other domains: %s)",
                       m->n_opset_import && m->opset_import[0]->domain ? m->opset_import[0]->domain : "none");
  if (im->opset < PD_ONNX_OPSET_MIN || im->opset > PD_ONNX_OPSET_MAX) {
    char label[32];
    snprintf(label, sizeof label, "opset %lld", (long long)im->opset);
    im->out->unsupported_op = strdup(label);
  }
  if (im->opset < PD_ONNX_OPSET_MIN || im->opset > PD_ONNX_OPSET_MAX)
    return unsupported(im, "opset %lld (opsets %d to %d are)", (long long)im->opset, PD_ONNX_OPSET_MIN,
                       PD_ONNX_OPSET_MAX);
  return PD_OK;
}

/* Names are optional in the schema; everything after compares them. */
static pd_status check_names(imp *im) {
  const Onnx__GraphProto *g = im->g;
  for (size_t i = 0; i < g->n_input; i++)
    if (!g->input[i]->name) return pd_errorf(im->err, PD_ERR_INPUT, "%s: graph input #%zu has no name", im->file, i);
  for (size_t i = 0; i < g->n_output; i++)
    if (!g->output[i]->name) return pd_errorf(im->err, PD_ERR_INPUT, "%s: graph output #%zu has no name", im->file, i);
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t j = 0; j < g->node[i]->n_attribute; j++)
      if (!g->node[i]->attribute[j]->name)
        return pd_errorf(im->err, PD_ERR_INPUT, "%s: node #%zu: attribute #%zu has no name", im->file, i, j);
  return PD_OK;
}

/* Each initializer, named once and of a dtype we have, as a constant. */
static pd_status import_initializers(imp *im) {
  const Onnx__GraphProto *g = im->g;
  pd_status st;
  for (size_t i = 0; i < g->n_initializer; i++) {
    const Onnx__TensorProto *tp = g->initializer[i];
    char what[512];
    snprintf(what, sizeof what, "%s: initializer \"%s\"", im->file, tp->name ? tp->name : "");
    if (!tp->name || !tp->name[0])
      return pd_errorf(im->err, PD_ERR_INPUT, "%s: initializer #%zu has no name", im->file, i);
    if (find_const(im, tp->name))
      return pd_errorf(im->err, PD_ERR_INPUT, "%s: initializer #%zu: \"%s\" is the name of an earlier initializer too",
                       im->file, i, tp->name);
    if (dtype_of(tp->data_type) < 0)
      return unsupported(im, "initializer \"%s\" is %s", tp->name, onnx_type_name(tp->data_type));
    pd_tensor t;
    if ((st = pd_onnx_tensor(tp, what, &t, im->err))) return st;
    if ((st = add_const(im, tp->name, &t, true))) {
      pd_tensor_release(&t);
      return st;
    }
  }
  return PD_OK;
}

/* Node i, checked (its domain, a mapping for its type and opset, its
 * inputs and outputs) and mapped. */
static pd_status import_node(imp *im, size_t i) {
  const Onnx__NodeProto *n = im->g->node[i];
  im->node = n, im->node_index = (int)i;
  if (!n->op_type) return pd_errorf(im->err, PD_ERR_INPUT, "%s: node #%zu has no op_type", im->file, i);
  if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
    return unsupported(im, "domain \"%s\"", n->domain);
  map_fn fn = NULL;
  int since = 0, min_in = 0;
  for (size_t j = 0; j < sizeof maps / sizeof maps[0]; j++)
    if (strcmp(maps[j].type, n->op_type) == 0) fn = maps[j].fn, since = maps[j].since, min_in = maps[j].min_in;
  if (!fn) return unsupported(im, "no mapping for op type %s", n->op_type);
  if (im->opset < since)
    return unsupported(im, "%s is mapped from opset %d on (its earlier versions differ)", n->op_type, since);
  if ((int)n->n_input < min_in)
    return pd_errorf(im->err, PD_ERR_INPUT, "%s: node #%zu (%s) has %zu inputs; it needs at least %d", im->file, i,
                     n->op_type, n->n_input, min_in);
  for (int j = 0; j < min_in; j++)
    if (!n->input[j][0])
      return pd_errorf(im->err, PD_ERR_INPUT, "%s: node #%zu (%s): its input #%d is required but given as \"\"",
                       im->file, i, n->op_type, j);
  bool any_out = out_at(n, 0) != NULL;
  bool recurrent = fn == map_lstm || fn == map_gru || fn == map_rnn; /* each output optional */
  for (size_t j = 1; j < n->n_output && recurrent; j++) any_out |= out_at(n, j) != NULL;
  if (!any_out) return pd_errorf(im->err, PD_ERR_INPUT, "%s: node #%zu (%s) has no output", im->file, i, n->op_type);
  for (size_t j = 0; j < n->n_output; j++) /* each value assigned once */
    if (n->output[j][0] && has_name(im, n->output[j]))
      return pd_errorf(im->err, PD_ERR_INPUT, "%s: node #%zu (%s) writes \"%s\", which is already defined", im->file, i,
                       n->op_type, n->output[j]);
  for (size_t j = 0; j < n->n_input; j++) /* every input known by now */
    if (n->input[j][0] && !has_name(im, n->input[j]))
      return pd_errorf(im->err, PD_ERR_INPUT, "%s: node #%zu (%s) reads \"%s\", which nothing before it computes",
                       im->file, i, n->op_type, n->input[j]);
  if (strcmp(n->op_type, "Constant") != 0 && min_in > 0 && !in_at(n, 0))
    return pd_errorf(im->err, PD_ERR_INPUT, "%s: node #%zu (%s) has no first input", im->file, i, n->op_type);
  bool folded;
  pd_status st = try_fold(im, n, &folded);
  return st || folded ? st : fn(im, n);
}

/* The graph's outputs: each computed, and listed. */
static pd_status import_outputs(imp *im) {
  const Onnx__GraphProto *g = im->g;
  pd_status st;
  for (size_t i = 0; i < g->n_output; i++) {
    const char *name = g->output[i]->name;
    if (!name || !has_name(im, name))
      return pd_errorf(im->err, PD_ERR_INPUT, "%s: graph output \"%s\" is not computed", im->file, name ? name : "");
    if ((st = use_as(im, name, NULL))) return st;
    if (strlist_add(&im->out->outputs, &im->out->noutputs, name)) return oom(im);
  }
  return PD_OK;
}

/* The NetDesc text: a header saying where it came from, then the net. */
static pd_status write_text(imp *im) {
  const Onnx__ModelProto *m = im->m;
  const Onnx__GraphProto *g = im->g;
  pd_status st;
  pd_buf all = {0};
  pd_buf_printf(&all, "# imported from ");
  put_comment(&all, im->file);
  pd_buf_printf(&all, " (ONNX opset %lld", (long long)im->opset);
  if (m->producer_name && m->producer_name[0]) {
    pd_buf_printf(&all, ", producer ");
    put_comment(&all, m->producer_name);
  }
  pd_buf_printf(&all, ")\n# outputs:");
  for (int i = 0; i < im->out->noutputs; i++) {
    pd_buf_printf(&all, " ");
    put_comment(&all, im->out->outputs[i]);
  }
  pd_buf_printf(&all, "\nname: ");
  put_str(&all, g->name ? g->name : "");
  pd_buf_printf(&all, "\n");
  pd_buf body = {0};
  if ((st = text(im, &body))) {
    pd_buf_free(&body);
    pd_buf_free(&all);
    return st;
  }
  if (pd_buf_append(&all, body.data, body.len) || pd_buf_append(&all, "", 1)) st = oom(im);
  pd_buf_free(&body);
  im->out->text = all.data;
  im->out->len = all.len ? all.len - 1 : 0;
  return st;
}

/* The mapping of node n: its entry in maps, or -1 (no mapping for its
 * domain, type or the model's opset). */
static int map_of(const imp *im, const Onnx__NodeProto *n) {
  if (!n->op_type || (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)) return -1;
  for (size_t j = 0; j < sizeof maps / sizeof maps[0]; j++)
    if (strcmp(maps[j].type, n->op_type) == 0) return im->opset >= maps[j].since ? (int)j : -1;
  return -1;
}

/* Every node without a mapping, in one message: each op type with its
 * count and first node (a single one is left to import_node's message). */
static pd_status list_unmapped(imp *im) {
  const Onnx__GraphProto *g = im->g;
  struct un {
    const char *type;
    int count;
    size_t first;
  } *u = NULL;
  int nu = 0, total = 0;
  smap seen = {0};
  pd_status st = PD_OK;
  for (size_t i = 0; i < g->n_node && !st; i++) {
    const Onnx__NodeProto *n = g->node[i];
    if (!n->op_type || im->pat[i] || map_of(im, n) >= 0) continue;
    total++;
    int k = smap_get(&seen, n->op_type);
    if (k >= 0) {
      u[k].count++;
      continue;
    }
    if (grow((void **)&u, (size_t)nu, sizeof *u) || smap_put(&seen, n->op_type, nu)) {
      st = oom(im);
      break;
    }
    u[nu++] = (struct un){n->op_type, 1, i};
  }
  if (!st && total > 1) {
    pd_buf b = {0};
    for (int k = 0; k < nu; k++) {
      const Onnx__NodeProto *n = g->node[u[k].first];
      pd_buf_printf(&b, "%s%s%s%s (%d node%s, first: node #%zu ", k ? ", " : "",
                    n->domain && n->domain[0] ? n->domain : "", n->domain && n->domain[0] ? ":" : "", u[k].type,
                    u[k].count, u[k].count > 1 ? "s" : "", u[k].first);
      if (n->name && n->name[0])
        pd_buf_printf(&b, "\"%.200s\")", n->name);
      else
        pd_buf_printf(&b, "(unnamed, output \"%.200s\"))", n->n_output ? n->output[0] : "");
    }
    im->out->unsupported = true;
    if (!im->out->unsupported_op) im->out->unsupported_op = strdup(u[0].type);
    st = pd_errorf(im->err, PD_ERR_INPUT, "%s: unsupported: %d nodes of %d op type%s have no mapping at opset %lld: %s",
                   im->file, total, nu, nu > 1 ? "s" : "", (long long)im->opset, b.data ? b.data : "");
    pd_buf_free(&b);
  }
  smap_free(&seen);
  free(u);
  return st;
}

/* The graph inputs that BatchNormalization reads as scale, B (1) or mean,
 * var (2): weights, not data, unless an initializer gives them. */
static pd_status find_weights(imp *im) {
  const Onnx__GraphProto *g = im->g;
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *n = g->node[i];
    if (!n->op_type || strcmp(n->op_type, "BatchNormalization") != 0) continue;
    for (size_t j = 1; j <= 4 && j < n->n_input; j++)
      if (smap_get(&im->graph_inputs, n->input[j]) >= 0 && !is_initializer(im, n->input[j]) &&
          smap_put(&im->weights, n->input[j], j <= 2 ? 1 : 2))
        return oom(im);
  }
  return PD_OK;
}

/* With the batch made -1, each graph output must still have it first. */
static pd_status check_batched_outputs(imp *im) {
  for (int i = 0; i < im->out->noutputs && im->relax && im->out->batch_from; i++) {
    pd_tensor t;
    pd_status st = meta(im, im->out->outputs[i], &t);
    if (st) return st;
    if (t.ndim == 0 || t.dims[0] != -1)
      return batch_dep(im, "graph output \"%s\" does not have the batch as its first dim", im->out->outputs[i]);
  }
  return PD_OK;
}

static pd_status run_import(imp *im) {
  const Onnx__GraphProto *g = im->g;
  pd_status st;
  if ((st = check_opset(im))) return st;
  if (g->n_sparse_initializer) return unsupported(im, "sparse initializers");
  if ((st = check_names(im))) return st;
  for (size_t i = 0; i < g->n_input; i++)
    if (smap_get(&im->graph_inputs, g->input[i]->name) < 0 && smap_put(&im->graph_inputs, g->input[i]->name, (int)i))
      return oom(im);
  if ((st = count_uses(im)) || (st = import_initializers(im)) || (st = find_patterns(im)) || (st = list_unmapped(im)) ||
      (st = find_weights(im)) || (st = graph_inputs(im)))
    return st;
  if ((st = pd_onnx_import_metadata(im, im->m, false))) return st;
  for (size_t i = 0; i < g->n_node; i++) {
    if (im->pat[i] < 0) continue;
    im->node = g->node[i], im->node_index = (int)i;
    if ((st = im->pat[i] ? emit_pattern(im, &im->pats[im->pat[i] - 1]) : import_node(im, i))) return st;
  }
  im->node = NULL;
  if ((st = pd_onnx_import_metadata(im, im->m, true))) return st;
  if ((st = import_outputs(im)) || (st = check_batched_outputs(im))) return st;
  /* the whole net must build */
  if ((st = build_net(im))) return st;
  return write_text(im);
}

static pd_status import_once(const Onnx__ModelProto *m, const char *file, pd_onnx_import *out, pd_error *err,
                             bool relax) {
  memset(out, 0, sizeof *out);
  imp im = {.m = m, .g = m->graph, .file = file, .err = err, .out = out, .relax = relax};
  pd_status st = im.g ? run_import(&im) : pd_errorf(err, PD_ERR_INPUT, "%s: not an ONNX model (no graph)", file);
  for (int i = 0; i < im.nk; i++) pd_tensor_release(&im.k[i].t);
  free(im.k);
  for (int i = 0; i < im.nowned; i++) free(im.owned[i]);
  free(im.owned);
  smap_free(&im.kmap), smap_free(&im.names), smap_free(&im.fresh), smap_free(&im.uses);
  smap_free(&im.graph_inputs), smap_free(&im.mmap), smap_free(&im.weights);
  free(im.pat), free(im.pats);
  free(im.mnames), free(im.mmeta), free(im.mkind), free(im.pio);
  pd_buf_free(&im.pend);
  pd_buf_free(&im.vars);
  pd_buf_free(&im.ops);
  if (im.net) pd_net_free(im.net);
  if (st) {
    free(out->text);
    out->text = NULL;
  }
  return st;
}

/* First with the exported batch made -1; when that fails (a node needs
 * its value, or the net does not build that way), again as exported. */
pd_status pd_onnx_import_model(const Onnx__ModelProto *m, const char *file, pd_onnx_import *out, pd_error *err) {
  pd_status st = import_once(m, file, out, err, true);
  if (!st) out->batch_relaxed = out->batch_from > 0;
  if (!st || !out->batch_from) return st;
  const char *msg = err->msg; /* the node and why, without the file */
  size_t fl = strlen(file);
  if (strncmp(msg, file, fl) == 0 && msg[fl] == ':' && msg[fl + 1] == ' ') msg += fl + 2;
  if (strncmp(msg, "unsupported: ", 13) == 0) msg += 13;
  char *why = strdup(msg);
  pd_onnx_import_free(out);
  st = import_once(m, file, out, err, false);
  if (!st)
    out->batch_kept = why;
  else
    free(why);
  return st;
}

void pd_onnx_import_free(pd_onnx_import *o) {
  free(o->text);
  for (int i = 0; i < o->nvalues; i++) {
    free(o->values[i].name);
    pd_tensor_release(&o->values[i].t);
  }
  free(o->values);
  for (int i = 0; i < o->ninputs; i++) free(o->inputs[i]);
  free(o->inputs);
  for (int i = 0; i < o->noutputs; i++) free(o->outputs[i]);
  free(o->outputs);
  free(o->need_const);
  free(o->unsupported_op);
  free(o->batch_kept);
  for (int i = 0; i < o->nweights; i++) free(o->weights[i]);
  free(o->weights);
  memset(o, 0, sizeof *o);
}

/* ---- the parameter directory ---------------------------------------------------- */

static void remove_tree(const char *dir, const pd_onnx_import *im) {
  char path[PATH_MAX];
  for (int i = 0; i < im->nvalues; i++) {
    char *f = pd_checkpoint_file_name(im->values[i].name);
    if (f && snprintf(path, sizeof path, "%s/%s", dir, f) < (int)sizeof path) unlink(path);
    free(f);
  }
  rmdir(dir);
}

pd_status pd_onnx_save_values(const pd_onnx_import *im, const char *dir, pd_error *err) {
  struct stat sb;
  if (stat(dir, &sb) == 0) {
    DIR *d = S_ISDIR(sb.st_mode) ? opendir(dir) : NULL;
    bool empty = d != NULL;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) empty &= strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
    if (d) closedir(d);
    if (!empty)
      return pd_errorf(err, PD_ERR_INPUT, "%s: exists and is not an empty directory; give a new one for the parameters",
                       dir);
  }
  char tmp[PATH_MAX], path[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", dir) >= (int)sizeof tmp)
    return pd_errorf(err, PD_ERR_INPUT, "%s: path too long", dir);
  if (!mkdtemp(tmp)) {
    char e[128];
    return pd_errorf(err, pd_errno_status(errno), "%s: cannot create a directory beside it: %s", dir,
                     pd_errno_str(errno, e, sizeof e));
  }
  pd_status st = PD_OK;
  for (int i = 0; i < im->nvalues && !st; i++) {
    char *f = pd_checkpoint_file_name(im->values[i].name);
    if (!f || snprintf(path, sizeof path, "%s/%s", tmp, f) >= (int)sizeof path)
      st = pd_errorf(err, PD_ERR_INPUT, "parameter \"%s\": name too long for a file", im->values[i].name);
    else
      st = pd_npy_write(path, &im->values[i].t, err);
    free(f);
  }
  if (!st && rename(tmp, dir) != 0) {
    char e[128];
    st = pd_errorf(err, pd_errno_status(errno), "%s: %s", dir, pd_errno_str(errno, e, sizeof e));
  }
  if (st) remove_tree(tmp, im);
  return st;
}

/* ---- services lent to onnx_import_flow.c (onnx_import_int.h) ---------------------- */

int64_t pd_onnx_im_opset(const imp *im) { return im->opset; }
pd_status pd_onnx_im_unsupported(imp *im, const char *why) { return unsupported(im, "%s", why); }
pd_status pd_onnx_im_bad(imp *im, const char *why) {
  return pd_errorf(im->err, PD_ERR_INPUT, "%s: node #%d (%s): %s", im->file, im->node_index,
                   im->node ? im->node->op_type : "", why);
}
const char *pd_onnx_im_fresh(imp *im, const char *base, const char *what) { return fresh(im, base, what); }
bool pd_onnx_im_has_name(const imp *im, const char *name) { return has_name(im, name); }
pd_status pd_onnx_im_add_name(imp *im, const char *name) { return add_name(im, name); }
pd_status pd_onnx_im_meta(imp *im, const char *name, pd_tensor *out) { return meta(im, name, out); }
pd_status pd_onnx_im_set_meta(imp *im, const char *name, const pd_tensor *t) {
  return set_meta(im, name, t, PD_VAR_TEMP);
}
const pd_tensor *pd_onnx_im_const(imp *im, const char *name) {
  konst *k = find_const(im, name);
  return k ? &k->t : NULL;
}
pd_status pd_onnx_im_need_const(imp *im, const char *name, const char *what, const pd_tensor **out) {
  konst *k;
  pd_status st = need_const(im, name, what, &k);
  *out = st ? NULL : &k->t;
  return st;
}
pd_status pd_onnx_im_add_const(imp *im, const char *name, pd_tensor *t) {
  pd_status st = add_const(im, name, t, false);
  return st ? st : add_name(im, name);
}
pd_status pd_onnx_im_use(imp *im, const char *name) { return use_as(im, name, NULL); }
pd_status pd_onnx_im_emit(imp *im, const char *type, int nin, const char *const *ins, int nout, const char *const *outs,
                          const char *text) {
  attrs a = {0};
  if (text && text[0]) pd_buf_printf(&a.b, "%s", text);
  return emit(im, type, nin, ins, nout, outs, &a);
}
pd_status pd_onnx_im_emit_raw(imp *im, const char *text) {
  return pd_buf_append(&im->ops, text, strlen(text)) ? oom(im) : PD_OK;
}
pd_status pd_onnx_im_import_nodes(imp *im, const Onnx__GraphProto *g, pd_buf *ops) {
  /* the subgraph's nodes in place of the graph's, its inputs and
   * initializers still the graph's (outer names resolve as before) */
  const Onnx__GraphProto *g0 = im->g;
  const Onnx__NodeProto *n0 = im->node;
  int i0 = im->node_index;
  Onnx__GraphProto sub = *g0;
  sub.node = g->node, sub.n_node = g->n_node;
  pd_buf saved = im->ops;
  if (ops) im->ops = *ops;
  im->g = &sub;
  pd_status st = PD_OK;
  for (size_t i = 0; i < g->n_node && !st; i++) st = import_node(im, i);
  if (!st) st = infer_pending(im);
  im->g = g0;
  if (ops) *ops = im->ops, im->ops = saved;
  if (!st) im->node = n0, im->node_index = i0;
  return st;
}
void pd_onnx_im_put_str(pd_buf *b, const char *s) { put_str(b, s); }
pd_status pd_onnx_im_declare_carried(imp *im, const char *name) {
  konst *k = find_const(im, name);
  if (!k || k->declared) return PD_OK;
  pd_status st = use_as(im, name, "STATE");
  /* its declaration is the last: it starts at zero where no value is loaded */
  static const char tail[] = " }\n", init[] = " init { type: \"constant\" value: 0 } }\n";
  size_t n = sizeof tail - 1;
  if (st || im->vars.len < n || memcmp(im->vars.data + im->vars.len - n, tail, n) != 0) return st;
  im->vars.len -= n;
  return pd_buf_append(&im->vars, init, sizeof init - 1) ? oom(im) : PD_OK;
}
void pd_onnx_im_swap_ops(imp *im, pd_buf *b) {
  pd_buf t = im->ops;
  im->ops = *b, *b = t;
}
