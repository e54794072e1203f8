/* gpu_parity.c — every op's GPU kernel against its CPU kernel, forward and
 * backward and update, on the same random inputs, over several steps.
 *
 *   gpu_parity [--rtol R] [--atol A] [--batch N] [--steps K] [--seed S] NET.pbtxt...
 *   gpu_parity --reference-f64 ...   the CPU in float32 against the CPU in float64 (no GPU)
 *   gpu_parity --self-test           the comparison rule itself (no GPU)
 *   gpu_parity --no-coverage ...     no check that every GPU kernel was run
 *                                    (nor that a CUDA graph was replayed)
 *
 * Each net is loaded twice (CPU kernels, GPU kernels), made trainable with
 * its file's loss and optimizer, given the same parameters and, at every
 * step, the same random batch (floats uniform in [0, 1), integers 0 or 1).
 * K training steps run (default 4: @step 1.. K, so Adam's later steps and
 * batch_norm's running statistics are reached; on the GPU the second step
 * captures a CUDA graph and the third replays it), the last one on a short
 * batch (N/2 + 1 rows, a new shape), then one evaluation pass (forward ops,
 * training off). Before every GPU run each tensor an op writes is poisoned
 * (float NaN, other dtypes all ones bits), so an element a kernel leaves
 * unwritten fails. After every run every output of every op run is
 * compared, element e of tensor t:
 *     |gpu - cpu| <= atol * max_t|cpu| + rtol * |cpu| + 1e-7
 * (atol = rtol = 1e-5 by default), so a tensor of small values is held to
 * its own scale (1e-5 absolute was all the old rule asked below 1). The
 * scale: float32 rounds at 6e-8; sums of a few hundred terms in another
 * order (cuBLAS against BLIS, a tree reduction against a loop) and
 * recurrences (lstm) differ by up to about 1e-5 of the tensor's largest
 * value, which --reference-f64 measures on the CPU (about half the
 * allowance at worst). Integers must be equal, and a NaN or Inf
 * on either side never passes. The worst element (largest error over its
 * allowance) is reported. Finally every registered op that has a GPU kernel
 * but appeared in none of the nets fails: add a net under test/gpu/nets/.
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
#include "cpu/convalgo.h"

typedef struct side {
  pd_net *net;
  pd_scope *scope;
  pd_runner r;
  bool gpu;
} side;

static void side_free(side *s) {
  pd_runner_free(&s->r);
  pd_scope_free(s->scope);
  pd_net_free(s->net);
}

static pd_status side_open(side *s, const char *path, pd_place place, pd_dtype fdt, uint64_t seed, pd_error *err) {
  memset(s, 0, sizeof *s);
  s->gpu = place.kind == PD_GPU;
  pd_net_opts no = {.float_dtype = fdt};
  pd_status st = pd_net_load(path, &no, &s->net, err);
  const Paddle__TrainDesc *td = st ? NULL : s->net->desc->train;
  Paddle__OptimizerDesc od = PADDLE__OPTIMIZER_DESC__INIT;
  if (td && td->optimizer) od = *td->optimizer;
  /* Adam's epsilon 1e-3, not 1e-8: with 1e-8 an element whose gradient is
   * float32 cancellation noise (~1e-8) moves by up to ±lr either way on
   * each side (g / (|g| + eps)), and a step's parameters could not be
   * compared; with 1e-3 the update is a smooth function of the gradient and
   * the kernel's code paths are the same */
  od.has_epsilon = 1;
  od.epsilon = 1e-3;
  if (!st && td && td->loss && *td->loss) st = pd_net_make_trainable(s->net, td->loss, &od, err);
  if (!st) st = pd_net_select_kernels(s->net, place.kind, err);
  if (!st && !(s->scope = pd_scope_new(NULL))) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (!st) st = pd_init_persistables(s->net, s->scope, td ? td->default_init : NULL, seed, err);
  if (!st) st = pd_runner_init(&s->r, s->net, s->scope, NULL, err);
  if (!st) {
    s->r.exec.training = true;
    s->r.exec.seed = seed;
  }
  int lr = st ? -1 : pd_net_var(s->net, "@lr"); /* a net that failed to load is NULL */
  if (lr >= 0) pd_tensor_set(s->r.t[lr], 0, 0.01);
  return st;
}

