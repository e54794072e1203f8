/* onnx_export.c — a built network as an ONNX model (opset 13): the ops the
 * fetch targets need, each written as the ONNX nodes that compute the same
 * thing in inference (dropout passes through, batch_norm uses the running
 * statistics); data variables become graph inputs (a -1 batch a symbolic
 * dim "N"), parameters and state initializers with their values from the
 * scope. Variable names are kept, so an exported model imports back into a
 * net with the same names. The table at the end lists the ops with an
 * ONNX form. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_export.h"

#include "onnx.pb-c.h"
#include "base/util.h"
#include "text/textformat.h"

typedef struct ex {
  const pd_net *net;
  pd_scope *scope;
  pd_error *err;
  Onnx__GraphProto *g;
  size_t cap_nodes, cap_inits;
  bool oom;
  int ntmp;
  int *readers;    /* per variable: the active ops reading it, and a target */
  bool *written;   /* per variable: its initializer already written (permuted) */
  const pd_op *op; /* the op being written, for messages */
  char **carried;  /* pairs: a state written back by a recurrent op, the ONNX value of its final value */
  int ncarried;
} ex;

static void *grow(ex *e, void *p, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return p;
  size_t c = *cap ? *cap * 2 : 16;
  void *q = realloc(p, c * size);
  if (!q) {
    e->oom = true;
    return NULL;
  }
  *cap = c;
  return q;
}

static char *dup(ex *e, const char *s) {
  char *d = strdup(s);
  if (!d) e->oom = true;
  return d;
}

static int32_t onnx_dtype(pd_dtype t) {
  static const int32_t map[] = {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE,
                                ONNX__TENSOR_PROTO__DATA_TYPE__INT32, ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
                                ONNX__TENSOR_PROTO__DATA_TYPE__UINT8};
  return map[t];
}

Onnx__TensorProto *pd_onnx_tensor_proto(const char *name, const pd_tensor *t) {
  Onnx__TensorProto *tp = malloc(sizeof *tp);
  if (!tp) return NULL;
  onnx__tensor_proto__init(tp);
  size_t bytes = pd_tensor_bytes(t);
  tp->has_data_type = true;
  tp->data_type = onnx_dtype(t->dtype);
  tp->name = strdup(name);
  tp->dims = malloc(sizeof *tp->dims * (size_t)(t->ndim + 1));
  tp->raw_data.data = malloc(bytes + 1);
  if (!tp->name || !tp->dims || !tp->raw_data.data) { /* the fields the init left as defaults are not freed */
    free(tp->name), free(tp->dims), free(tp->raw_data.data);
    free(tp);
    return NULL;
  }
  memcpy(tp->dims, t->dims, sizeof *tp->dims * (size_t)t->ndim);
  tp->n_dims = (size_t)t->ndim;
  if (bytes) memcpy(tp->raw_data.data, pd_tensor_data(t), bytes); /* little-endian, as ONNX's raw_data */
  tp->raw_data.len = bytes;
  tp->has_raw_data = true;
  return tp;
}

/* A name for an intermediate value: "<base>.onnx<k>", whatever base's
 * length (a name cut short could be given twice). */
static char *tmp_name(ex *e, const char *base) {
  size_t size = strlen(base) + 32;
  char *buf = malloc(size);
  if (!buf) {
    e->oom = true;
    return NULL;
  }
  do snprintf(buf, size, "%s.onnx%d", base, e->ntmp++);
  while (pd_net_var(e->net, buf) >= 0);
  return buf;
}

/* Appends a node; its attributes are added with the at_* helpers. */
static Onnx__NodeProto *node(ex *e, const char *type, int nin, const char *const *ins, int nout,
                             const char *const *outs) {
  Onnx__NodeProto *n = malloc(sizeof *n);
  Onnx__NodeProto **v = grow(e, e->g->node, &e->cap_nodes, e->g->n_node, sizeof *v);
  if (!n || !v) {
    free(n);
    e->oom = true;
    return NULL;
  }
  e->g->node = v;
  onnx__node_proto__init(n);
  v[e->g->n_node++] = n;
  n->op_type = dup(e, type);
  n->input = calloc((size_t)nin + 1, sizeof *n->input);
  n->output = calloc((size_t)nout + 1, sizeof *n->output);
  if (!n->input || !n->output) {
    e->oom = true;
    return n;
  }
  for (int i = 0; i < nin; i++) n->input[n->n_input++] = dup(e, ins[i]);
  for (int i = 0; i < nout; i++) n->output[n->n_output++] = dup(e, outs[i]);
  char name[64];
  snprintf(name, sizeof name, "%s_%zu", type, e->g->n_node - 1);
  n->name = dup(e, name);
  return n;
}

static Onnx__NodeProto *node1(ex *e, const char *type, const char *in, const char *out) {
  return node(e, type, 1, (const char *[]){in}, 1, (const char *[]){out});
}

static Onnx__AttributeProto *new_attr(ex *e, Onnx__NodeProto *n, const char *name) {
  if (!n) return NULL;
  Onnx__AttributeProto *a = malloc(sizeof *a), **v = realloc(n->attribute, sizeof *v * (n->n_attribute + 1));
  if (v) n->attribute = v;
  if (!a || !v) {
    free(a);
    e->oom = true;
    return NULL;
  }
  onnx__attribute_proto__init(a);
  a->name = dup(e, name);
  a->has_type = true;
  v[n->n_attribute++] = a;
  return a;
}

static void at_i(ex *e, Onnx__NodeProto *n, const char *name, int64_t v) {
  Onnx__AttributeProto *a = new_attr(e, n, name);
  if (a) a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_i = true, a->i = v;
}
static void at_f(ex *e, Onnx__NodeProto *n, const char *name, double v) {
  Onnx__AttributeProto *a = new_attr(e, n, name);
  if (a) a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, a->has_f = true, a->f = (float)v;
}
static void at_ints(ex *e, Onnx__NodeProto *n, const char *name, int count, const int64_t *v) {
  Onnx__AttributeProto *a = new_attr(e, n, name);
  if (!a) return;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  if (!(a->ints = malloc(sizeof *a->ints * (size_t)(count + 1)))) {
    e->oom = true;
    return;
  }
  memcpy(a->ints, v, sizeof *v * (size_t)count);
  a->n_ints = (size_t)count;
}

