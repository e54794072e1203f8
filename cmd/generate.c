/* generate.c — `paddle-run generate`: sample text from a trained language
 * model whose data is a text binding (docs/training.md, "Generating text").
 * The net is built at batch 1 with its text binding's window as 1 and run
 * one token at a time; its STATE variables carry the recurrent state from
 * token to token, as they carry it from window to window in training. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arch.h"
#include "base/rng.h"
#include "base/util.h"
#include "cli.h"
#include "core/initializer.h"
#include "core/net.h"
#include "core/runner.h"
#include "cpu/blas.h"
#include "cpu/parallel.h"
#include "io/checkpoint.h"
#include "io/params.h"
#include "io/textdata.h"
#include "text/textformat.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_generate = {
    "generate", "sample text from a trained language model",
    "usage: paddle-run generate NET.pbtxt --params DIR --prime TEXT [--length N] [--temperature T]\n"
    "                           [--top-k K] [--seed N] [--output VAR] [--threads N]\n"
    "\n"
    "Feeds TEXT to the net one byte at a time through its train.data binding of\n"
    "type text (the window run as 1, the recurrent states carried in its STATE\n"
    "variables), then samples N more bytes from the softmax of VAR, each fed back.\n"
    "Writes TEXT and the sampled bytes to stdout.\n"
    "\n"
    "  --params DIR        trained parameters: a checkpoint (its vocabulary is used)\n"
    "  --prime TEXT        the text to start from (at least one byte)\n"
    "  --length N          bytes to sample (default 100)\n"
    "  --temperature T     divides the logits; 0: always the most likely (default 1)\n"
    "  --top-k K           sample among the K most likely only (default 0: all)\n"
    "  --seed N            the sampling's seed (default 1): the same seed, the same text\n"
    "  --output VAR        the logits sampled from (default: the net's one Logits\n"
    "                      input, e.g. of softmax_with_cross_entropy)\n"
    "  --threads N         threads for matrix products (default: all cores)\n",
    run};

typedef struct gen {
  pd_net *net;
  pd_scope *scope;
  pd_runner r;
  bool *active;
  int ids_v, keep_v, out_v;
  int64_t batch;
  int16_t map[256]; /* byte -> id, -1: not in the vocabulary */
  uint8_t bytes[256];
  int nvocab;
  const char *vocab_from;
  pd_tensor table; /* the folded input projection (fold_projection), until prepare stores it */
  char *table_name;
} gen;

static const Paddle__DataBinding *text_binding(const Paddle__NetDesc *d) {
  for (size_t i = 0; d->train && i < d->train->n_data; i++)
    if (d->train->data[i]->type && strcmp(d->train->data[i]->type, "text") == 0) return d->train->data[i];
  return NULL;
}

static pd_status rename_in(char **names, size_t n, const char *from, const char *to) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], from)) {
      char *c = strdup(to);
      if (!c) return PD_ERR_RUNTIME;
      free(names[i]);
      names[i] = c;
    }
  return PD_OK;
}

/* A carried state, declared with the batch B as its dim k for training
 * ([B, hidden] for recurrent, [layers, B, hidden] for lstm): 1 there, under
 * a name of its own, so that its checkpointed value is not loaded (it
 * starts at its init: keep is 0 at the prime's first byte anyway). */
static pd_status carry_at_batch_1(Paddle__NetDesc *d, Paddle__VarDesc *v, size_t k, pd_error *err) {
  size_t len = strlen(v->name);
  char *to = malloc(len + sizeof "@GENERATE");
  if (!to) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  memcpy(to, v->name, len);
  memcpy(to + len, "@GENERATE", sizeof "@GENERATE");
  char *from = v->name;
  pd_status st = PD_OK;
  for (size_t i = 0; !st && i < d->n_op; i++)
    if ((st = rename_in(d->op[i]->inputs, d->op[i]->n_inputs, from, to)) ||
        (st = rename_in(d->op[i]->outputs, d->op[i]->n_outputs, from, to)))
      break;
  for (size_t k = 0; !st && k < d->n_block; k++)
    for (size_t i = 0; !st && i < d->block[k]->n_op; i++) {
      Paddle__OpDesc *o = d->block[k]->op[i];
      if (!(st = rename_in(o->inputs, o->n_inputs, from, to))) st = rename_in(o->outputs, o->n_outputs, from, to);
    }
  v->name = to;
  v->shape[k] = 1;
  free(from);
  return st ? pd_errorf(err, PD_ERR_RUNTIME, "out of memory") : PD_OK;
}

/* The batch dim of a carried state: a STATE variable of two or more dims
 * (not a per-feature statistic like batch_norm's) with a dim equal to the
 * batch size B, the first such; SIZE_MAX if it is none. */
