/* gpu_parity.c — every op's GPU kernel against its CPU kernel, forward and
 * backward and update, on the same random inputs.
 *
 *   gpu_parity [--tol T] [--batch N] [--seed S] NET.pbtxt...
 *
 * Each net is loaded twice (CPU kernels, GPU kernels), made trainable with
 * its file's loss and optimizer, given the same parameters (initialised
 * from the seed) and the same random batch (floats uniform in [0, 1),
 * integers 0 or 1), and run for one step. Before the GPU step every tensor
 * an op writes is poisoned (float NaN, other dtypes all ones bits), so an
 * element a kernel leaves unwritten fails. Then every output of every op,
 * in op order, is compared: |gpu - cpu| <= tol * max(1, |cpu|), and a NaN or
 * Inf on either side never passes. Finally every registered op that has a
 * GPU kernel but appeared in none of the nets is listed, and fails: every
 * GPU kernel is checked by some net (add one under test/gpu/nets/).
 * Exit 0 all agree, 1 a difference, 2 bad usage or input, 77 no GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "core/backward.h"
#include "gpu/gpurt.h"
#include "core/initializer.h"
#include "core/net.h"
#include "core/runner.h"
#include "core/optimizer.h"
#include "base/util.h"

typedef struct side {
  pd_net *net;
  pd_scope *scope;
  pd_runner r;
} side;

static void side_free(side *s) {
  pd_runner_free(&s->r);
  pd_scope_free(s->scope);
  pd_net_free(s->net);
}

static pd_status side_open(side *s, const char *path, pd_place place, uint64_t seed, pd_error *err) {
  memset(s, 0, sizeof *s);
  pd_status st = pd_net_load(path, NULL, &s->net, err);
  const Paddle__TrainDesc *td = st ? NULL : s->net->desc->train;
  Paddle__OptimizerDesc dflt = PADDLE__OPTIMIZER_DESC__INIT;
  if (!st && td && td->loss && *td->loss)
    st = pd_net_make_trainable(s->net, td->loss, td->optimizer ? td->optimizer : &dflt, err);
  if (!st) st = pd_net_select_kernels(s->net, place.kind, err);
  if (!st && !(s->scope = pd_scope_new(NULL))) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (!st) st = pd_init_persistables(s->net, s->scope, td ? td->default_init : NULL, seed, err);
  if (!st) st = pd_runner_init(&s->r, s->net, s->scope, NULL, err);
  if (!st) {
    s->r.exec.training = true;
    s->r.exec.seed = seed;
  }
  int lr = pd_net_var(s->net, "@lr"), stepv = pd_net_var(s->net, "@step");
  if (!st && lr >= 0) pd_tensor_set(s->r.t[lr], 0, 0.01);
  if (!st && stepv >= 0) pd_tensor_set(s->r.t[stepv], 0, 1);
  return st;
}

/* The same random batch into both sides' data tensors. */
static pd_status feed_random(side *a, side *b, int64_t batch, uint64_t seed, pd_error *err) {
  for (int v = 0; v < a->net->nvars; v++) {
    const pd_var_info *vi = &a->net->vars[v];
    if (vi->kind != PD_VAR_DATA) continue;
    int64_t dims[PD_MAX_DIMS];
    memcpy(dims, vi->meta.dims, sizeof dims);
    for (int d = 0; d < vi->meta.ndim; d++)
      if (dims[d] < 0) dims[d] = batch;
    uint64_t s = seed ^ pd_hash_str(vi->name);
    for (side *x = a; x; x = x == a ? b : NULL) {
      pd_tensor *t = x->r.t[v];
      t->dtype = vi->meta.dtype;
      pd_status st = pd_tensor_set_dims(t, vi->meta.ndim, dims, err);
      if (!st) st = pd_tensor_alloc(t, err);
      if (st) return st;
      uint64_t s2 = s;
      for (int64_t i = 0; i < pd_tensor_numel(t); i++)
        pd_tensor_set(t, i, pd_dtype_is_float(t->dtype) ? pd_rng_uniform(&s2) : (double)(pd_rng_next(&s2) & 1));
    }
  }
  return PD_OK;
}

/* NaN (float32) or all-ones bytes into every tensor an op of the GPU side writes. */
static pd_status poison(side *g, pd_error *err) {
  pd_net *net = g->net;
  for (int o = 0; o < net->nops; o++) {
    const pd_op *op = &net->ops[o];
    for (int s = 0; s < op->def->n_outputs; s++)
      for (int i = 0; i < op->out[s].n; i++) {
        int v = op->out[s].vars[i];
        if (v < 0) continue;
        pd_var_kind k = net->vars[v].kind;
        if (k == PD_VAR_PARAM || k == PD_VAR_STATE || k == PD_VAR_DATA) continue; /* updated in place */
        pd_tensor *t = g->r.d[v];
        size_t n = (size_t)pd_tensor_numel(t);
        if (!t->storage || !n) continue;
        pd_status st;
        if (t->dtype == PD_F32)
          st = pd_gpu_fill_f32(t->storage->data, n, NAN, err);
        else {
          size_t cap = t->storage->cap / 4 * 4;
          st = pd_gpu_fill_f32(t->storage->data, cap / 4, NAN, err); /* all bytes 0xff-ish, never a valid value */
        }
        if (st) return st;
      }
  }
  return pd_gpu_sync("poisoning outputs", err);
}