/* A TensorProto named `name` holding t. */
static Onnx__TensorProto *make_tensor(ex *e, const char *name, const pd_tensor *t) {
  Onnx__TensorProto *tp = pd_onnx_tensor_proto(name, t);
  if (!tp) e->oom = true;
  return tp;
}

/* An initializer holding t (a parameter or state). */
static void add_init(ex *e, const char *name, const pd_tensor *t) {
  Onnx__TensorProto **v = grow(e, e->g->initializer, &e->cap_inits, e->g->n_initializer, sizeof *v);
  if (!v) return;
  e->g->initializer = v;
  Onnx__TensorProto *tp = make_tensor(e, name, t);
  if (tp) v[e->g->n_initializer++] = tp;
}

/* A Constant node computing t: constants the op's attributes imply (a
 * scale, a shape), which an import keeps as untrained state. */
static void add_constant(ex *e, const char *name, const pd_tensor *t) {
  Onnx__NodeProto *n = node(e, "Constant", 0, NULL, 1, (const char *[]){name});
  Onnx__AttributeProto *a = new_attr(e, n, "value");
  if (!a) return;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
  a->t = make_tensor(e, "", t);
}

/* A Constant: a scalar of dtype dt, or int64s. */
static char *const_scalar(ex *e, const char *base, pd_dtype dt, double value) {
  char *name = tmp_name(e, base);
  pd_tensor t;
  pd_tensor_init(&t, dt);
  if (!name || pd_tensor_set_dims(&t, 0, NULL, e->err) || pd_tensor_alloc(&t, e->err)) {
    e->oom = true;
    return name;
  }
  pd_tensor_set(&t, 0, value);
  add_constant(e, name, &t);
  pd_tensor_release(&t);
  return name;
}

static char *const_i64s(ex *e, const char *base, int n, const int64_t *v) {
  char *name = tmp_name(e, base);
  pd_tensor t;
  pd_tensor_init(&t, PD_I64);
  int64_t dim = n;
  if (!name || pd_tensor_set_dims(&t, 1, &dim, e->err) || pd_tensor_alloc(&t, e->err)) {
    e->oom = true;
    return name;
  }
  if (n) memcpy(pd_tensor_data(&t), v, sizeof *v * (size_t)n);
  add_constant(e, name, &t);
  pd_tensor_release(&t);
  return name;
}

/* ---- reading our op ---- */

static const char *in_name(ex *e, int slot, int i) {
  const pd_arg *a = &e->op->in[slot];
  return i < a->n && a->vars[i] >= 0 ? e->net->vars[a->vars[i]].name : NULL;
}
static const char *out_name(ex *e, int slot) {
  const pd_arg *a = &e->op->out[slot];
  return a->n && a->vars[0] >= 0 ? e->net->vars[a->vars[0]].name : NULL;
}
static const pd_attr *attr(ex *e, const char *name) {
  for (int i = 0; i < e->op->def->n_attrs; i++)
    if (strcmp(e->op->def->attrs[i].name, name) == 0) return &e->op->attrs[i];
  return NULL;
}
static const pd_tensor *in_meta(ex *e, int slot) {
  const pd_arg *a = &e->op->in[slot];
  return &e->net->vars[a->vars[0]].meta;
}