/* Parameters and optimizer/batch_norm states from one side into the other
 * (rounded to float32 where the other is float32; on the GPU, uploaded).
 * Before step 1 the test side's initial values go into the reference; before
 * each later step the reference's go into the test side, so each step checks
 * the kernels on the same inputs (Adam's later steps, running statistics)
 * rather than how two float32 trajectories drift apart over training. */
static pd_status copy_persistables(side *from, side *to, pd_error *err) {
  for (int v = 0; v < from->net->nvars; v++) {
    pd_var_kind k = from->net->vars[v].kind;
    if (k != PD_VAR_PARAM && k != PD_VAR_STATE) continue;
    if (pd_runner_fetch(&from->r, v, err)) return PD_ERR_RUNTIME; /* the place's hook: a no-op on the CPU */
    const pd_tensor *x = from->r.t[v];
    pd_tensor *y = to->r.t[v];
    if (!x->storage || !y->storage || pd_tensor_numel(x) != pd_tensor_numel(y)) continue;
    for (int64_t i = 0; i < pd_tensor_numel(x); i++) {
      double e = pd_tensor_get(x, i);
      pd_tensor_set(y, i, pd_dtype_is_float(y->dtype) ? (double)(float)e : e);
    }
    if (to->gpu) {
      pd_tensor *d = to->r.d[v];
      if (!d->storage || pd_tensor_bytes(d) != pd_tensor_bytes(y))
        return pd_errorf(err, PD_ERR_RUNTIME, "\"%s\" has no device copy of its size", to->net->vars[v].name);
      pd_status st = pd_gpu_copy(d->storage->data, d->place, y->storage->data, y->place, pd_tensor_bytes(y), err);
      if (st) return st;
    }
  }
  return PD_OK;
}

/* The same random batch into both sides' data tensors, and @step. */
static pd_status feed_random(side *a, side *b, int64_t batch, uint64_t seed, int step, pd_error *err) {
  for (int v = 0; v < a->net->nvars; v++) {
    const pd_var_info *vi = &a->net->vars[v];
    if (vi->kind != PD_VAR_DATA) continue;
    int64_t dims[PD_MAX_DIMS];
    memcpy(dims, vi->meta.dims, sizeof dims);
    for (int d = 0; d < vi->meta.ndim; d++)
      if (dims[d] < 0) dims[d] = batch;
    uint64_t s = seed ^ pd_hash_str(vi->name) ^ (uint64_t)step * 0x9e3779b97f4a7c15ull;
    for (side *x = a; x; x = x == a ? b : NULL) {
      pd_tensor *t = x->r.t[v];
      t->dtype = x->net->vars[v].meta.dtype;
      pd_status st = pd_tensor_set_dims(t, vi->meta.ndim, dims, err);
      if (!st) st = pd_tensor_alloc(t, err);
      if (st) return st;
      uint64_t s2 = s;
      for (int64_t i = 0; i < pd_tensor_numel(t); i++)
        pd_tensor_set(
            t, i, pd_dtype_is_float(t->dtype) ? (double)(float)pd_rng_uniform(&s2) : (double)(pd_rng_next(&s2) & 1));
    }
  }
  for (side *x = a; x; x = x == a ? b : NULL) {
    int sv = pd_net_var(x->net, "@step");
    if (sv >= 0) pd_tensor_set(x->r.t[sv], 0, step);
  }
  return PD_OK;
}

/* NaN (float32) or all-ones bytes into every tensor an op in [begin, end) of
 * the GPU side writes. */
