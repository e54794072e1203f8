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

#include "base/rng.h"
#include "base/util.h"
#include "cli.h"
#include "core/initializer.h"
#include "core/net.h"
#include "core/runner.h"
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

/* The desc run one byte at a time at batch 1: the text binding's variables
 * declared [1, 1], and the carried states with 1 for their batch dim. */
static pd_status one_step_net(gen *g, const char *path, pd_error *err) {
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
  for (int64_t i = 0; i < v; i++) {
    p[i] = z[i] >= cut ? exp((z[i] - mx) * inv) : 0;
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
  pd_status st = one_step_net(&g, pos[0], &err);
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
out:
  pd_cli_free(opts, NOPT);
  return code;
}