static size_t carried_dim(const Paddle__VarDesc *v, int64_t B) {
  if (v->kind != PADDLE__VAR_KIND__STATE || v->n_shape < 2 || B == 1) return SIZE_MAX;
  for (size_t k = 0; k < v->n_shape; k++)
    if (v->shape[k] == B) return k;
  return SIZE_MAX;
}

/* ---- the input projection folded into a table ----
 * At batch 1 a fused recurrent op's input projection x W^T is one product
 * per token that streams the whole of W for a single row (char_lm: 256 KB
 * of the 1.5 MB a token reads). Where x is an embedding's output that only
 * the op's X reads, every id's projection is computed once, here, into a
 * table [V, D G H] (D directions, G gates of H rows: W's [D, G H, I]) by the
 * very call the op makes at batch 1, so not a bit changes. The embedding
 * then gathers the id's row of the table, a reshape makes it the op's W
 * [D, G H, 1], and X becomes a constant 1: the op's product 1 * row is the
 * row exactly, and its biases are added as before. */

static const char *attr_key(const Paddle__OpDesc *o, const char *key, int64_t *i) {
  for (size_t a = 0; a < o->n_attrs; a++)
    if (o->attrs[a]->key && !strcmp(o->attrs[a]->key, key)) {
      if (i) *i = o->attrs[a]->value ? o->attrs[a]->value->i : 0;
      return key;
    }
  return NULL;
}

static bool names_var(const char *const *names, size_t n, const char *v) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], v)) return true;
  return false;
}

/* Whether an op's input or output is called name. */
static bool name_taken_by_op(const Paddle__NetDesc *d, const char *name) {
  for (size_t i = 0; i < d->n_op; i++)
    if (names_var((const char *const *)d->op[i]->inputs, d->op[i]->n_inputs, name) ||
        names_var((const char *const *)d->op[i]->outputs, d->op[i]->n_outputs, name))
      return true;
  for (size_t k = 0; k < d->n_block; k++)
    for (size_t i = 0; i < d->block[k]->n_op; i++) {
      const Paddle__OpDesc *o = d->block[k]->op[i];
      if (names_var((const char *const *)o->inputs, o->n_inputs, name) ||
          names_var((const char *const *)o->outputs, o->n_outputs, name))
        return true;
    }
  return false;
}

/* Whether the desc has a variable or an op input or output called name. */
static bool name_taken(const Paddle__NetDesc *d, const char *name) {
  for (size_t i = 0; i < d->n_var; i++)
    if (!strcmp(d->var[i]->name, name)) return true;
  return name_taken_by_op(d, name);
}

/* The op (top level) that reads x as its only reader, in its first input,
 * and is a fused recurrent op with its W named; -1 if none. */
static int projection_reader(const Paddle__NetDesc *d, const char *x) {
  int found = -1;
  for (size_t i = 0; i < d->n_op; i++)
    for (size_t k = 0; k < d->op[i]->n_inputs; k++) {
      if (strcmp(d->op[i]->inputs[k], x) != 0) continue;
      const char *t = d->op[i]->type;
      if (found >= 0 || k != 0 || (strcmp(t, "lstm") && strcmp(t, "gru") && strcmp(t, "rnn")) ||
          d->op[i]->n_inputs < 2 || !d->op[i]->inputs[1][0])
        return -1;
      found = (int)i;
    }
  for (size_t b = 0; b < d->n_block; b++) /* a read inside a block keeps x */
    for (size_t i = 0; i < d->block[b]->n_op; i++)
      if (names_var((const char *const *)d->block[b]->op[i]->inputs, d->block[b]->op[i]->n_inputs, x)) return -1;
  for (size_t i = 0; i < d->n_var; i++) /* a declared x may be fetched or checked: keep it */
    if (!strcmp(d->var[i]->name, x)) return -1;
  return found;
}

static char *joined(const char *a, const char *b) {
  char *s = malloc(strlen(a) + strlen(b) + 1);
  if (s) strcat(strcpy(s, a), b);
  return s;
}

/* The table: row v is the projection of embedding row v (all zero for
 * padding_idx, as the op outputs it), direction by direction. */