static pd_status poison(side *g, int begin, int end, pd_error *err) {
  pd_net *net = g->net;
  for (int o = begin; o < end; o++) {
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

/* One tensor against its reference: 0 if every element is within
 * atol * max|ref| + rtol * |ref| (equal for integers, never NaN or Inf);
 * else 1, with the first bad element in *bad_at. *worst gets the largest
 * error over its allowance (<= 1 passes), its element in *worst_at. */
/* An absolute allowance under everything: a gradient that is zero in exact
 * arithmetic (a bias before a softmax) comes out as float32 cancellation
 * noise, up to about 2e-8, on both sides, and its tensor has no scale of its own. */
#define PARITY_FLOOR 1e-7

typedef struct verdict {
  double worst; /* largest |d| / allowance */
  int64_t worst_at, bad_at;
  double ref, got; /* at bad_at, or at worst_at when none is bad */
} verdict;

static int compare_tensor(const pd_tensor *ref, const pd_tensor *got, double rtol, double atol, verdict *v) {
  int64_t n = pd_tensor_numel(ref);
  bool fl = pd_dtype_is_float(ref->dtype);
  double scale = 0;
  for (int64_t e = 0; e < n; e++) {
    double x = fabs(pd_tensor_get(ref, e));
    if (x > scale) scale = x;
  }
  *v = (verdict){0, -1, -1, 0, 0};
  for (int64_t e = 0; e < n; e++) {
    double x = pd_tensor_get(ref, e), y = pd_tensor_get(got, e);
    double d = fabs(x - y), allow = fl ? atol * scale + rtol * fabs(x) + PARITY_FLOOR : 0;
    double r = d == 0 ? 0 : allow > 0 ? d / allow : INFINITY;
    if (!isfinite(x) || !isfinite(y) || !(d <= allow)) {
      v->bad_at = e, v->ref = x, v->got = y, v->worst = isfinite(r) ? r : INFINITY;
      return 1;
    }
    if (r > v->worst || v->worst_at < 0) v->worst = r, v->worst_at = e, v->ref = x, v->got = y;
  }
  return 0;
}

/* Max pooling's backward puts each window's gradient on the window's
 * largest input: where two inputs are within rounding of each other the two
 * sides may pick different ones. Then dX holds the same values at other
 * places: the same nonzero values, sorted, on both sides. */
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static bool routing_flip(const pd_tensor *ref, const pd_tensor *got, double rtol, double atol) {
  int64_t n = pd_tensor_numel(ref), na = 0, nb = 0;
  double *a = malloc(sizeof *a * (size_t)(n ? n : 1)), *b = malloc(sizeof *b * (size_t)(n ? n : 1));
  double scale = 0;
  bool same = a && b;
  for (int64_t e = 0; same && e < n; e++) {
    double x = pd_tensor_get(ref, e), y = pd_tensor_get(got, e);
    if (!isfinite(x) || !isfinite(y)) same = false;
    if (x != 0) a[na++] = x;
    if (y != 0) b[nb++] = y;
    if (fabs(x) > scale) scale = fabs(x);
  }
  same = same && na == nb;
  if (same) {
    qsort(a, (size_t)na, sizeof *a, cmp_double);
    qsort(b, (size_t)nb, sizeof *b, cmp_double);
    for (int64_t i = 0; same && i < na; i++)
      same = fabs(a[i] - b[i]) <= atol * scale + rtol * fabs(a[i]) + PARITY_FLOOR;
  }
  free(a);
  free(b);
  return same;
}

static bool seen_type[1024];

typedef struct worst_seen {
  double ratio;
  char where[1400];
} worst_seen;

/* Every output of ops [begin, end) of b against a's. */
static int compare(side *a, side *b, int begin, int end, double rtol, double atol, const char *what, worst_seen *worst,
                   bool *flip) {
  pd_net *net = a->net;
  pd_error err = {0};
  int bad = 0;
  int nall;
  const pd_op_def *const *all = pd_op_all(&nall);
  for (int o = begin; o < end; o++) {
    const pd_op *op = &net->ops[o];
    for (int k = 0; k < nall && k < 1024; k++)
      if (all[k] == op->def) seen_type[k] = true;
    for (int s = 0; s < op->def->n_outputs; s++)
      for (int i = 0; i < op->out[s].n; i++) {
        int v = op->out[s].vars[i];
        /* the raw step scopes of an op running blocks (bytes laid out per
         * dtype): what they hold reaches the op's other outputs */
        if (v < 0 || op->def->outputs[s].flags & PD_SLOT_STEPS) continue;
        if (b->gpu && pd_runner_fetch(&b->r, v, &err)) {
          fprintf(stderr, "%s: %s\n", what, err.msg);
          return bad + 1;
        }
        const pd_tensor *x = a->r.t[v], *y = b->r.t[v];
        if (pd_tensor_numel(x) != pd_tensor_numel(y) || pd_dtype_is_float(x->dtype) != pd_dtype_is_float(y->dtype) ||
            (!pd_dtype_is_float(x->dtype) && x->dtype != y->dtype)) {
          fprintf(stderr, "%s: op #%d %s: \"%s\": the two sides' shapes or dtypes differ\n", what, o, op->def->type,
                  net->vars[v].name);
          bad++;
          continue;
        }
        verdict vd;
        if (compare_tensor(x, y, rtol, atol, &vd) && !strcmp(op->def->type, "pool2d_grad") &&
            routing_flip(x, y, rtol, atol)) {
          /* every later gradient of this step differs too: the next step
           * starts again from the reference's parameters */
          fprintf(stderr,
                  "%s: op #%d %s: \"%s\": a near tie in a max-pooling window went the other way; the rest "
                  "of this step is not compared\n",
                  what, o, op->def->type, net->vars[v].name);
          *flip = true;
          return bad;
        }
        if (compare_tensor(x, y, rtol, atol, &vd)) {
          fprintf(stderr, "%s: op #%d %s: \"%s\" element %lld: reference %.9g, got %.9g (%.3g times the allowance)\n",
                  what, o, op->def->type, net->vars[v].name, (long long)vd.bad_at, vd.ref, vd.got, vd.worst);
          bad++;
        } else if (vd.worst > worst->ratio) {
          worst->ratio = vd.worst;
          snprintf(worst->where, sizeof worst->where, "%s: op #%d %s: \"%s\" element %lld: reference %.9g, got %.9g",
                   what, o, op->def->type, net->vars[v].name, (long long)vd.worst_at, vd.ref, vd.got);
        }
      }
  }
  return bad;
}

/* Runs ops [begin, end) on one side (the GPU: staged, poisoned, waited for). */
static pd_status run_side(side *x, int begin, int end, pd_error *err) {
  if (!x->gpu) return pd_runner_run(&x->r, begin, end, err);
  pd_status st = pd_gpu_runner_stage(&x->r, err);
  if (!st) st = pd_runner_prepare(&x->r, err);
  if (!st) st = poison(x, begin, end, err);
  if (!st) st = pd_gpu_runner_run(&x->r, begin, end, err);
  if (!st) st = pd_gpu_sync("the GPU step", err);
  return st;
}

/* The comparison rule on made-up tensors: what it must catch and pass. */
static int self_test(void) {
  pd_error err = {0};
  pd_tensor a = {0}, b = {0};
  int64_t n = 1000;
  a.dtype = b.dtype = PD_F32;
  if (pd_tensor_set_dims(&a, 1, &n, &err) || pd_tensor_alloc(&a, &err) || pd_tensor_set_dims(&b, 1, &n, &err) ||
      pd_tensor_alloc(&b, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 2;
  }
  int fails = 0;
  verdict v;
  uint64_t s = 1;
  /* small values (gradients ~1e-3): a 1e-3 relative error (1e-6 absolute)
   * passed the old rule, 1e-5 * max(1, |c|); it fails now */
  for (int64_t i = 0; i < n; i++) pd_tensor_set(&a, i, (pd_rng_uniform(&s) - 0.5) * 2e-3);
  for (int64_t i = 0; i < n; i++) pd_tensor_set(&b, i, pd_tensor_get(&a, i));
  pd_tensor_set(&b, 500, pd_tensor_get(&a, 500) * 1.001);
  if (!compare_tensor(&a, &b, 1e-5, 1e-6, &v) || v.bad_at != 500) fails++, fprintf(stderr, "self-test: small values\n");
  /* the same tensor off by a few float32 roundings everywhere: passes */
  for (int64_t i = 0; i < n; i++) pd_tensor_set(&b, i, (float)(pd_tensor_get(&a, i) * (1 + 3e-7)));
  if (compare_tensor(&a, &b, 1e-5, 1e-6, &v) || !(v.worst > 0 && v.worst < 1))
    fails++, fprintf(stderr, "self-test: rounding noise failed (%.3g)\n", v.worst);
  /* an element near zero in a tensor of magnitude 1 may be off by the
   * tensor's own rounding (1e-7 absolute) but not by 1e-4 */
  pd_tensor_set(&a, 7, 1.0);
  pd_tensor_set(&b, 7, 1.0);
  pd_tensor_set(&a, 3, 1e-6);
  pd_tensor_set(&b, 3, 1e-6 + 1e-7);
  if (compare_tensor(&a, &b, 1e-5, 1e-6, &v)) fails++, fprintf(stderr, "self-test: near-zero element\n");
  pd_tensor_set(&b, 3, 1e-4);
  if (!compare_tensor(&a, &b, 1e-5, 1e-6, &v) || v.bad_at != 3) fails++, fprintf(stderr, "self-test: near zero\n");
  pd_tensor_set(&b, 3, pd_tensor_get(&a, 3));
  /* NaN on either side, Inf, and the worst element reported */
  pd_tensor_set(&b, 9, NAN);
  if (!compare_tensor(&a, &b, 1e-5, 1e-6, &v) || v.bad_at != 9) fails++, fprintf(stderr, "self-test: NaN\n");
  pd_tensor_set(&b, 9, pd_tensor_get(&a, 9));
  pd_tensor_set(&a, 11, INFINITY);
  pd_tensor_set(&b, 11, INFINITY);
  if (!compare_tensor(&a, &b, 1e-5, 1e-6, &v)) fails++, fprintf(stderr, "self-test: Inf\n");
  pd_tensor_set(&a, 11, 0.25);
  pd_tensor_set(&b, 11, 0.25 * (1 + 1e-5)); /* within 1e-5 relative + 1e-6: ratio about 0.2 */
  if (compare_tensor(&a, &b, 1e-5, 1e-6, &v) || v.worst_at != 11)
    fails++, fprintf(stderr, "self-test: worst at %lld\n", (long long)v.worst_at);
  /* all zeros: exactly zero passes, anything else fails */
  for (int64_t i = 0; i < n; i++) pd_tensor_set(&a, i, 0), pd_tensor_set(&b, i, 0);
  if (compare_tensor(&a, &b, 1e-5, 1e-6, &v)) fails++, fprintf(stderr, "self-test: zeros\n");
  pd_tensor_set(&b, 1, 1e-6);
  if (!compare_tensor(&a, &b, 1e-5, 1e-6, &v)) fails++, fprintf(stderr, "self-test: zeros and 1e-6\n");
  /* integers: equal or not */
  pd_tensor ia = {0}, ib = {0};
  ia.dtype = ib.dtype = PD_I64;
  if (pd_tensor_set_dims(&ia, 1, &n, &err) || pd_tensor_alloc(&ia, &err) || pd_tensor_set_dims(&ib, 1, &n, &err) ||
      pd_tensor_alloc(&ib, &err))
    return 2;
  for (int64_t i = 0; i < n; i++) pd_tensor_set(&ia, i, (double)i * 1e6), pd_tensor_set(&ib, i, (double)i * 1e6);
  if (compare_tensor(&ia, &ib, 1e-5, 1e-6, &v)) fails++, fprintf(stderr, "self-test: equal integers\n");
  pd_tensor_set(&ib, 999, 999e6 + 1);
  if (!compare_tensor(&ia, &ib, 1e-5, 1e-6, &v)) fails++, fprintf(stderr, "self-test: integers off by 1\n");
  pd_tensor_release(&a);
  pd_tensor_release(&b);
  pd_tensor_release(&ia);
  pd_tensor_release(&ib);
  printf("self-test: %s\n", fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}

int main(int argc, char **argv) {
  /* the CPU's convolutions as im2col: the GPU's are direct products, and
   * Winograd F(4x4)'s float32 error (about 4e-6 of the largest output,
   * bounded in test_op_conv_winograd) turns ReLU's gate where a
   * pre-activation is that close to 0 (fashion_cnn3), which this rule
   * would take for a wrong kernel */
  pd_conv_algo_set(PD_CONV_IM2COL);
  double rtol = 1e-5, atol = 1e-5;
  long long batch = 8, seed = 7, steps = 4;
  bool f64 = false, coverage = true;
  int first = 1;
  for (; first < argc && argv[first][0] == '-'; first += 2) {
    if (!strcmp(argv[first], "--self-test")) return self_test();
    if (!strcmp(argv[first], "--reference-f64") || !strcmp(argv[first], "--no-coverage")) {
      if (!strcmp(argv[first], "--reference-f64"))
        f64 = true;
      else
        coverage = false;
      first--; /* a flag without a value */
      continue;
    }
    if (first + 1 >= argc) break;
    if (!strcmp(argv[first], "--rtol"))
      rtol = atof(argv[first + 1]);
    else if (!strcmp(argv[first], "--atol"))
      atol = atof(argv[first + 1]);
    else if (!strcmp(argv[first], "--batch"))
      batch = atoll(argv[first + 1]);
    else if (!strcmp(argv[first], "--steps"))
      steps = atoll(argv[first + 1]);
    else if (!strcmp(argv[first], "--seed"))
      seed = atoll(argv[first + 1]);
    else
      break;
  }
  if (first >= argc || batch < 1 || steps < 1 || steps > 1000 || !(rtol >= 0) || !(atol >= 0) || !(rtol + atol > 0)) {
    fprintf(
        stderr,
        "usage: gpu_parity [--reference-f64] [--no-coverage] [--rtol R] [--atol A] [--batch N] [--steps K] [--seed S] "
        "NET.pbtxt...\n       gpu_parity --self-test\n");
    return 2;
  }
  pd_error err = {0};
  pd_gpu_opts go = {0};
  if (!f64 && pd_gpu_open(&go, &err)) {
    printf("%s\nskipped: no GPU\n", err.msg);
    return 77;
  }
  int bad = 0, nets = 0;
  long replays = 0, captures = 0;
  worst_seen worst = {0, ""};
  for (int i = first; i < argc; i++) {
    side c = {0}, g = {0}; /* g stays empty (side_free's no-op) when c fails to open */
    pd_place cpu = {PD_CPU, 0}, test = {f64 ? PD_CPU : PD_GPU, 0};
    /* c: the reference (float64 with --reference-f64), g: the side under test */
    pd_status st = side_open(&c, argv[i], cpu, f64 ? PD_F64 : PD_F32, (uint64_t)seed, &err);
    if (!st) st = side_open(&g, argv[i], test, PD_F32, (uint64_t)seed, &err);
    if (!st) st = copy_persistables(&g, &c, &err);
    if (!st && g.gpu) st = pd_runner_set_place(&g.r, test, &err);
    int nb = 0, flips = 0;
    char what[600];
    /* steps 1..K, the last on a short batch; then an evaluation pass */
    for (long long k = 1; !st && k <= steps + 1; k++) {
      bool eval = k == steps + 1;
      int64_t rows = k == steps && steps > 1 ? batch / 2 + 1 : batch;
      int end = eval ? c.net->n_forward : c.net->nops;
      c.r.exec.training = g.r.exec.training = !eval;
      snprintf(what, sizeof what, "%s, %s %lld (batch %lld)", argv[i], eval ? "evaluation after step" : "step",
               eval ? steps : k, (long long)rows);
      st = k > 1 ? copy_persistables(&c, &g, &err) : PD_OK;
      if (!st) st = feed_random(&c, &g, rows, (uint64_t)seed + (uint64_t)k, (int)k, &err);
      if (!st) st = pd_runner_run(&c.r, 0, end, &err);
      if (!st) st = run_side(&g, 0, end, &err);
      bool flip = false;
      if (!st) nb += compare(&c, &g, 0, end, rtol, atol, what, &worst, &flip);
      flips += flip;
      if (nb) break; /* later steps only repeat the first difference */
    }
    /* a near tie in some steps comes by chance (fashion_cnn: a third of
     * them); in all of them, no backward past the pooling was checked */
    if (!st && flips >= steps) {
      fprintf(stderr, "%s: %d of %lld steps met a near tie in max pooling\n", argv[i], flips, steps + 1);
      nb++;
    }
    if (!st && g.gpu) {
      long rp = 0, cp = 0;
      pd_gpu_runner_graph_stats(&g.r, &rp, &cp);
      replays += rp, captures += cp;
    }
    if (st) {
      fprintf(stderr, "%s: %s\n", argv[i], err.msg);
      bad++;
    } else {
      bad += nb;
      nets++;
    }
    side_free(&c);
    side_free(&g);
  }
  int nall;
  const pd_op_def *const *all = pd_op_all(&nall);
  int covered = 0, with_gpu = 0;
  for (int k = 0; k < nall && k < 1024; k++) {
    if (!coverage || !pd_op_kernel(all[k], PD_GPU, PD_F32)) continue;
    with_gpu++;
    if (seen_type[k]) {
      covered++;
      continue;
    }
    fprintf(stderr, "op \"%s\" has a GPU kernel that no net given here runs\n", all[k]->type);
    bad++;
  }
  if (coverage && !f64 && steps >= 3 && !(captures > 0 && replays > 0)) {
    fprintf(stderr, "no net captured and replayed a CUDA graph (%ld captures, %ld replays)\n", captures, replays);
    bad++;
  }
  if (!f64) pd_gpu_close();
  if (worst.where[0]) printf("worst: %s (%.3g times the allowance)\n", worst.where, worst.ratio);
  printf("%s: %d nets, %lld steps and an evaluation each, %d of %d ops with GPU kernels checked, "
         "%ld graphs captured, %ld replays, worst error %.3g of the allowance (rtol %.3g, atol %.3g x max|ref|): %s\n",
         f64 ? "CPU float32 against float64" : "GPU against CPU", nets, steps, covered, with_gpu, captures, replays,
         worst.ratio, rtol, atol, bad ? "FAILED" : "ok");
  return bad ? 1 : 0;
}
