/* onnx_import_flow.c — ONNX's control flow (Scan, Loop, If) imported onto
 * our blocks. A Scan's or a Loop's body becomes the step block of a
 * `recurrent` op: ONNX's loop-carried values are its states, the scanned
 * slices (a Loop's iteration number, from a constant ramp) its step inputs,
 * the scan outputs its stacked outputs. ONNX has no batch axis there (from
 * Scan-9 on), we have one: a batch of 1 is added at the edges and taken off
 * inside the block by reshapes, so the body's ops see ONNX's shapes exactly.
 * An If whose condition is a constant at import is its chosen branch,
 * inlined (see docs/onnx.md for why not if_else). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_import_int.h"
#include "text/textformat.h"

/* Subgraphs inside a body would need blocks inside blocks in the text. */
static int flow_depth;

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
  return NULL;
}

static pd_status unsup(imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pd_status unsup(imp *im, const char *fmt, ...) {
  char why[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return pd_onnx_im_unsupported(im, why);
}

static pd_status bad(imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pd_status bad(imp *im, const char *fmt, ...) {
  char why[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return pd_onnx_im_bad(im, why);
}

static const Onnx__GraphProto *graph_attr(const Onnx__NodeProto *n, const char *name) {
  const Onnx__AttributeProto *a = attr(n, name);
  return a && a->g ? a->g : NULL;
}

static pd_status oom(imp *im) { return bad(im, "out of memory"); }

#define NO_LEAD INT64_MIN /* no dim put first */

/* A "shape" attribute entry for dims [lead (unless NO_LEAD), d...]. */
static void shape_attr(pd_buf *b, int64_t lead, int nd, const int64_t *d) {
  pd_buf_printf(b, " attrs { key: \"shape\" value { ints: [");
  int k = 0;
  if (lead != NO_LEAD) pd_buf_printf(b, "%lld", (long long)lead), k++;
  for (int i = 0; i < nd; i++) pd_buf_printf(b, "%s%lld", k++ ? ", " : "", (long long)d[i]);
  pd_buf_printf(b, "] } }");
}

static pd_status reshape(imp *im, const char *in, const char *out, int64_t lead, int nd, const int64_t *d) {
  int unknown = lead != NO_LEAD && lead < 0;
  for (int i = 0; i < nd; i++) unknown += d[i] < 0;
  if (unknown > 1) return unsup(im, "\"%s\" has more than one unknown dim", in);
  pd_buf a = {0};
  shape_attr(&a, lead, nd, d);
  pd_status st = pd_buf_append(&a, "", 1) ? oom(im) : PD_OK;
  if (!st) st = pd_onnx_im_emit(im, "reshape", 1, (const char *[]){in}, 1, (const char *[]){out}, a.data);
  pd_buf_free(&a);
  return st;
}

static void strings_attr(pd_buf *b, const char *key, int n, const char *const *v) {
  pd_buf_printf(b, " attrs { key: \"%s\" value { strings: [", key);
  for (int i = 0; i < n; i++) {
    if (i) pd_buf_printf(b, ", ");
    pd_onnx_im_put_str(b, v[i]);
  }
  pd_buf_printf(b, "] } }");
}

static void names_list(pd_buf *b, int n, const char *const *v) {
  for (int i = 0; i < n; i++) {
    if (i) pd_buf_printf(b, ", ");
    pd_onnx_im_put_str(b, v[i]);
  }
}

/* One scanned input of the step block: the batched sequence outside
 * ([1, T, ...]), the slice's name in the block ([1, ...]) and, when the
 * body reads it without the batch, the body's name and its dims. */
typedef struct seq_in {
  const char *outer, *step, *body;
  int nd;
  int64_t dims[PD_MAX_DIMS];
} seq_in;

/* A loop-carried value: outside the initial value (batched [1, ...]) and
 * what the node gives out (without the batch, or "" for none); in the body
 * the names of the value read and the value written. */
typedef struct carried {
  const char *init, *out, *body_in, *body_out;
} carried;

typedef struct loop_desc {
  int ns; /* states */
  carried *s;
  int nx; /* scanned inputs */
  seq_in *x;
  int no; /* scan outputs: body names, node outputs ("" for none) */
  const char **body_outs, **outs;
  const Onnx__GraphProto *body;
  int64_t T;      /* steps (-1: unknown) */
  bool reverse;   /* all scanning from the last step */
  bool unbatched; /* outputs without the batch dim (else [1, ...] as is) */
} loop_desc;

/* The dims of a value; with strip, without its leading batch of 1. */
static pd_status dims_of(imp *im, const char *name, bool strip, int *nd, int64_t *d) {
  pd_tensor t;
  pd_status st = pd_onnx_im_meta(im, name, &t);
  if (st) return st;
  int from = strip ? 1 : 0;
  if (strip && (t.ndim < 1 || t.dims[0] != 1)) return unsup(im, "\"%s\" is not of batch 1", name);
  *nd = t.ndim - from;
  memcpy(d, t.dims + from, sizeof *d * (size_t)*nd);
  return PD_OK;
}

/* The recurrent op and its step block for a loop described by L. */
static pd_status emit_loop(imp *im, const Onnx__NodeProto *n, loop_desc *L) {
  if (flow_depth > 0) return unsup(im, "a Scan or Loop inside the body of another (blocks inside blocks)");
  const char *out0 = n->n_output && n->output[0][0] ? n->output[0] : L->body->name ? L->body->name : "loop";
  const char *bname = pd_onnx_im_fresh(im, out0, "body");
  size_t ns = (size_t)L->ns + 1, nx = (size_t)L->nx + 1, no = (size_t)L->no + 1;
  const char **prev = calloc(ns, sizeof *prev), **next = calloc(ns, sizeof *next), **ht = calloc(ns, sizeof *ht);
  const char **xs = calloc(nx, sizeof *xs), **step = calloc(nx, sizeof *step);
  const char **ys = calloc(no, sizeof *ys), **yb = calloc(no, sizeof *yb);
  pd_buf block = {0}, text = {0};
  pd_status st = bname && prev && next && ht && xs && step && ys && yb ? PD_OK : oom(im);
  pd_tensor t;
  int nd;
  int64_t d[PD_MAX_DIMS];
  /* the values the block is given ([1, ...]), and their names in the block */
  for (int i = 0; i < L->ns && !st; i++) {
    if (pd_onnx_im_has_name(im, L->s[i].body_in)) {
      st = unsup(im, "the body's input \"%s\" has the name of an outer value", L->s[i].body_in);
      break;
    }
    if (!(st = pd_onnx_im_meta(im, L->s[i].init, &t)) && !(st = dims_of(im, L->s[i].init, true, &nd, d))) {
      if (!(prev[i] = pd_onnx_im_fresh(im, L->s[i].body_in, "prev"))) st = oom(im);
      if (!st) st = pd_onnx_im_set_meta(im, prev[i], &t);
    }
  }
  for (int i = 0; i < L->nx && !st; i++) {
    const seq_in *x = &L->x[i];
    xs[i] = x->outer, step[i] = x->step;
    if ((st = pd_onnx_im_meta(im, x->outer, &t))) break;
    if (t.ndim < 2 || t.dims[0] != 1) {
      st = unsup(im, "scanned input \"%s\" is not [1, steps, ...]", x->outer);
      break;
    }
    for (int k = 1; k + 1 < t.ndim; k++) t.dims[k] = t.dims[k + 1];
    t.ndim--;
    if ((x->body && pd_onnx_im_has_name(im, x->body)) || (!x->body && pd_onnx_im_has_name(im, x->step))) {
      st = unsup(im, "the body's input \"%s\" has the name of an outer value", x->body ? x->body : x->step);
      break;
    }
    st = pd_onnx_im_add_name(im, x->step);
    if (!st) st = pd_onnx_im_set_meta(im, x->step, &t);
  }
  if (st) goto done;
  /* the block: the batch taken off what it is given, the body, the batch
   * put back on what it gives */
  flow_depth++;
  pd_onnx_im_swap_ops(im, &block);
  for (int i = 0; i < L->ns && !st; i++)
    if (!(st = dims_of(im, L->s[i].init, true, &nd, d))) st = reshape(im, prev[i], L->s[i].body_in, NO_LEAD, nd, d);
  for (int i = 0; i < L->nx && !st; i++)
    if (L->x[i].body) st = reshape(im, L->x[i].step, L->x[i].body, NO_LEAD, L->x[i].nd, L->x[i].dims);
  if (!st) st = pd_onnx_im_import_nodes(im, L->body, NULL);
  for (int i = 0; i < L->ns + L->no && !st; i++) {
    const char *bo = i < L->ns ? L->s[i].body_out : L->body_outs[i - L->ns];
    const char **slot = i < L->ns ? &next[i] : &yb[i - L->ns];
    if (!pd_onnx_im_has_name(im, bo)) {
      st = bad(im, "the body's output \"%s\" is not computed", bo);
      break;
    }
    if ((st = dims_of(im, bo, false, &nd, d))) break;
    if (!(*slot = pd_onnx_im_fresh(im, bo, "b"))) st = oom(im);
    if (!st) st = reshape(im, bo, *slot, 1, nd, d);
  }
  pd_onnx_im_swap_ops(im, &block);
  flow_depth--;
  /* the outputs of the op: [1, T, ...] scan outputs, [1, ...] states */
  for (int i = 0; i < L->no && !st; i++) {
    const char *o = L->outs[i];
    if (!(ys[i] = L->unbatched || !o[0] ? pd_onnx_im_fresh(im, o[0] ? o : yb[i], "seq") : o)) st = oom(im);
    if (!st && ys[i] == o) st = pd_onnx_im_add_name(im, o);
    if (!st) st = pd_onnx_im_meta(im, yb[i], &t);
    if (st) break;
    for (int k = t.ndim; k > 1; k--) t.dims[k] = t.dims[k - 1];
    t.dims[1] = L->T, t.ndim++;
    st = pd_onnx_im_set_meta(im, ys[i], &t);
  }
  for (int i = 0; i < L->ns && !st; i++) {
    const char *o = L->s[i].out;
    if (!(ht[i] = L->unbatched || !o[0] ? pd_onnx_im_fresh(im, o[0] ? o : next[i], "last") : o)) st = oom(im);
    if (!st && ht[i] == o) st = pd_onnx_im_add_name(im, o);
    if (!st) st = pd_onnx_im_meta(im, L->s[i].init, &t);
    if (!st) st = pd_onnx_im_set_meta(im, ht[i], &t);
  }
  for (int i = 0; i < L->nx && !st; i++) st = pd_onnx_im_use(im, xs[i]);
  for (int i = 0; i < L->ns && !st; i++) st = pd_onnx_im_use(im, L->s[i].init);
  if (st) goto done;
  pd_buf_printf(&text, "block {\n  name: ");
  pd_onnx_im_put_str(&text, bname);
  pd_buf_printf(&text, "\n  comment: ");
  char comment[600];
  snprintf(comment, sizeof comment, "the body of the ONNX %s %s \"%.500s\"", n->op_type,
           n->name && n->name[0] ? "node" : "computing", n->name && n->name[0] ? n->name : out0);
  pd_onnx_im_put_str(&text, comment);
  pd_buf_printf(&text, "\n");
  if (block.len) pd_buf_append(&text, block.data, block.len);
  pd_buf_printf(&text, "}\nop { type: \"recurrent\" inputs: [");
  names_list(&text, L->nx, xs);
  for (int i = 0; i < L->ns; i++) {
    pd_buf_printf(&text, ", ");
    pd_onnx_im_put_str(&text, L->s[i].init);
  }
  pd_buf_printf(&text, "] outputs: [");
  names_list(&text, L->no, ys);
  for (int i = 0; i < L->ns; i++) {
    pd_buf_printf(&text, "%s", L->no || i ? ", " : "");
    pd_onnx_im_put_str(&text, ht[i]);
  }
  pd_buf_printf(&text, "]\n     attrs { key: \"step_block\" value { block: ");
  pd_onnx_im_put_str(&text, bname);
  pd_buf_printf(&text, " } }");
  strings_attr(&text, "inputs", L->nx, step);
  strings_attr(&text, "prev_states", L->ns, prev);
  strings_attr(&text, "states", L->ns, next);
  strings_attr(&text, "outputs", L->no, yb);
  if (L->reverse) pd_buf_printf(&text, " attrs { key: \"reverse\" value { b: true } }");
  pd_buf_printf(&text, " }\n");
  if (pd_buf_append(&text, "", 1)) st = oom(im);
  if (!st) st = pd_onnx_im_emit_raw(im, text.data);
  /* the batch taken off the results */
  for (int i = 0; i < L->no && !st && L->unbatched; i++)
    if (L->outs[i][0] && !(st = dims_of(im, yb[i], true, &nd, d))) st = reshape(im, ys[i], L->outs[i], L->T, nd, d);
  for (int i = 0; i < L->ns && !st && L->unbatched; i++)
    if (L->s[i].out[0] && !(st = dims_of(im, ht[i], true, &nd, d)))
      st = reshape(im, ht[i], L->s[i].out, NO_LEAD, nd, d);
done:
  free(prev), free(next), free(ht), free(xs), free(step), free(ys), free(yb);
  pd_buf_free(&block), pd_buf_free(&text);
  return st;
}

/* The inputs given to a loop from outside, as [1, ...]: a batch of 1 put
 * on (opset 9+), or checked (Scan-8, whose inputs have the batch). */
static pd_status batched(imp *im, const char *name, bool add, const char **out) {
  if (!add) {
    int nd;
    int64_t d[PD_MAX_DIMS];
    *out = name;
    return dims_of(im, name, true, &nd, d);
  }
  pd_tensor t;
  pd_status st = pd_onnx_im_meta(im, name, &t);
  if (st) return st;
  if (!(*out = pd_onnx_im_fresh(im, name, "b"))) return oom(im);
  return reshape(im, name, *out, 1, t.ndim, t.dims);
}

static bool all_zero(const Onnx__AttributeProto *a) {
  for (size_t i = 0; a && i < a->n_ints; i++)
    if (a->ints[i]) return false;
  return true;
}

/* The body's value names (ValueInfo names are optional in the schema). */
static pd_status body_names(imp *im, const Onnx__GraphProto *b, size_t nin, size_t nout) {
  if (b->n_input != nin || b->n_output != nout)
    return bad(im, "its body has %zu inputs and %zu outputs; %zu and %zu are needed", b->n_input, b->n_output, nin,
               nout);
  for (size_t i = 0; i < b->n_input; i++)
    if (!b->input[i]->name || !b->input[i]->name[0]) return bad(im, "the body's input #%zu has no name", i);
  for (size_t i = 0; i < b->n_output; i++)
    if (!b->output[i]->name || !b->output[i]->name[0]) return bad(im, "the body's output #%zu has no name", i);
  if (b->n_initializer || b->n_sparse_initializer) return unsup(im, "initializers in the body");
  return PD_OK;
}

/* Scan: N states, M scanned inputs (opset 8: after sequence_lens, and with
 * a batch axis first), K scan outputs. Every scanning direction must be
 * the same (reverse is one attribute of ours) and every axis 0. */
pd_status pd_onnx_map_scan(imp *im, const Onnx__NodeProto *n) {
  bool v8 = pd_onnx_im_opset(im) < 9;
  const Onnx__GraphProto *b = graph_attr(n, "body");
  const Onnx__AttributeProto *am = attr(n, "num_scan_inputs");
  if (!b || !am) return bad(im, "no body or num_scan_inputs");
  int skip = v8 ? 1 : 0;
  int64_t M = am->i, N = (int64_t)n->n_input - skip - M, K = (int64_t)n->n_output - N;
  if (M < 1 || N < 0 || K < 0)
    return bad(im, "num_scan_inputs %lld does not fit its %zu inputs", (long long)M, n->n_input);
  pd_status st = body_names(im, b, (size_t)(N + M), (size_t)(N + K));
  if (st) return st;
  if (v8 && n->n_input && n->input[0][0]) return unsup(im, "sequence_lens (opset 8)");
  for (int64_t i = 0; i < N + M; i++)
    if (!n->input[skip + i][0]) return bad(im, "its input #%lld is \"\"", (long long)(skip + i));
  const char *const dirs[] = {"directions", "scan_input_directions", "scan_output_directions"};
  int dir = -1;
  for (int k = 0; k < 3; k++) {
    const Onnx__AttributeProto *a = attr(n, dirs[k]);
    for (size_t i = 0; a && i < a->n_ints; i++) {
      if (a->ints[i] != 0 && a->ints[i] != 1) return bad(im, "%s holds %lld", dirs[k], (long long)a->ints[i]);
      if (dir >= 0 && a->ints[i] != dir) return unsup(im, "scan directions that differ (ours is one for all)");
      dir = (int)a->ints[i];
    }
  }
  if (!all_zero(attr(n, "scan_input_axes")) || !all_zero(attr(n, "scan_output_axes")))
    return unsup(im, "scan_input_axes or scan_output_axes other than 0");
  loop_desc L = {.ns = (int)N, .nx = (int)M, .no = (int)K, .body = b, .reverse = dir == 1, .unbatched = !v8, .T = -1};
  L.s = calloc((size_t)N + 1, sizeof *L.s), L.x = calloc((size_t)M + 1, sizeof *L.x);
  L.body_outs = calloc((size_t)K + 1, sizeof *L.body_outs), L.outs = calloc((size_t)K + 1, sizeof *L.outs);
  if (!L.s || !L.x || !L.body_outs || !L.outs) st = oom(im);
  for (int64_t i = 0; i < N && !st; i++) {
    carried *c = &L.s[i];
    c->out = i < (int64_t)n->n_output ? n->output[i] : "";
    c->body_in = b->input[i]->name, c->body_out = b->output[i]->name;
    st = batched(im, n->input[skip + i], !v8, &c->init);
  }
  for (int64_t i = 0; i < M && !st; i++) {
    seq_in *x = &L.x[i];
    const char *in = n->input[skip + N + i];
    x->body = b->input[N + i]->name;
    pd_tensor t;
    if ((st = batched(im, in, !v8, &x->outer)) || (st = pd_onnx_im_meta(im, x->outer, &t))) break;
    if (t.ndim < 2) {
      st = unsup(im, "scanned input \"%s\" has no axis to scan", in);
      break;
    }
    if (i && t.dims[1] != L.T) {
      st = unsup(im, "scanned inputs of different lengths");
      break;
    }
    L.T = t.dims[1];
    x->nd = t.ndim - 2;
    memcpy(x->dims, t.dims + 2, sizeof *x->dims * (size_t)x->nd);
    if (!(x->step = pd_onnx_im_fresh(im, x->body, "step"))) st = oom(im);
  }
  for (int64_t i = 0; i < K && !st; i++) L.body_outs[i] = b->output[N + i]->name, L.outs[i] = n->output[N + i];
  if (!st) st = emit_loop(im, n, &L);
  free(L.s), free(L.x), free(L.body_outs), free(L.outs);
  return st;
}

/* Whether the body's cond_out is its cond_in passed on (directly or by
 * Identity nodes) or a constant true: then the loop runs its trip count. */
static bool cond_passes_through(const Onnx__GraphProto *b) {
  const char *want = b->output[0]->name, *cin = b->input[1]->name;
  for (int hops = 0; hops <= (int)b->n_node; hops++) {
    if (strcmp(want, cin) == 0) return true;
    const Onnx__NodeProto *p = NULL;
    for (size_t i = 0; i < b->n_node && !p; i++)
      for (size_t j = 0; j < b->node[i]->n_output; j++)
        if (strcmp(b->node[i]->output[j], want) == 0) p = b->node[i];
    if (!p) return false;
    if (strcmp(p->op_type, "Identity") == 0 && p->n_input == 1) {
      want = p->input[0];
      continue;
    }
    if (strcmp(p->op_type, "Constant") == 0 && p->n_attribute == 1 && p->attribute[0]->t) {
      const Onnx__TensorProto *v = p->attribute[0]->t;
      if (v->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) return false;
      if (v->has_raw_data) return v->raw_data.len == 1 && v->raw_data.data[0];
      return v->n_int32_data == 1 && v->int32_data[0];
    }
    return false;
  }
  return false;
}

/* Loop with a trip count known at import and a condition that stays true:
 * the recurrent op over a constant ramp [1, M] of iteration numbers (each
 * step's slice [1], our form of the rank-0 iter_num), the loop-carried
 * values its states, the scan outputs stacked. */
pd_status pd_onnx_map_loop(imp *im, const Onnx__NodeProto *n) {
  const Onnx__GraphProto *b = graph_attr(n, "body");
  if (!b) return bad(im, "no body");
  int64_t N = (int64_t)n->n_input - 2, K = (int64_t)n->n_output - N;
  if (N < 0 || K < 0) return bad(im, "%zu inputs and %zu outputs do not fit a Loop", n->n_input, n->n_output);
  pd_status st = body_names(im, b, (size_t)(N + 2), (size_t)(N + K + 1));
  if (st) return st;
  const char *Mn = n->input[0], *cond = n->input[1];
  if (!Mn[0]) return unsup(im, "no trip count (a loop ended by its condition alone)");
  const pd_tensor *mt, *ct;
  if ((st = pd_onnx_im_need_const(im, Mn, "the trip count", &mt))) return st;
  if (pd_tensor_numel(mt) != 1 || mt->dtype != PD_I64) return bad(im, "the trip count is not one int64");
  int64_t M = PD_DATA(mt, int64_t)[0];
  if (cond[0]) {
    if ((st = pd_onnx_im_need_const(im, cond, "the loop's condition", &ct))) return st;
    if (pd_tensor_numel(ct) != 1) return bad(im, "the condition is not one value");
    if (pd_tensor_get(ct, 0) == 0) return unsup(im, "a condition false on entry (no iteration)");
  }
  if (M < 1) return unsup(im, "a trip count of %lld (no iteration)", (long long)M);
  if (M > ((int64_t)1 << 24)) /* its iteration numbers are a constant held whole */
    return unsup(im, "a trip count of %lld (at most 2^24 are supported)", (long long)M);
  if (!cond_passes_through(b))
    return unsup(im, "a data-dependent exit: the body's condition output \"%s\" is computed, not its input passed on",
                 b->output[0]->name);
  for (int64_t i = 0; i < N; i++)
    if (!n->input[2 + i][0]) return bad(im, "its input #%lld is \"\"", (long long)(2 + i));
  loop_desc L = {.ns = (int)N, .nx = 1, .no = (int)K, .body = b, .unbatched = true, .T = M};
  L.s = calloc((size_t)N + 1, sizeof *L.s), L.x = calloc(1, sizeof *L.x);
  L.body_outs = calloc((size_t)K + 1, sizeof *L.body_outs), L.outs = calloc((size_t)K + 1, sizeof *L.outs);
  if (!L.s || !L.x || !L.body_outs || !L.outs) st = oom(im);
  /* the iteration numbers, and the condition the body reads: a constant true */
  const char *ramp = st ? NULL : pd_onnx_im_fresh(im, b->input[0]->name, "ramp");
  pd_tensor r, c;
  pd_tensor_init(&r, PD_I64), pd_tensor_init(&c, PD_U8);
  pd_error e = {0};
  if (!st && !ramp) st = oom(im);
  if (!st && (pd_tensor_set_dims(&r, 2, (int64_t[]){1, M}, &e) || pd_tensor_alloc(&r, &e) ||
              pd_tensor_set_dims(&c, 1, (int64_t[]){1}, &e) || pd_tensor_alloc(&c, &e)))
    st = bad(im, "%s", e.msg);
  if (!st) {
    for (int64_t i = 0; i < M; i++) PD_DATA(&r, int64_t)[i] = i;
    PD_DATA(&c, uint8_t)[0] = 1;
    if (pd_onnx_im_has_name(im, b->input[1]->name))
      st = unsup(im, "the body's input \"%s\" has the name of an outer value", b->input[1]->name);
    if (!st) st = pd_onnx_im_add_const(im, ramp, &r);
    if (!st) pd_tensor_init(&r, PD_I64), st = pd_onnx_im_add_const(im, b->input[1]->name, &c);
    if (!st) pd_tensor_init(&c, PD_U8);
  }
  pd_tensor_release(&r), pd_tensor_release(&c);
  if (!st) L.x[0] = (seq_in){.outer = ramp, .step = b->input[0]->name};
  for (int64_t i = 0; i < N && !st; i++) {
    carried *s = &L.s[i];
    s->out = i < (int64_t)n->n_output ? n->output[i] : "";
    s->body_in = b->input[2 + i]->name, s->body_out = b->output[1 + i]->name;
    st = batched(im, n->input[2 + i], true, &s->init);
  }
  for (int64_t i = 0; i < K && !st; i++) L.body_outs[i] = b->output[1 + N + i]->name, L.outs[i] = n->output[N + i];
  if (!st) st = emit_loop(im, n, &L);
  free(L.s), free(L.x), free(L.body_outs), free(L.outs);
  return st;
}

/* If: a condition known at import selects its branch, whose nodes are
 * mapped in place, its outputs passed on by identity. A condition computed
 * at run time is refused: ONNX's is one value for the whole graph and the
 * branches may give different shapes, while our if_else sends each row of
 * a batch one way, both blocks giving rows of one shape. */
pd_status pd_onnx_map_if(imp *im, const Onnx__NodeProto *n) {
  const Onnx__GraphProto *gt = graph_attr(n, "then_branch"), *ge = graph_attr(n, "else_branch");
  if (!gt || !ge) return bad(im, "no then_branch or else_branch");
  const char *cond = n->input[0];
  const pd_tensor *ct;
  pd_status st = pd_onnx_im_need_const(
      im, cond, "the condition (chosen at import; one computed at run time is not supported)", &ct);
  if (st) return st;
  if (pd_tensor_numel(ct) != 1) return bad(im, "the condition \"%s\" is not one value", cond);
  const Onnx__GraphProto *g = pd_tensor_get(ct, 0) != 0 ? gt : ge;
  if (g->n_output != n->n_output) return bad(im, "the branch has %zu outputs, the node %zu", g->n_output, n->n_output);
  if (g->n_input) return bad(im, "a branch with inputs");
  if (g->n_initializer || g->n_sparse_initializer) return unsup(im, "initializers in a branch");
  for (size_t i = 0; i < g->n_output; i++)
    if (!g->output[i]->name || !g->output[i]->name[0]) return bad(im, "the branch's output #%zu has no name", i);
  if ((st = pd_onnx_im_import_nodes(im, g, NULL))) return st;
  for (size_t i = 0; i < n->n_output && !st; i++) {
    if (!n->output[i][0]) continue;
    if (!pd_onnx_im_has_name(im, g->output[i]->name))
      return bad(im, "the branch's output \"%s\" is not computed", g->output[i]->name);
    st = pd_onnx_im_emit(im, "identity", 1, (const char *[]){g->output[i]->name}, 1, (const char *[]){n->output[i]},
                         NULL);
  }
  return st;
}

/* The model's own string for a name (an initializer or a node's output):
 * names given to ops must live as long as the import. */
static const char *model_name(const Onnx__GraphProto *g, const char *name) {
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name && strcmp(g->initializer[i]->name, name) == 0) return g->initializer[i]->name;
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t j = 0; j < g->node[i]->n_output; j++)
      if (strcmp(g->node[i]->output[j], name) == 0) return g->node[i]->output[j];
  return NULL;
}

/* A recurrent op's final state that the exported net wrote back into a
 * state variable (char_lm's h_carry: the state carried from one window, or
 * one generated byte, to the next) is an ONNX value nothing reads; the
 * model's metadata pairs them ("STATE\tVALUE" lines), and the import
 * writes the value back with an identity, the state declared STATE. The
 * text binding comes back as the NetDesc's train section, so `generate`
 * runs the imported net as it runs the original. */
pd_status pd_onnx_import_metadata(imp *im, const Onnx__ModelProto *m, bool post) {
  pd_status st = PD_OK;
  for (size_t i = 0; i < m->n_metadata_props && !st; i++) {
    const Onnx__StringStringEntryProto *p = m->metadata_props[i];
    if (!p->key || !p->value) continue;
    if (post && strcmp(p->key, "paddle-run.text_data") == 0) {
      pd_buf b = {0};
      pd_buf_printf(&b, "train { %s }\n", p->value);
      st = pd_buf_append(&b, "", 1) ? oom(im) : pd_onnx_im_emit_raw(im, b.data);
      pd_buf_free(&b);
    }
    if (strcmp(p->key, "paddle-run.carried_states") != 0) continue;
    char *lines = strdup(p->value), *save = NULL;
    if (!lines) return oom(im);
    for (char *l = strtok_r(lines, "\n", &save); l && !st; l = strtok_r(NULL, "\n", &save)) {
      char *tab = strchr(l, '\t');
      if (!tab) continue;
      *tab = 0;
      const char *state = l, *value = tab + 1;
      if (!pd_onnx_im_const(im, state)) continue; /* not an initializer: nothing to carry */
      if (!post) {
        const char *sn = model_name(m->graph, state);
        if (sn) st = pd_onnx_im_declare_carried(im, sn);
        continue;
      }
      if (!pd_onnx_im_has_name(im, value)) continue;
      const char *sn = model_name(m->graph, state), *vn = model_name(m->graph, value);
      if (sn && vn) st = pd_onnx_im_emit(im, "identity", 1, (const char *[]){vn}, 1, (const char *[]){sn}, NULL);
    }
    free(lines);
  }
  return st;
}