static pd_status fold_table(gen *g, const pd_tensor *e, const pd_tensor *w, int64_t pad, pd_error *err) {
  int64_t V = e->dims[0], I = e->dims[1], D = w->dims[0], GH = w->dims[1];
  pd_tensor_init(&g->table, e->dtype);
  pd_status st = pd_tensor_set_dims(&g->table, 2, (int64_t[]){V, D * GH}, err);
  if (!st) st = pd_tensor_alloc(&g->table, err);
  if (st) return st;
  size_t es = pd_dtype_size(e->dtype);
  void *zero = calloc((size_t)I, es);
  if (!zero) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int64_t v = 0; v < V; v++)
    for (int64_t k = 0; k < D; k++) {
      const char *x = v == pad ? zero : (const char *)pd_tensor_data(e) + (size_t)(v * I) * es;
      const char *wk = (const char *)pd_tensor_data(w) + (size_t)(k * GH * I) * es;
      char *row = (char *)pd_tensor_data(&g->table) + (size_t)(v * D * GH + k * GH) * es;
      if (e->dtype == PD_F32)
        pd_gemm_float(false, true, 1, GH, I, 1, (const float *)x, I, (const float *)wk, I, 0, (float *)row, GH);
      else
        pd_gemm_double(false, true, 1, GH, I, 1, (const double *)x, I, (const double *)wk, I, 0, (double *)row, GH);
    }
  free(zero);
  return PD_OK;
}

/* Rewrites d as the header says where it applies; anything that does not
 * fit (no such pair, names taken, parameters missing or of other shapes:
 * prepare reports those) leaves d as it is. */