static pd_status fail(ex *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pd_status fail(ex *e, const char *fmt, ...) {
  char why[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  char label[256];
  return pd_errorf(e->err, PD_ERR_INPUT, "%s: cannot export %s to ONNX: %s", e->net->file,
                   pd_net_op_label(e->net, e->op->index, label, sizeof label), why);
}

/* ---- the ops ---- */

typedef pd_status (*export_fn)(ex *e);

static pd_status same1(ex *e, const char *type) {
  node1(e, type, in_name(e, 0, 0), out_name(e, 0));
  return PD_OK;
}
static pd_status ex_relu(ex *e) { return same1(e, "Relu"); }
static pd_status ex_sigmoid(ex *e) { return same1(e, "Sigmoid"); }
static pd_status ex_tanh(ex *e) { return same1(e, "Tanh"); }
static pd_status ex_identity(ex *e) { return same1(e, "Identity"); }
static pd_status ex_matmul(ex *e) {
  node(e, "MatMul", 2, (const char *[]){in_name(e, 0, 0), in_name(e, 1, 0)}, 1, (const char *[]){out_name(e, 0)});
  return PD_OK;
}
static pd_status softmax_like(ex *e, const char *type) {
  at_i(e, node1(e, type, in_name(e, 0, 0), out_name(e, 0)), "axis", -1);
  return PD_OK;
}
static pd_status ex_softmax(ex *e) { return softmax_like(e, "Softmax"); }
static pd_status ex_log_softmax(ex *e) { return softmax_like(e, "LogSoftmax"); }

static pd_status binary(ex *e, const char *type) {
  node(e, type, 2, (const char *[]){in_name(e, 0, 0), in_name(e, 1, 0)}, 1, (const char *[]){out_name(e, 0)});
  return PD_OK;
}
static pd_status ex_add(ex *e) { return binary(e, "Add"); }
static pd_status ex_sub(ex *e) { return binary(e, "Sub"); }
static pd_status ex_mul(ex *e) { return binary(e, "Mul"); }
static pd_status ex_div(ex *e) { return binary(e, "Div"); }

/* Y lines up with X from `axis`: reshaped with trailing 1s (0s keep Y's
 * own dims) so NumPy broadcasting lines it up the same. */
static pd_status ex_elementwise_add(ex *e) {
  const pd_tensor *x = in_meta(e, 0), *y = in_meta(e, 1);
  int64_t axis = attr(e, "axis")->i;
  const char *Y = in_name(e, 1, 0);
  char *y2 = NULL, *shape = NULL;
  if (axis != -1 && axis != x->ndim - y->ndim) {
    int64_t dims[PD_MAX_DIMS];
    int n = (int)(x->ndim - axis);
    for (int i = 0; i < n; i++) dims[i] = i < y->ndim ? 0 : 1;
    shape = const_i64s(e, Y, n, dims);
    y2 = tmp_name(e, Y);
    node(e, "Reshape", 2, (const char *[]){Y, shape}, 1, (const char *[]){y2});
    Y = y2;
  }
  node(e, "Add", 2, (const char *[]){in_name(e, 0, 0), Y}, 1, (const char *[]){out_name(e, 0)});
  free(y2), free(shape);
  return PD_OK;
}

/* X as a matrix [N, K] for Gemm/MatMul. */
static char *as_matrix(ex *e, const char *X, const pd_tensor *x, int64_t axis) {
  if (x->ndim == 2 && axis == 1) return dup(e, X);
  char *f = tmp_name(e, X);
  at_i(e, node1(e, "Flatten", X, f), "axis", axis);
  return f;
}

static pd_status ex_fc(ex *e) {
  const char *act = attr(e, "act")->s, *out = out_name(e, 0), *B = in_name(e, 2, 0);
  char *x2 = as_matrix(e, in_name(e, 0, 0), in_meta(e, 0), 1),
       *g = strcmp(act, "none") ? tmp_name(e, out) : dup(e, out);
  const char *ins[] = {x2, in_name(e, 1, 0), B};
  node(e, "Gemm", B ? 3 : 2, ins, 1, (const char *[]){g});
  if (strcmp(act, "none") != 0)
    node1(e, strcmp(act, "relu") == 0 ? "Relu" : strcmp(act, "sigmoid") == 0 ? "Sigmoid" : "Tanh", g, out);
  free(x2), free(g);
  return PD_OK;
}

static pd_status ex_mul_op(ex *e) {
  const pd_tensor *x = in_meta(e, 0), *y = in_meta(e, 1);
  int64_t xc = attr(e, "x_num_col_dims")->i;
  if (attr(e, "y_num_col_dims")->i != 1 || y->ndim != 2 || (xc != 1 && xc != x->ndim - 1))
    return fail(e, "only y_num_col_dims = 1 with a matrix Y, and x_num_col_dims 1 or X's rank - 1, have an ONNX form "
                   "here");
  /* x_num_col_dims = rank - 1: MatMul's batch dims are X's leading ones */
  char *x2 = xc == 1 ? as_matrix(e, in_name(e, 0, 0), x, 1) : dup(e, in_name(e, 0, 0));
  node(e, "MatMul", 2, (const char *[]){x2, in_name(e, 1, 0)}, 1, (const char *[]){out_name(e, 0)});
  free(x2);
  return PD_OK;
}

static pd_status ex_sum(ex *e) {
  const pd_arg *a = &e->op->in[0];
  const char *ins[64];
  if (a->n > 64) return fail(e, "more than 64 inputs");
  for (int i = 0; i < a->n; i++) ins[i] = e->net->vars[a->vars[i]].name;
  node(e, "Sum", a->n, ins, 1, (const char *[]){out_name(e, 0)});
  return PD_OK;
}

/* scale * X + bias (or scale * (X + bias)) as Mul and Add by constants. */
static pd_status ex_scale(ex *e) {
  double s = attr(e, "scale")->f, b = attr(e, "bias")->f;
  bool after = attr(e, "bias_after_scale")->b;
  const char *X = in_name(e, 0, 0), *out = out_name(e, 0);
  pd_dtype dt = in_meta(e, 0)->dtype;
  if (s == 1 && b == 0) return same1(e, "Identity");
  char *cs = s != 1 ? const_scalar(e, out, dt, s) : NULL, *cb = b != 0 ? const_scalar(e, out, dt, b) : NULL;
  char *mid = cs && cb ? tmp_name(e, out) : NULL;
  const char *first_out = mid ? mid : out;
  if (after || !cb || !cs) {
    if (cs) node(e, "Mul", 2, (const char *[]){X, cs}, 1, (const char *[]){first_out});
    if (cb) node(e, "Add", 2, (const char *[]){cs ? first_out : X, cb}, 1, (const char *[]){out});
  } else {
    node(e, "Add", 2, (const char *[]){X, cb}, 1, (const char *[]){first_out});
    node(e, "Mul", 2, (const char *[]){first_out, cs}, 1, (const char *[]){out});
  }
  free(cs), free(cb), free(mid);
  return PD_OK;
}

static pd_status ex_cast(ex *e) {
  pd_dtype dt;
  pd_dtype_parse(attr(e, "dtype")->s, &dt);
  at_i(e, node1(e, "Cast", in_name(e, 0, 0), out_name(e, 0)), "to", onnx_dtype(dt));
  return PD_OK;
}

static pd_status ex_reshape(ex *e) {
  const pd_attr *s = attr(e, "shape");
  char *shape = const_i64s(e, out_name(e, 0), s->n, s->ints);
  node(e, "Reshape", 2, (const char *[]){in_name(e, 0, 0), shape}, 1, (const char *[]){out_name(e, 0)});
  free(shape);
  return PD_OK;
}

static pd_status ex_flatten(ex *e) {
  at_i(e, node1(e, "Flatten", in_name(e, 0, 0), out_name(e, 0)), "axis", attr(e, "axis")->i);
  return PD_OK;
}

static pd_status ex_transpose(ex *e) {
  const pd_attr *p = attr(e, "perm");
  Onnx__NodeProto *n = node1(e, "Transpose", in_name(e, 0, 0), out_name(e, 0));
  if (p->n) at_ints(e, n, "perm", p->n, p->ints);
  return PD_OK;
}

/* slice: ONNX Slice (opset 10's inputs). Starts read at run time: ends
 * are Starts + (sizes - 1) * steps + 1, the same elements wherever our op
 * runs (ONNX would clamp a window that leaves the dim, where ours fails);
 * a negative step could make such an end -1, which ONNX counts from the
 * end, so it is refused. */
static pd_status ex_slice(ex *e) {
  const pd_attr *axes = attr(e, "axes"), *steps = attr(e, "steps");
  const char *starts = in_name(e, 1, 0), *X = in_name(e, 0, 0), *Y = out_name(e, 0);
  int k = starts ? attr(e, "sizes")->n : attr(e, "starts")->n;
  int64_t ax[PD_MAX_DIMS] = {0}, sp[PD_MAX_DIMS] = {0}, add[PD_MAX_DIMS] = {0};
  for (int i = 0; i < k; i++) {
    ax[i] = axes->n ? axes->ints[i] : i, sp[i] = steps->n ? steps->ints[i] : 1;
    if (starts && sp[i] < 0)
      return fail(e, "a negative step with Starts read at run time (ONNX would read its end -1 from the end)");
    if (starts) add[i] = attr(e, "sizes")->ints[i] ? (attr(e, "sizes")->ints[i] - 1) * sp[i] + 1 : 0;
  }
  char *b = NULL, *en = NULL, *ca = const_i64s(e, Y, k, ax), *cs = const_i64s(e, Y, k, sp), *off = NULL;
  if (starts) {
    off = const_i64s(e, Y, k, add), en = tmp_name(e, Y);
    node(e, "Add", 2, (const char *[]){starts, off}, 1, (const char *[]){en});
  } else {
    b = const_i64s(e, Y, k, attr(e, "starts")->ints), en = const_i64s(e, Y, k, attr(e, "ends")->ints);
  }
  node(e, "Slice", 5, (const char *[]){X, starts ? starts : b, en, ca, cs}, 1, (const char *[]){Y});
  free(b), free(en), free(ca), free(cs), free(off);
  return PD_OK;
}

static pd_status ex_concat(ex *e) {
  const pd_arg *a = &e->op->in[0];
  const char *ins[64];
  if (a->n > 64) return fail(e, "more than 64 inputs");
  for (int i = 0; i < a->n; i++) ins[i] = e->net->vars[a->vars[i]].name;
  at_i(e, node(e, "Concat", a->n, ins, 1, (const char *[]){out_name(e, 0)}), "axis", attr(e, "axis")->i);
  return PD_OK;
}

static void pads4(ex *e, Onnx__NodeProto *n, const int64_t *p) {
  at_ints(e, n, "pads", 4, (int64_t[]){p[0], p[1], p[0], p[1]});
}

static pd_status ex_conv2d(ex *e) {
  const char *B = in_name(e, 2, 0);
  const char *ins[] = {in_name(e, 0, 0), in_name(e, 1, 0), B};
  Onnx__NodeProto *n = node(e, "Conv", B ? 3 : 2, ins, 1, (const char *[]){out_name(e, 0)});
  at_ints(e, n, "kernel_shape", 2, attr(e, "kernel_size")->ints);
  at_ints(e, n, "strides", 2, attr(e, "strides")->ints);
  at_ints(e, n, "dilations", 2, attr(e, "dilations")->ints);
  pads4(e, n, attr(e, "paddings")->ints);
  at_i(e, n, "group", attr(e, "groups")->i);
  return PD_OK;
}

static pd_status ex_pool2d(ex *e) {
  bool max = strcmp(attr(e, "pooling_type")->s, "max") == 0;
  if (attr(e, "global_pooling")->b) return same1(e, max ? "GlobalMaxPool" : "GlobalAveragePool");
  Onnx__NodeProto *n = node1(e, max ? "MaxPool" : "AveragePool", in_name(e, 0, 0), out_name(e, 0));
  at_ints(e, n, "kernel_shape", 2, attr(e, "ksize")->ints);
  at_ints(e, n, "strides", 2, attr(e, "strides")->ints);
  pads4(e, n, attr(e, "paddings")->ints);
  at_i(e, n, "ceil_mode", attr(e, "ceil_mode")->b);
  if (!max) at_i(e, n, "count_include_pad", !attr(e, "exclusive")->b);
  return PD_OK;
}

static pd_status ex_batch_norm(ex *e) {
  const char *ins[] = {in_name(e, 0, 0), in_name(e, 1, 0), in_name(e, 2, 0), in_name(e, 3, 0), in_name(e, 4, 0)};
  Onnx__NodeProto *n = node(e, "BatchNormalization", 5, ins, 1, (const char *[]){out_name(e, 0)});
  at_f(e, n, "epsilon", attr(e, "epsilon")->f);
  at_f(e, n, "momentum", attr(e, "momentum")->f);
  return PD_OK;
}

static pd_status ex_dropout(ex *e) {
  char *ratio = const_scalar(e, out_name(e, 0), in_meta(e, 0)->dtype, attr(e, "dropout_prob")->f);
  node(e, "Dropout", 2, (const char *[]){in_name(e, 0, 0), ratio}, 1, (const char *[]){out_name(e, 0)});
  free(ratio);
  return PD_OK;
}

/* A string list attribute. */
static void at_strs(ex *e, Onnx__NodeProto *n, const char *name, int count, const char *const *v) {
  Onnx__AttributeProto *a = new_attr(e, n, name);
  if (!a) return;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
  if (!(a->strings = calloc((size_t)count + 1, sizeof *a->strings))) {
    e->oom = true;
    return;
  }
  for (int i = 0; i < count; i++) {
    a->strings[i].data = (uint8_t *)dup(e, v[i]);
    a->strings[i].len = strlen(v[i]);
  }
  a->n_strings = (size_t)count;
}
static void at_s(ex *e, Onnx__NodeProto *n, const char *name, const char *v) {
  Onnx__AttributeProto *a = new_attr(e, n, name);
  if (!a) return;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
  a->has_s = true;
  a->s.data = (uint8_t *)dup(e, v);
  a->s.len = strlen(v);
}

/* The value of parameter (or state) input `slot`, which only this op may
 * read: it is written as an initializer here (permuted), not at the end. */
static pd_status own_param(ex *e, int slot, const pd_tensor **out) {
  int v = e->op->in[slot].vars[0];
  const pd_var_info *vi = &e->net->vars[v];
  const char *what = e->op->def->inputs[slot].name;
  if (vi->kind != PD_VAR_PARAM && vi->kind != PD_VAR_STATE)
    return fail(e, "%s \"%s\" is computed by the net; ONNX's weights must be initializers here", what, vi->name);
  if (e->readers[v] > 1)
    return fail(e, "%s \"%s\" is read by another op too; its ONNX form is a copy in ONNX's gate order", what, vi->name);
  pd_var *sv = pd_scope_find(e->scope, vi->name);
  if (!sv || !pd_tensor_data(&sv->tensor))
    return pd_errorf(e->err, PD_ERR_INPUT, "%s: parameter \"%s\" has no value (give --params DIR)", e->net->file,
                     vi->name);
  *out = &sv->tensor;
  e->written[v] = true;
  return PD_OK;
}

/* t as initializer `name` with its gate blocks in ONNX's order: ONNX's
 * block perm[j] is our block j ([outer, G blocks of blk values]). */
static void permuted_init(ex *e, const char *name, const pd_tensor *t, int G, const int *perm, int64_t outer,
                          int64_t blk) {
  pd_tensor c;
  pd_tensor_init(&c, t->dtype);
  if (pd_tensor_set_dims(&c, t->ndim, t->dims, e->err) || pd_tensor_alloc(&c, e->err)) {
    e->oom = true;
    return;
  }
  size_t row = (size_t)blk * pd_dtype_size(t->dtype);
  const char *src = pd_tensor_data(t);
  char *dst = pd_tensor_data(&c);
  for (int64_t o = 0; o < outer; o++)
    for (int j = 0; j < G; j++)
      memcpy(dst + ((size_t)o * (size_t)G + (size_t)perm[j]) * row, src + ((size_t)o * (size_t)G + (size_t)j) * row,
             row);
  add_init(e, name, &c);
  pd_tensor_release(&c);
}

/* Rows [k0, k0 + n) of t (its first dim) as initializer `name`, in ONNX's
 * gate order (permuted_init's outer and blk are per row). */
static void rows_init(ex *e, const char *name, const pd_tensor *t, int64_t k0, int64_t n, int G, const int *perm,
                      int64_t outer_per_row, int64_t blk) {
  pd_tensor v;
  pd_tensor_init(&v, t->dtype);
  int64_t dims[PD_MAX_DIMS];
  memcpy(dims, t->dims, sizeof dims);
  dims[0] = n;
  if (pd_tensor_set_dims(&v, t->ndim, dims, e->err) || pd_tensor_alloc(&v, e->err)) {
    e->oom = true;
    return;
  }
  size_t bytes = pd_tensor_bytes(&v);
  memcpy(pd_tensor_data(&v), (const char *)pd_tensor_data(t) + (size_t)k0 * bytes / (size_t)n, bytes);
  if (G)
    permuted_init(e, name, &v, G, perm, n * outer_per_row, blk);
  else
    add_init(e, name, &v);
  pd_tensor_release(&v);
}

/* A name for layer l's part of `base` (base itself for one layer). */
static char *layer_name(ex *e, const char *base, int layers, int l) {
  if (layers == 1) return dup(e, base);
  char what[32];
  snprintf(what, sizeof what, "%s.layer%d", base, l);
  return pd_net_var(e->net, what) < 0 && strlen(what) < sizeof what - 1 ? dup(e, what) : tmp_name(e, base);
}

/* lstm, gru, rnn: one ONNX node of layout 0 (opset 13 has no other) per
 * layer, X transposed to [seq, batch, input] before the first, each
 * layer's Y [seq, dirs, batch, H] made the next one's X [seq, batch,
 * dirs*H] by Transpose and Reshape, and the last one's back to [batch,
 * seq, dirs*H]; lengths cast to int32; the weights of each layer (rows of
 * W or WL, R, B, P) written in ONNX's gate order; initial states sliced
 * and final states concatenated per layer. Final states written back into
 * a parameter or state (a carried state) have no ONNX form: left out. */
static pd_status ex_recurrent(ex *e, const char *type, int G, const int *perm) {
  bool lstm = G == 4;
  int layers = (int)attr(e, "num_layers")->i, WL = lstm ? 8 : 6;
  const char *dir = attr(e, "direction")->s;
  int dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
  int64_t H = attr(e, "hidden_size")->i, in = in_meta(e, 0)->dims[2];
  const pd_tensor *w, *r, *b = NULL, *p = NULL, *wl = NULL;
  pd_status st;
  if ((st = own_param(e, 1, &w)) || (st = own_param(e, 2, &r)) || (in_name(e, 3, 0) && (st = own_param(e, 3, &b))) ||
      (lstm && in_name(e, 7, 0) && (st = own_param(e, 7, &p))) || (layers > 1 && (st = own_param(e, WL, &wl))))
    return st;
  const char *Y = out_name(e, 0), *H0 = in_name(e, 5, 0), *C0 = lstm ? in_name(e, 6, 0) : NULL;
  char *x = tmp_name(e, Y), *lens = in_name(e, 4, 0) ? tmp_name(e, Y) : NULL;
  at_ints(e, node1(e, "Transpose", in_name(e, 0, 0), x), "perm", 3, (int64_t[]){1, 0, 2});
  if (lens) at_i(e, node1(e, "Cast", in_name(e, 4, 0), lens), "to", ONNX__TENSOR_PROTO__DATA_TYPE__INT32);
  /* the final states wanted (temporaries only), one per layer to concatenate */
  const char *fin[3] = {NULL, NULL, NULL};
  for (int s = 1; s <= (lstm ? 2 : 1); s++) {
    const pd_arg *a = &e->op->out[s];
    if (!a->n || a->vars[0] < 0) continue;
    if (e->net->vars[a->vars[0]].kind == PD_VAR_TEMP) {
      fin[s] = out_name(e, s);
      continue;
    }
    /* written back into a state: an ONNX value no graph output reads,
     * named in the model's metadata for an import to write it back */
    char **v = realloc(e->carried, sizeof *v * (size_t)(e->ncarried + 2));
    if (!v) {
      e->oom = true;
      break;
    }
    e->carried = v;
    v[e->ncarried] = dup(e, out_name(e, s));
    v[e->ncarried + 1] = tmp_name(e, out_name(e, s));
    fin[s] = v[e->ncarried + 1];
    e->ncarried += 2;
  }
  char **parts[3] = {NULL, calloc((size_t)layers, sizeof(char *)), calloc((size_t)layers, sizeof(char *))};
  if (!parts[1] || !parts[2]) e->oom = true;
  int yv = e->op->out[0].vars[0];
  char *y4 = NULL;
  const char *missing = NULL;
  for (int l = 0; l < layers && !e->oom; l++) {
    int64_t k0 = (int64_t)l * dirs, inl = l ? dirs * H : in;
    char *wn = layer_name(e, in_name(e, l ? WL : 1, 0), layers, l), *rn = layer_name(e, in_name(e, 2, 0), layers, l);
    char *bn = b ? layer_name(e, in_name(e, 3, 0), layers, l) : NULL;
    char *pn = p ? layer_name(e, in_name(e, 7, 0), layers, l) : NULL;
    rows_init(e, wn, l ? wl : w, l ? k0 - dirs : 0, dirs, G, perm, 1, H * inl);
    rows_init(e, rn, r, k0, dirs, G, perm, 1, H * H);
    if (b) rows_init(e, bn, b, k0, dirs, G, perm, 2, H);
    if (p) rows_init(e, pn, p, k0, dirs, 0, NULL, 0, 0);
    /* initial states: layer l's rows */
    char *h0 = NULL, *c0 = NULL;
    for (int s = 0; s < 2; s++) {
      const char *full = s ? C0 : H0;
      char **dst = s ? &c0 : &h0;
      if (!full) continue;
      if (layers == 1) {
        *dst = dup(e, full);
        continue;
      }
      int hv = e->op->in[s ? 6 : 5].vars[0];
      pd_var_kind kind = e->net->vars[hv].kind;
      if (kind == PD_VAR_PARAM || kind == PD_VAR_STATE) { /* an initializer per layer: no Slice to import */
        pd_var *sv = pd_scope_find(e->scope, full);
        if (!sv || !pd_tensor_data(&sv->tensor)) {
          missing = full;
          continue;
        }
        *dst = layer_name(e, full, layers, l);
        rows_init(e, *dst, &sv->tensor, k0, dirs, 0, NULL, 0, 0);
        if (e->readers[hv] == 1) e->written[hv] = true;
        continue;
      }
      char *st0 = const_i64s(e, full, 1, &k0), *en = const_i64s(e, full, 1, (int64_t[]){k0 + dirs});
      char *ax = const_i64s(e, full, 1, (int64_t[]){0});
      *dst = tmp_name(e, full);
      node(e, "Slice", 4, (const char *[]){full, st0, en, ax}, 1, (const char *[]){*dst});
      free(st0), free(en), free(ax);
    }
    const char *ins[8] = {x, wn, rn, bn ? bn : "", lens ? lens : "", h0 ? h0 : "", c0 ? c0 : "", pn ? pn : ""};
    int nin = lstm ? 8 : 6;
    while (!ins[nin - 1][0]) nin--;
    /* Y where the next layer or something after reads it */
    bool last = l == layers - 1;
    y4 = !last || e->readers[yv] ? tmp_name(e, Y) : NULL;
    const char *outs[3] = {y4 ? y4 : "", "", ""};
    for (int s = 1; s <= (lstm ? 2 : 1); s++)
      if (fin[s]) outs[s] = layers == 1 ? fin[s] : (parts[s][l] = tmp_name(e, fin[s]));
    int nout = lstm ? 3 : 2;
    while (nout > 1 && !outs[nout - 1][0]) nout--;
    Onnx__NodeProto *n = node(e, type, nin, ins, nout, outs);
    at_i(e, n, "hidden_size", H);
    at_s(e, n, "direction", dir);
    double clip = attr(e, "clip")->f;
    if (clip > 0) at_f(e, n, "clip", clip);
    if (G == 1) {
      const char *act = strcmp(attr(e, "activation")->s, "relu") == 0 ? "Relu" : "Tanh";
      at_strs(e, n, "activations", dirs, (const char *[]){act, act});
    }
    if (G == 3) at_i(e, n, "linear_before_reset", attr(e, "linear_before_reset")->i);
    free(wn), free(rn), free(bn), free(pn), free(h0), free(c0);
    if (last || !y4) break;
    /* [seq, dirs, batch, H] -> [seq, batch, dirs, H] -> [seq, batch, dirs*H] */
    char *yt = tmp_name(e, Y), *shape = const_i64s(e, Y, 3, (int64_t[]){0, 0, -1});
    free(x);
    x = tmp_name(e, Y);
    at_ints(e, node1(e, "Transpose", y4, yt), "perm", 4, (int64_t[]){0, 2, 1, 3});
    node(e, "Reshape", 2, (const char *[]){yt, shape}, 1, (const char *[]){x});
    free(yt), free(shape), free(y4);
    y4 = NULL;
  }
  if (missing)
    st = pd_errorf(e->err, PD_ERR_INPUT, "%s: state \"%s\" has no value (give --params DIR)", e->net->file, missing);
  for (int s = 1; s <= 2 && layers > 1; s++)
    if (fin[s] && parts[s]) at_i(e, node(e, "Concat", layers, (const char *const *)parts[s], 1, &fin[s]), "axis", 0);
  if (y4 && e->readers[yv]) { /* [seq, dirs, batch, H] -> [batch, seq, dirs, H] -> [batch, seq, dirs*H] */
    char *yb = tmp_name(e, Y), *shape = const_i64s(e, Y, 3, (int64_t[]){0, 0, -1});
    at_ints(e, node1(e, "Transpose", y4, yb), "perm", 4, (int64_t[]){2, 0, 1, 3});
    node(e, "Reshape", 2, (const char *[]){yb, shape}, 1, (const char *[]){Y});
    free(yb), free(shape);
  }
  for (int s = 1; s <= 2; s++) {
    for (int l = 0; parts[s] && l < layers; l++) free(parts[s][l]);
    free(parts[s]);
  }
  free(x), free(lens), free(y4);
  return st;
}
static pd_status ex_lstm(ex *e) { return ex_recurrent(e, "LSTM", 4, (const int[]){0, 2, 3, 1}); }
static pd_status ex_gru(ex *e) { return ex_recurrent(e, "GRU", 3, (const int[]){1, 0, 2}); }
static pd_status ex_rnn(ex *e) { return ex_recurrent(e, "RNN", 1, (const int[]){0}); }

/* embedding: Gather on axis 0. padding_idx has no ONNX form: exported only
 * when W's padding row is all zero (the rows agree), refused otherwise. */
static pd_status ex_embedding(ex *e) {
  int64_t pad = attr(e, "padding_idx")->i;
  const char *W = in_name(e, 1, 0);
  if (pad >= 0) {
    pd_var *sv = pd_scope_find(e->scope, W);
    if (!sv || !pd_tensor_data(&sv->tensor))
      return pd_errorf(e->err, PD_ERR_INPUT, "%s: parameter \"%s\" has no value (give --params DIR)", e->net->file, W);
    const pd_tensor *t = &sv->tensor;
    int64_t d = t->dims[1];
    for (int64_t j = 0; j < d; j++)
      if (pd_tensor_get(t, pad * d + j) != 0)
        return fail(e,
                    "padding_idx %lld: Gather has no padding row, and row %lld of \"%s\" is not zero (so the "
                    "outputs would differ)",
                    (long long)pad, (long long)pad, W);
  }
  at_i(e, node(e, "Gather", 2, (const char *[]){W, in_name(e, 0, 0)}, 1, (const char *[]){out_name(e, 0)}), "axis", 0);
  return PD_OK;
}

/* Which ops have an ONNX form, and which of their outputs it computes
 * (a bit per output slot). */
static const struct {
  const char *type;
  export_fn fn;
  unsigned outputs;
} exporters[] = {
    {"batch_norm", ex_batch_norm, 1},
    {"broadcast_add", ex_add, 1},
    {"broadcast_div", ex_div, 1},
    {"broadcast_mul", ex_mul, 1},
    {"broadcast_sub", ex_sub, 1},
    {"cast", ex_cast, 1},
    {"concat", ex_concat, 1},
    {"conv2d", ex_conv2d, 1},
    {"dropout", ex_dropout, 1},
    {"elementwise_add", ex_elementwise_add, 1},
    {"embedding", ex_embedding, 1},
    {"fc", ex_fc, 1},
    {"flatten", ex_flatten, 1},
    {"gru", ex_gru, 3},
    {"identity", ex_identity, 1},
    {"log_softmax", ex_log_softmax, 1},
    {"lstm", ex_lstm, 7},
    {"matmul", ex_matmul, 1},
    {"mul", ex_mul_op, 1},
    {"pool2d", ex_pool2d, 1},
    {"relu", ex_relu, 1},
    {"reshape", ex_reshape, 1},
    {"rnn", ex_rnn, 3},
    {"scale", ex_scale, 1},
    {"sigmoid", ex_sigmoid, 1},
    {"slice", ex_slice, 1},
    {"softmax", ex_softmax, 1},
    {"sum", ex_sum, 1},
    {"tanh", ex_tanh, 1},
    {"transpose", ex_transpose, 1},
};

static int exporter_of(const pd_op_def *def) {
  for (size_t i = 0; i < sizeof exporters / sizeof exporters[0]; i++)
    if (strcmp(exporters[i].type, def->type) == 0) return (int)i;
  return -1;
}

pd_status pd_onnx_default_targets(const pd_net *net, int **targets, int *ntargets, pd_error *err) {
  bool *avail = calloc((size_t)net->nvars + 1, 1), *read = calloc((size_t)net->nvars + 1, 1);
  *targets = calloc((size_t)net->nvars + 1, sizeof **targets);
  *ntargets = 0;
  if (!avail || !read || !*targets) {
    free(avail), free(read), free(*targets);
    *targets = NULL;
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  for (int v = 0; v < net->nvars; v++) avail[v] = net->vars[v].kind != PD_VAR_TEMP;
  for (int o = 0; o < net->n_forward; o++) {
    const pd_op *op = &net->ops[o];
    int x = exporter_of(op->def);
    bool ok = x >= 0;
    for (int s = 0; s < op->def->n_inputs && ok; s++)
      for (int i = 0; i < op->in[s].n; i++) ok &= op->in[s].vars[i] < 0 || avail[op->in[s].vars[i]];
    if (!ok) continue;
    for (int s = 0; s < op->def->n_inputs; s++)
      for (int i = 0; i < op->in[s].n; i++)
        if (op->in[s].vars[i] >= 0) read[op->in[s].vars[i]] = true;
    for (int s = 0; s < op->def->n_outputs; s++)
      if (exporters[x].outputs & (1u << s))
        for (int i = 0; i < op->out[s].n; i++) avail[op->out[s].vars[i]] = true;
  }
  for (int v = 0; v < net->nvars; v++)
    if (avail[v] && !read[v] && net->vars[v].kind == PD_VAR_TEMP) (*targets)[(*ntargets)++] = v;
  free(avail), free(read);
  if (!*ntargets) return pd_errorf(err, PD_ERR_INPUT, "%s: no part of the net has an ONNX form to export", net->file);
  return PD_OK;
}

static Onnx__ValueInfoProto *value_info(ex *e, const pd_var_info *vi) {
  Onnx__ValueInfoProto *v = malloc(sizeof *v);
  Onnx__TypeProto *tp = malloc(sizeof *tp);
  Onnx__TypeProto__Tensor *tt = malloc(sizeof *tt);
  Onnx__TensorShapeProto *sh = malloc(sizeof *sh);
  if (!v || !tp || !tt || !sh) {
    free(v), free(tp), free(tt), free(sh);
    e->oom = true;
    return NULL;
  }
  onnx__value_info_proto__init(v);
  onnx__type_proto__init(tp);
  onnx__type_proto__tensor__init(tt);
  onnx__tensor_shape_proto__init(sh);
  v->name = dup(e, vi->name);
  v->type = tp;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  tt->has_elem_type = true;
  tt->elem_type = onnx_dtype(vi->meta.dtype);
  tt->shape = sh;
  int nd = vi->meta.ndim > 0 ? vi->meta.ndim : 0;
  sh->dim = calloc((size_t)nd + 1, sizeof *sh->dim);
  if (!sh->dim) {
    e->oom = true;
    return v;
  }
  for (int d = 0; d < nd; d++) {
    Onnx__TensorShapeProto__Dimension *dm = malloc(sizeof *dm);
    if (!dm) {
      e->oom = true;
      return v;
    }
    onnx__tensor_shape_proto__dimension__init(dm);
    sh->dim[sh->n_dim++] = dm;
    if (vi->meta.dims[d] >= 0) {
      dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      dm->dim_value = vi->meta.dims[d];
    } else {
      dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      dm->dim_param = dup(e, "N");
    }
  }
  return v;
}

static void add_value_info(ex *e, Onnx__ValueInfoProto ***list, size_t *n, const pd_var_info *vi) {
  Onnx__ValueInfoProto **v = realloc(*list, sizeof *v * (*n + 1));
  if (!v) {
    e->oom = true;
    return;
  }
  *list = v;
  Onnx__ValueInfoProto *info = value_info(e, vi);
  if (info) v[(*n)++] = info;
}

static void add_meta(ex *e, Onnx__ModelProto *m, const char *key, const char *value) {
  Onnx__StringStringEntryProto *p = malloc(sizeof *p),
                               **v = realloc(m->metadata_props, sizeof *v * (m->n_metadata_props + 1));
  if (v) m->metadata_props = v;
  if (!p || !v) {
    free(p);
    e->oom = true;
    return;
  }
  onnx__string_string_entry_proto__init(p);
  p->key = dup(e, key), p->value = dup(e, value);
  v[m->n_metadata_props++] = p;
}

static void put_quoted(pd_buf *b, const char *s) {
  pd_buf_append(b, "\"", 1);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') pd_buf_append(b, "\\", 1);
    pd_buf_append(b, s, 1);
  }
  pd_buf_append(b, "\"", 1);
}

/* What `paddle-run generate` needs of an imported language model that ONNX
 * cannot say (docs/onnx.md): the states a recurrent op writes back (each
 * with the ONNX value of its final value), and the text binding that feeds
 * the ids, in the NetDesc's text format. */
static void generate_metadata(ex *e, Onnx__ModelProto *m, const bool *used) {
  if (!e->ncarried) return;
  pd_buf b = {0};
  for (int i = 0; i < e->ncarried; i += 2) pd_buf_printf(&b, "%s\t%s\n", e->carried[i], e->carried[i + 1]);
  if (pd_buf_append(&b, "", 1)) e->oom = true;
  if (!e->oom) add_meta(e, m, "paddle-run.carried_states", b.data);
  b.len = 0;
  const Paddle__TrainDesc *t = e->net->desc ? e->net->desc->train : NULL;
  for (size_t i = 0; t && i < t->n_data; i++) {
    const Paddle__DataBinding *d = t->data[i];
    int v = d->var ? pd_net_var(e->net, d->var) : -1;
    if (!d->type || strcmp(d->type, "text") != 0 || v < 0 || !used[v]) continue;
    pd_buf_printf(&b, "batch_size: %lld data { var: ", (long long)t->batch_size);
    put_quoted(&b, d->var);
    pd_buf_printf(&b, " type: \"text\" file: ");
    put_quoted(&b, d->file ? d->file : "");
    if (d->keep && pd_net_var(e->net, d->keep) >= 0 && used[pd_net_var(e->net, d->keep)]) {
      pd_buf_printf(&b, " keep: ");
      put_quoted(&b, d->keep);
    }
    char *vp = d->vocab ? pd_path_beside(e->net->file, d->vocab) : NULL;
    if (vp) {
      pd_buf_printf(&b, " vocab: ");
      put_quoted(&b, vp);
    }
    free(vp);
    pd_buf_printf(&b, " }");
    if (pd_buf_append(&b, "", 1)) e->oom = true;
    if (!e->oom) add_meta(e, m, "paddle-run.text_data", b.data);
    break;
  }
  pd_buf_free(&b);
}

pd_status pd_onnx_export(const pd_net *net, pd_scope *scope, const int *targets, int ntargets, uint8_t **data,
                         size_t *len, pd_error *err) {
  *data = NULL;
  *len = 0;
  bool *active = calloc((size_t)net->nops + 1, 1), *used = calloc((size_t)net->nvars + 1, 1);
  Onnx__ModelProto *m = malloc(sizeof *m);
  Onnx__GraphProto *g = malloc(sizeof *g);
  Onnx__OperatorSetIdProto *os = malloc(sizeof *os), **osv = malloc(sizeof *osv);
  ex e = {.net = net, .scope = scope, .err = err, .g = g};
  pd_status st = PD_OK;
  if (!active || !used || !m || !g || !os || !osv) {
    free(active), free(used), free(m), free(g), free(os), free(osv);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  onnx__model_proto__init(m);
  onnx__graph_proto__init(g);
  onnx__operator_set_id_proto__init(os);
  m->graph = g;
  m->has_ir_version = true;
  m->ir_version = 7; /* what opset 13 came with */
  os->domain = dup(&e, "");
  os->has_version = true;
  os->version = PD_ONNX_EXPORT_OPSET;
  osv[0] = os;
  m->opset_import = osv;
  m->n_opset_import = 1;
  m->producer_name = dup(&e, "paddle-run");
  m->producer_version = dup(&e, PD_VERSION);
  g->name = dup(&e, net->desc && net->desc->name && net->desc->name[0] ? net->desc->name : "paddle_run");
  pd_net_prune(net, targets, ntargets, active);
  e.readers = calloc((size_t)net->nvars + 1, sizeof *e.readers);
  e.written = calloc((size_t)net->nvars + 1, 1);
  if (!e.readers || !e.written) e.oom = true;
  for (int o = 0; o < net->nops && !e.oom; o++)
    for (int s = 0; active[o] && s < net->ops[o].def->n_inputs; s++)
      for (int i = 0; i < net->ops[o].in[s].n; i++)
        if (net->ops[o].in[s].vars[i] >= 0) e.readers[net->ops[o].in[s].vars[i]]++;
  for (int i = 0; i < ntargets && !e.oom; i++) e.readers[targets[i]]++;
  for (int o = 0; o < net->nops && !st && !e.oom; o++) {
    if (!active[o]) continue;
    const pd_op *op = &net->ops[o];
    e.op = op;
    int x = exporter_of(op->def);
    if (x < 0) {
      st = fail(&e, "op type %s has no ONNX form in the exporter (docs/onnx.md lists those that do)", op->def->type);
      break;
    }
    for (int s = 0; s < op->def->n_inputs; s++)
      for (int i = 0; i < op->in[s].n; i++)
        if (op->in[s].vars[i] >= 0) used[op->in[s].vars[i]] = true;
    st = exporters[x].fn(&e);
  }
  for (int i = 0; i < ntargets; i++) used[targets[i]] = true;
  /* data inputs, initializers (in variable order), outputs */
  for (int v = 0; v < net->nvars && !st && !e.oom; v++) {
    const pd_var_info *vi = &net->vars[v];
    if (!used[v] || e.written[v]) continue;
    if (vi->kind == PD_VAR_DATA) {
      add_value_info(&e, &g->input, &g->n_input, vi);
    } else if (vi->kind == PD_VAR_PARAM || vi->kind == PD_VAR_STATE) {
      pd_var *sv = pd_scope_find(scope, vi->name);
      if (!sv || !pd_tensor_data(&sv->tensor))
        st = pd_errorf(err, PD_ERR_INPUT, "%s: parameter \"%s\" has no value (give --params DIR)", net->file, vi->name);
      else
        add_init(&e, vi->name, &sv->tensor);
    }
  }
  for (int i = 0; i < ntargets && !st && !e.oom; i++)
    add_value_info(&e, &g->output, &g->n_output, &net->vars[targets[i]]);
  if (!st) generate_metadata(&e, m, used);
  if (!st && e.oom) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (!st) {
    *len = protobuf_c_message_get_packed_size(&m->base);
    if (!(*data = malloc(*len + 1))) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    if (!st) protobuf_c_message_pack(&m->base, *data);
  }
  protobuf_c_message_free_unpacked(&m->base, NULL);
  free(active), free(used), free(e.readers), free(e.written);
  for (int i = 0; i < e.ncarried; i++) free(e.carried[i]);
  free(e.carried);
  return st;
}