static bool seen_type[1024];

static int compare(side *c, side *g, double tol, const char *path, double *worst) {
  pd_net *net = c->net;
  pd_error err = {0};
  int bad = 0;
  const pd_op_def *const *all;
  int nall;
  all = pd_op_all(&nall);
  for (int o = 0; o < net->nops; o++) {
    const pd_op *op = &net->ops[o];
    for (int k = 0; k < nall && k < 1024; k++)
      if (all[k] == op->def) seen_type[k] = true;
    for (int s = 0; s < op->def->n_outputs; s++)
      for (int i = 0; i < op->out[s].n; i++) {
        int v = op->out[s].vars[i];
        if (v < 0) continue;
        if (pd_runner_fetch(&g->r, v, &err)) {
          fprintf(stderr, "%s: %s\n", path, err.msg);
          return bad + 1;
        }
        const pd_tensor *a = c->r.t[v], *b = g->r.t[v];
        int64_t n = pd_tensor_numel(a);
        if (n != pd_tensor_numel(b) || a->dtype != b->dtype) {
          fprintf(stderr, "%s: op #%d %s: \"%s\": CPU and GPU shapes or dtypes differ\n", path, o, op->def->type,
                  net->vars[v].name);
          bad++;
          continue;
        }
        for (int64_t e = 0; e < n; e++) {
          double x = pd_tensor_get(a, e), y = pd_tensor_get(b, e);
          double d = fabs(x - y) / fmax(1.0, fabs(x));
          if (!isfinite(x) || !isfinite(y) || !(d <= tol)) {
            fprintf(stderr, "%s: op #%d %s: \"%s\" element %lld: CPU %.9g, GPU %.9g (error %.3g > %.3g)\n", path, o,
                    op->def->type, net->vars[v].name, (long long)e, x, y, d, tol);
            bad++;
            break;
          }
          if (d > *worst) *worst = d;
        }
      }
  }
  return bad;
}

int main(int argc, char **argv) {
  double tol = 1e-5;
  long long batch = 8, seed = 7;
  int first = 1;
  for (; first < argc && argv[first][0] == '-'; first += 2) {
    if (first + 1 >= argc) break;
    if (!strcmp(argv[first], "--tol"))
      tol = atof(argv[first + 1]);
    else if (!strcmp(argv[first], "--batch"))
      batch = atoll(argv[first + 1]);
    else if (!strcmp(argv[first], "--seed"))
      seed = atoll(argv[first + 1]);
    else
      break;
  }
  if (first >= argc || batch < 1 || !(tol > 0)) {
    fprintf(stderr, "usage: gpu_parity [--tol T] [--batch N] [--seed S] NET.pbtxt...\n");
    return 2;
  }
  pd_error err = {0};
  pd_gpu_opts go = {0};
  if (pd_gpu_open(&go, &err)) {
    printf("%s\nskipped: no GPU\n", err.msg);
    return 77;
  }
  int bad = 0, nets = 0;
  double worst = 0;
  for (int i = first; i < argc; i++) {
    side c, g;
    pd_place cpu = {PD_CPU, 0}, gpu = {PD_GPU, 0};
    pd_status st = side_open(&c, argv[i], cpu, (uint64_t)seed, &err);
    if (!st) st = side_open(&g, argv[i], gpu, (uint64_t)seed, &err);
    if (!st) st = feed_random(&c, &g, batch, (uint64_t)seed, &err);
    if (!st) st = pd_runner_run(&c.r, 0, c.net->nops, &err);
    if (!st) st = pd_runner_set_place(&g.r, gpu, &err);
    if (!st) st = pd_gpu_runner_stage(&g.r, &err);
    if (!st) st = pd_runner_prepare(&g.r, &err);
    if (!st) st = poison(&g, &err);
    if (!st) st = pd_gpu_runner_run(&g.r, 0, g.net->nops, &err);
    if (!st) st = pd_gpu_sync("the GPU step", &err);
    if (st) {
      fprintf(stderr, "%s: %s\n", argv[i], err.msg);
      bad++;
    } else {
      bad += compare(&c, &g, tol, argv[i], &worst);
      nets++;
    }
    side_free(&c);
    side_free(&g);
  }
  int nall;
  const pd_op_def *const *all = pd_op_all(&nall);
  int covered = 0, with_gpu = 0;
  for (int k = 0; k < nall && k < 1024; k++) {
    if (!pd_op_kernel(all[k], PD_GPU, PD_F32)) continue;
    with_gpu++;
    if (seen_type[k]) {
      covered++;
      continue;
    }
    fprintf(stderr, "op \"%s\" has a GPU kernel that no net given here runs\n", all[k]->type);
    bad++;
  }
  pd_gpu_close();
  printf("%d nets, %d of %d ops with GPU kernels checked, largest error %.3g (tolerance %.3g): %s\n", nets, covered,
         with_gpu, worst, tol, bad ? "FAILED" : "ok");
  return bad ? 1 : 0;
}