static pd_status fold_projection(gen *g, Paddle__NetDesc *d, const char *path, const char *dir, const char *output,
                                 pd_error *err) {
  int ie = -1, ir = -1;
  for (size_t i = 0; i < d->n_op && ir < 0; i++) {
    Paddle__OpDesc *o = d->op[i];
    if (strcmp(o->type, "embedding") != 0 || o->n_inputs != 2 || o->n_outputs != 1 || !o->inputs[1][0]) continue;
    if (output && !strcmp(output, o->outputs[0])) continue;
    ie = (int)i, ir = projection_reader(d, o->outputs[0]);
  }
  if (ir < 0) return PD_OK;
  Paddle__OpDesc *e = d->op[ie], *r = d->op[ir];
  const char *x = e->outputs[0];
  if (ir < ie || strpbrk(x, "\"\\\n") || strpbrk(r->inputs[1], "\"\\\n")) return PD_OK;
  char *en = strdup(e->inputs[1]), *wn = strdup(r->inputs[1]); /* the rewrite frees the ops' copies */
  if (!en || !wn) {
    free(en), free(wn);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  pd_checkpoint *ck = NULL;
  if (pd_checkpoint_open(dir, &ck, err)) { /* prepare says why */
    pd_error_clear(err);
    free(en), free(wn);
    return PD_OK;
  }
  pd_tensor et, wt;
  pd_tensor_init(&et, PD_F32), pd_tensor_init(&wt, PD_F32);
  int64_t pad = -1;
  attr_key(e, "padding_idx", &pad);
  bool fits = pd_checkpoint_find(ck, en) && pd_checkpoint_find(ck, wn) && !pd_checkpoint_read(ck, en, &et, err) &&
              !pd_checkpoint_read(ck, wn, &wt, err) && pd_dtype_is_float(et.dtype) && et.dtype == wt.dtype &&
              et.ndim == 2 && wt.ndim == 3 && wt.dims[2] == et.dims[1] && et.dims[0] > 0;
  pd_checkpoint_close(ck);
  pd_error_clear(err);
  pd_status st = PD_OK;
  char *tab = joined(wn, "@FOLD@GENERATE"), *row = joined(x, "@FOLD@GENERATE"), *one = joined(x, "@ONE@GENERATE"),
       *wx = joined(wn, "@ROW@GENERATE"), *snip = NULL;
  if (!tab || !row || !one || !wx) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  fits = fits && !st && !name_taken(d, tab) && !name_taken(d, row) && !name_taken(d, one) && !name_taken(d, wx);
  if (fits) st = fold_table(g, &et, &wt, pad, err);
  if (fits && !st) {
    const char *dt = et.dtype == PD_F64 ? "FLOAT64" : "FLOAT32";
    int64_t D = wt.dims[0], GH = wt.dims[1];
    size_t len = 512 + 2 * strlen(tab) + strlen(one) + strlen(row) + strlen(wx);
    snip = malloc(len);
    if (!snip)
      st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    else
      snprintf(snip, len,
               "var { name: \"%s\" shape: [%lld, %lld] dtype: %s kind: PARAM init { type: \"constant\" value: 0 } }\n"
               "var { name: \"%s\" shape: [1, 1, 1] dtype: %s kind: PARAM init { type: \"constant\" value: 1 } }\n"
               "op { type: \"reshape\" inputs: \"%s\" outputs: \"%s\"\n"
               "     attrs { key: \"shape\" value { ints: [%lld, %lld, 1] } } }\n",
               tab, (long long)et.dims[0], (long long)(D * GH), dt, one, dt, row, wx, (long long)D, (long long)GH);
  }
  ProtobufCMessage *m = NULL;
  if (snip && !st) st = pd_text_parse(&paddle__net_desc__descriptor, snip, strlen(snip), path, &m, NULL, err);
  Paddle__NetDesc *add = (Paddle__NetDesc *)m;
  Paddle__VarDesc **vars = add ? realloc(d->var, sizeof *vars * (d->n_var + add->n_var)) : NULL;
  if (vars) d->var = vars;
  Paddle__OpDesc **ops = vars ? realloc(d->op, sizeof *ops * (d->n_op + 1)) : NULL;
  if (ops) d->op = ops;
  if (add && !st && !ops) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (add && !st) { /* the parsed messages move into d */
    for (size_t i = 0; i < add->n_var; i++) d->var[d->n_var++] = add->var[i];
    memmove(d->op + ie + 2, d->op + ie + 1, sizeof *ops * (d->n_op - (size_t)ie - 1));
    d->op[ie + 1] = add->op[0];
    d->n_op++;
    add->n_var = add->n_op = 0;
    /* the embedding reads the table whole: no vocab_size, dim or padding_idx of E's */
    size_t keep = 0;
    for (size_t a = 0; a < e->n_attrs; a++)
      if (strcmp(e->attrs[a]->key, "vocab_size") && strcmp(e->attrs[a]->key, "dim") &&
          strcmp(e->attrs[a]->key, "padding_idx"))
        e->attrs[keep++] = e->attrs[a];
      else
        protobuf_c_message_free_unpacked(&e->attrs[a]->base, NULL);
    e->n_attrs = keep;
    free(e->inputs[1]), free(e->outputs[0]), free(r->inputs[0]), free(r->inputs[1]);
    e->inputs[1] = tab, e->outputs[0] = row, r->inputs[0] = one, r->inputs[1] = wx;
    /* E and W no op reads any more: their declarations go (their shapes came from the ops) */
    for (size_t i = 0; i < d->n_var;) {
      Paddle__VarDesc *v = d->var[i];
      bool drop = (!strcmp(v->name, en) || !strcmp(v->name, wn)) && !name_taken_by_op(d, v->name);
      if (!drop) {
        i++;
        continue;
      }
      protobuf_c_message_free_unpacked(&v->base, NULL);
      memmove(d->var + i, d->var + i + 1, sizeof *d->var * (d->n_var - i - 1));
      d->n_var--;
    }
    g->table_name = strdup(tab);
    tab = row = one = wx = NULL;
    if (!g->table_name) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  if (m) protobuf_c_message_free_unpacked(m, NULL);
  if (!g->table_name) pd_tensor_release(&g->table);
  pd_tensor_release(&et), pd_tensor_release(&wt);
  free(tab), free(row), free(one), free(wx), free(snip), free(en), free(wn);
  return st;
}

/* The desc run one byte at a time at batch 1: the text binding's variables
 * declared [1, 1], and the carried states with 1 for their batch dim. */
static pd_status one_step_net(gen *g, const char *path, const char *dir, const char *output, pd_error *err) {
  char *src;
  size_t len;
  pd_status st = pd_read_file(path, PD_NETDESC_MAX, &src, &len, err);
  if (st) return st;
  ProtobufCMessage *m = NULL;
  pd_srcmap map = {0};
  if ((st = pd_text_parse(&paddle__net_desc__descriptor, src, len, path, &m, &map, err))) {
    free(src);
    pd_srcmap_free(&map);
    return st;
  }
  Paddle__NetDesc *d = (Paddle__NetDesc *)m;
  const Paddle__DataBinding *b = text_binding(d);
  if (!b)
    st = pd_errorf(err, PD_ERR_INPUT,
                   "%s: no train { data { type: \"text\" ... } }: generate feeds the net through its text binding",
                   path);
  int64_t B = d->train ? d->train->batch_size : 0;
  for (size_t i = 0; !st && i < d->n_var; i++) {
    Paddle__VarDesc *v = d->var[i];
    bool text = !strcmp(v->name, b->var) || (b->target && !strcmp(v->name, b->target)) ||
                (b->keep && !strcmp(v->name, b->keep));
    if (text && v->n_shape >= 1 && v->shape[0] == B) v->shape[0] = 1;
    if (text && v->n_shape == 2 && strcmp(v->name, b->keep ? b->keep : "") != 0) v->shape[1] = 1;
    size_t k = carried_dim(v, B);
    if (k != SIZE_MAX) st = carry_at_batch_1(d, v, k, err);
  }
  if (st) {
    protobuf_c_message_free_unpacked(m, NULL);
    free(src);
    pd_srcmap_free(&map);
    return st;
  }
  if (!st) st = fold_projection(g, d, path, dir, output, err);
  if (st) {
    protobuf_c_message_free_unpacked(m, NULL);
    free(src);
    pd_srcmap_free(&map);
    return st;
  }
  char *var = strdup(b->var), *keep = b->keep ? strdup(b->keep) : NULL;
  g->batch = 1;
  if ((st = pd_net_from_desc(path, d, src, len, &map, NULL, &g->net, err)))
    pd_error_prefix(err, "generate runs the net with a window of 1");
  if (!st) {
    g->ids_v = pd_net_var(g->net, var);
    g->keep_v = keep ? pd_net_var(g->net, keep) : -1;
  }
  free(var), free(keep);
  return st;
}

/* The vocabulary: the checkpoint's, else the binding's file, else bytes. */
static pd_status load_vocab(gen *g, const char *path, const char *dir, pd_error *err) {
  pd_checkpoint *ck = NULL;
  pd_status st = pd_checkpoint_open(dir, &ck, err);
  if (st) return st;
  const pd_ckpt_state *cs = pd_checkpoint_state(ck);
  for (int i = 0; i < 256; i++) g->map[i] = -1;
  if (cs->n_vocab) {
    g->nvocab = (int)cs->n_vocab;
    memcpy(g->bytes, cs->vocab, cs->n_vocab);
    for (int i = 0; i < g->nvocab; i++) g->map[g->bytes[i]] = (int16_t)i;
    g->vocab_from = "the checkpoint's vocabulary";
    pd_checkpoint_close(ck);
    return PD_OK;
  }
  pd_checkpoint_close(ck);
  const Paddle__DataBinding *b = text_binding(g->net->desc);
  if (b && b->vocab) {
    char *vp = pd_path_beside(path, b->vocab);
    char *buf = NULL;
    size_t len;
    st = vp ? pd_read_file(vp, 1 << 20, &buf, &len, err) : pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    if (!st) st = pd_vocab_parse(vp, (const uint8_t *)buf, len, g->map, g->bytes, &g->nvocab, err);
    free(buf), free(vp);
    g->vocab_from = "the vocabulary of train.data";
    return st;
  }
  g->nvocab = 256;
  for (int i = 0; i < 256; i++) g->map[i] = (int16_t)i, g->bytes[i] = (uint8_t)i;
  return PD_OK;
}

/* --output, or the variable the net's ops read as Logits (one). */
static pd_status pick_output(gen *g, const char *name, pd_error *err) {
  pd_net *net = g->net;
  if (name) {
    g->out_v = pd_net_var(net, name);
    return g->out_v < 0 ? pd_errorf(err, PD_ERR_INPUT, "--output: the net has no variable \"%s\"", name) : PD_OK;
  }
  g->out_v = -1;
  for (int o = 0; o < net->nops; o++) /* by its slot's name: the core never compares op types */
    for (int sl = 0; sl < net->ops[o].def->n_inputs; sl++) {
      if (strcmp(net->ops[o].def->inputs[sl].name, "Logits") != 0 || net->ops[o].in[sl].n != 1) continue;
      if (g->out_v >= 0 && g->out_v != net->ops[o].in[sl].vars[0])
        return pd_errorf(err, PD_ERR_INPUT, "the net has more than one op reading Logits: give --output VAR");
      g->out_v = net->ops[o].in[sl].vars[0];
    }
  return g->out_v < 0 ? pd_errorf(err, PD_ERR_INPUT,
                                  "the net has no op reading Logits (softmax_with_cross_entropy): give --output VAR")
                      : PD_OK;
}

static pd_status prepare(gen *g, const char *dir, pd_error *err) {
  pd_net *net = g->net;
  int *targets = calloc((size_t)net->nvars + 1, sizeof *targets), n = 0;
  if (!targets || !(g->active = calloc((size_t)net->nops + 1, 1))) {
    free(targets);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  targets[n++] = g->out_v;
  for (int v = 0; v < net->nvars; v++) /* the carried states are written every step */
    if (net->vars[v].kind == PD_VAR_STATE && v != g->out_v && net->vars[v].name[0] != '@') targets[n++] = v;
  pd_net_prune(net, targets, n, g->active);
  pd_status st = pd_net_select_kernels(net, PD_CPU, err);
  if (!st && !(g->scope = pd_scope_new(NULL))) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  /* the carried states are not loaded (renamed, of another shape); every
   * other persistable variable the run reads must be there */
  pd_checkpoint *ck = NULL;
  if (!st) st = pd_checkpoint_open(dir, &ck, err);
  for (int o = 0; o < net->nops && !st; o++)
    for (int sl = 0; g->active[o] && sl < net->ops[o].def->n_inputs && !st; sl++)
      for (int i = 0; i < net->ops[o].in[sl].n && !st; i++) {
        const pd_var_info *vi = &net->vars[net->ops[o].in[sl].vars[i]];
        size_t len = strlen(vi->name);
        bool carried = len > 9 && !strcmp(vi->name + len - 9, "@GENERATE");
        if ((vi->kind == PD_VAR_PARAM || vi->kind == PD_VAR_STATE) && !carried && !pd_checkpoint_find(ck, vi->name))
          st = pd_errorf(err, PD_ERR_INPUT, "%s: no parameter \"%s\" in this directory", pd_checkpoint_dir(ck),
                         vi->name);
      }
  pd_checkpoint_close(ck);
  if (!st) st = pd_params_load(net, g->scope, dir, g->active, false, NULL, NULL, err);
  if (!st) st = pd_init_persistables(net, g->scope, NULL, 1, err);
  if (!st && g->table_name) { /* fold_projection's table, computed from the checkpoint's values */
    pd_var *tv = pd_scope_find(g->scope, g->table_name);
    if (!tv || pd_tensor_bytes(&tv->tensor) != pd_tensor_bytes(&g->table))
      st = pd_errorf(err, PD_ERR_RUNTIME, "generate: the folded projection \"%s\" has no room", g->table_name);
    else
      memcpy(pd_tensor_data(&tv->tensor), pd_tensor_data(&g->table), pd_tensor_bytes(&g->table));
    pd_tensor_release(&g->table);
  }
  if (!st) st = pd_runner_init(&g->r, net, g->scope, g->active, err);
  if (!st) st = pd_runner_plan_memory(&g->r, targets, n, false, err);
  if (!st) st = pd_runner_set_place(&g->r, (pd_place){.kind = PD_CPU}, err);
  g->r.exec.training = false;
  free(targets);
  return st;
}

static pd_status feed(gen *g, int v, double value, pd_error *err) {
  if (v < 0) return PD_OK;
  const pd_var_info *vi = &g->net->vars[v];
  pd_tensor *t = g->r.t[v];
  int64_t dims[PD_MAX_DIMS];
  dims[0] = g->batch;
  for (int d = 1; d < vi->meta.ndim; d++) dims[d] = vi->meta.dims[d];
  t->dtype = vi->meta.dtype;
  pd_status st = pd_tensor_set_dims(t, vi->meta.ndim, dims, err);
  if (!st) st = pd_tensor_alloc(t, err);
  for (int64_t i = 0; !st && i < pd_tensor_numel(t); i++) pd_tensor_set(t, i, value);
  return st;
}

/* One token in, its logits out. */
static pd_status step(gen *g, int id, bool first, const pd_tensor **logits, pd_error *err) {
  pd_status st = feed(g, g->ids_v, id, err);
  if (!st) st = feed(g, g->keep_v, first ? 0 : 1, err);
  if (!st) st = pd_runner_run(&g->r, 0, g->net->nops, err);
  if (!st) st = pd_runner_fetch(&g->r, g->out_v, err);
  if (st) return st;
  *logits = g->r.t[g->out_v];
  return PD_OK;
}

/* e^a for a <= 0 (NaN stays NaN), written so that the compiler vectorises
 * a loop of it (libm's exp is a call per element, a twentieth of a token's
 * time at 256 logits): a = n ln 2 + r with |r| <= ln 2 / 2, e^r by its
 * Taylor series to r^13 (the rest is below 1e-17 of it), 2^n from the
 * exponent bits; 0 below -708 (e^-708 is 3e-308: no sample ever lands in
 * such a share). Within 1 ulp of exp. No floating-point compare, no
 * conversion to an integer (either may trap, and GCC keeps a loop that may
 * trap scalar) and no branch: the range is told from the bits, the choices
 * are masks, and n is rounded by adding 1.5 2^52 (its low bits hold n). */
static inline double exp_nonpos(double a) {
  uint64_t ua, ub, ue;
  memcpy(&ua, &a, sizeof ua);
  const uint64_t mag = ua & 0x7fffffffffffffffull, m708 = 0xc086200000000000ull; /* -708.0 */
  const uint64_t in = -(uint64_t)(mag <= 0x4086200000000000ull);                 /* all ones: |a| <= 708 (not NaN) */
  const uint64_t nan = -(uint64_t)(mag > 0x7ff0000000000000ull);
  ub = (ua & in) | (m708 & ~in); /* masks, not ?: (GCC makes a branch of that and then keeps the loop scalar) */
  double b, e, scale;
  memcpy(&b, &ub, sizeof b);
  const double big = 6755399441055744.0; /* 1.5 2^52 */
  double k = b * 1.4426950408889634 + big, fn = k - big;
  double r = b - fn * 6.93147180369123816490e-01 - fn * 1.90821492927058770002e-10;
  double q = 1.0 / 6227020800.0;
  q = q * r + 1.0 / 479001600.0;
  q = q * r + 1.0 / 39916800.0;
  q = q * r + 1.0 / 3628800.0;
  q = q * r + 1.0 / 362880.0;
  q = q * r + 1.0 / 40320.0;
  q = q * r + 1.0 / 5040.0;
  q = q * r + 1.0 / 720.0;
  q = q * r + 1.0 / 120.0;
  q = q * r + 1.0 / 24.0;
  q = q * r + 1.0 / 6.0;
  q = q * r + 0.5;
  q = q * r + 1.0;
  q = q * r + 1.0;
  uint64_t kb;
  memcpy(&kb, &k, sizeof kb);
  uint64_t bits = (kb + 1023) << 52; /* n + 1023 in the exponent field: n >= -1022 */
  memcpy(&scale, &bits, sizeof scale);
  e = q * scale;
  memcpy(&ue, &e, sizeof ue);
  ue = (ue & in) | (ua & nan); /* below -708: 0; NaN: itself */
  memcpy(&e, &ue, sizeof e);
  return e;
}

/* p[i] = e^((z[i] - mx) inv): a loop GCC vectorises where it has 64-bit
 * integer compares (SSE4.2; the baseline's SSE2 has none), with AVX2 where
 * the CPU has it. The same operations in the same order either way (ISO C
 * contracts no multiply-add): the same bits, so the same text. */
#define PD_EXPS_BODY \
  for (int64_t i = 0; i < v; i++) p[i] = exp_nonpos((z[i] - mx) * inv);
#ifdef PD_X86
__attribute__((target("avx2"))) static void exps_avx2(double *restrict p, const double *restrict z, int64_t v,
                                                      double mx, double inv) {
  PD_EXPS_BODY
}
#endif
static void exps(double *restrict p, const double *restrict z, int64_t v, double mx, double inv) {
#ifdef PD_X86
  static int avx2 = -1;
  if (avx2 < 0) {
    __builtin_cpu_init();
    avx2 = __builtin_cpu_supports("avx2");
  }
  if (avx2) {
    exps_avx2(p, z, v, mx, inv);
    return;
  }
#endif
  PD_EXPS_BODY
}
#undef PD_EXPS_BODY

/* The next id from the first v logits (ids beyond the vocabulary have no
 * byte and are never drawn). z: room for v doubles, p for v + 1. */
static int sample(const pd_tensor *t, int64_t v, double temperature, long long top_k, uint64_t *rng, double *z,
                  double *p) {
  if (t->dtype == PD_F32) { /* the common case read directly: generate's step is a few microseconds */
    const float *f = PD_DATA(t, float);
    for (int64_t i = 0; i < v; i++) z[i] = f[i];
  } else
    for (int64_t i = 0; i < v; i++) z[i] = pd_tensor_get(t, i);
  int best = 0;
  for (int64_t i = 1; i < v; i++)
    if (z[i] > z[best]) best = (int)i;
  if (!(temperature > 0)) return best;
  double mx = z[best], cut = -INFINITY, sum = 0;
  if (top_k > 0 && top_k < v) { /* the k-th largest logit: values below it drop out */
    for (int64_t i = 0; i < v; i++) p[i] = z[i];
    for (long long k = 0; k < top_k; k++) {
      int64_t m = k;
      for (int64_t i = k + 1; i < v; i++)
        if (p[i] > p[m]) m = i;
      double tmp = p[k];
      p[k] = p[m], p[m] = tmp;
    }
    cut = p[top_k - 1];
  }
  const double inv = 1 / temperature;
  exps(p, z, v, mx, inv);
  for (int64_t i = 0; i < v; i++) { /* in order: the sum's rounding is the same every run */
    p[i] = z[i] >= cut ? p[i] : 0;
    sum += p[i];
  }
  double u = pd_rng_uniform(rng) * sum, acc = 0;
  for (int64_t i = 0; i < v; i++) {
    acc += p[i];
    if (p[i] > 0 && u < acc) return (int)i;
  }
  return best;
}

static pd_status generate(gen *g, const char *prime, long long length, double temperature, long long top_k,
                          uint64_t seed, pd_error *err) {
  size_t n = strlen(prime);
  for (size_t i = 0; i < n; i++)
    if (g->map[(uint8_t)prime[i]] < 0) {
      uint8_t c = (uint8_t)prime[i];
      char cb[16];
      snprintf(cb, sizeof cb, c >= 0x20 && c < 0x7f ? "'%c'" : "0x%02x", c);
      return pd_errorf(err, PD_ERR_INPUT, "--prime: byte %s at offset %zu is not in %s", cb, i, g->vocab_from);
    }
  const pd_tensor *logits = NULL;
  pd_status st = PD_OK;
  for (size_t i = 0; i < n && !st; i++) st = step(g, g->map[(uint8_t)prime[i]], i == 0, &logits, err);
  if (st) return st;
  const pd_tensor *shape = logits;
  int64_t v = shape->ndim ? shape->dims[shape->ndim - 1] : 1;
  if (v > g->nvocab) v = g->nvocab; /* ids beyond the vocabulary have no byte */
  double *p = malloc(sizeof *p * (size_t)(2 * v + 1));
  if (!p) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  fwrite(prime, 1, n, stdout);
  uint64_t rng = seed ^ 0x9e3779b97f4a7c15ull;
  for (long long k = 0; k < length && !st; k++) {
    int id = sample(logits, v, temperature, top_k, &rng, p + v + 1, p);
    putchar(g->bytes[id]);
    if (k + 1 < length) st = step(g, id, false, &logits, err);
  }
  free(p);
  return st;
}

static int run(int argc, char **argv) {
  enum { PARAMS, PRIME, LENGTH, TEMP, TOPK, SEED, OUTPUT, THREADS, NOPT };
  pd_opt opts[NOPT] = {
      [PARAMS] = {.name = "--params", .has_value = true}, [PRIME] = {.name = "--prime", .has_value = true},
      [LENGTH] = {.name = "--length", .has_value = true}, [TEMP] = {.name = "--temperature", .has_value = true},
      [TOPK] = {.name = "--top-k", .has_value = true},    [SEED] = {.name = "--seed", .has_value = true},
      [OUTPUT] = {.name = "--output", .has_value = true}, [THREADS] = {.name = "--threads", .has_value = true}};
  char *pos[1];
  int code = 0;
  int npos = pd_cli_parse(&pd_cmd_generate, argc, argv, opts, NOPT, pos, 1, &code);
  if (npos < 0) goto out;
  code = 2;
  if (npos != 1) {
    pd_cli_usage_error("generate", "expected NET.pbtxt; see `paddle-run generate --help`");
    goto out;
  }
  if (!opts[PARAMS].value || !opts[PRIME].value || !opts[PRIME].value[0]) {
    pd_cli_usage_error("generate", "give --params DIR and --prime TEXT (at least one byte)");
    goto out;
  }
  long long length = 100, top_k = 0, threads = 0;
  double temperature = 1;
  uint64_t seed = 1;
  if ((opts[LENGTH].value && !pd_cli_int("generate", "--length", opts[LENGTH].value, 0, PD_MAX_BATCH, &length)) ||
      (opts[TOPK].value && !pd_cli_int("generate", "--top-k", opts[TOPK].value, 0, 256, &top_k)) ||
      (opts[THREADS].value && !pd_cli_int("generate", "--threads", opts[THREADS].value, 1, PD_MAX_THREADS, &threads)) ||
      (opts[SEED].value && !pd_cli_u64("generate", "--seed", opts[SEED].value, &seed)) ||
      (opts[TEMP].value && !pd_cli_double("generate", "--temperature", opts[TEMP].value, &temperature)))
    goto out;
  if (!(temperature >= 0) || !isfinite(temperature)) {
    pd_cli_usage_error("generate", "--temperature must be >= 0, got %s", opts[TEMP].value);
    goto out;
  }
  pd_set_threads((int)threads);
  pd_error err = {0};
  gen g = {0};
  pd_status st = one_step_net(&g, pos[0], opts[PARAMS].value, opts[OUTPUT].value, &err);
  if (!st) st = load_vocab(&g, pos[0], opts[PARAMS].value, &err);
  if (!st) st = pick_output(&g, opts[OUTPUT].value, &err);
  if (!st) st = prepare(&g, opts[PARAMS].value, &err);
  if (!st) st = generate(&g, opts[PRIME].value, length, temperature, top_k, seed, &err);
  code = st ? pd_cli_fail(&err) : 0;
  if (!st && fflush(stdout)) code = 1;
  free(g.active);
  pd_runner_free(&g.r);
  pd_scope_free(g.scope);
  pd_net_free(g.net);
  pd_tensor_release(&g.table);
  free(g.table_name);
out:
  pd_cli_free(opts, NOPT);
  return code;
}
