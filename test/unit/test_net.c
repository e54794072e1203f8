/* test_net.c — the network core: Scope look-ups (hash, parent fallback);
 * building a net from a NetDesc (slots, attributes, kinds, parameter shapes
 * inferred, -1 batch propagated) and its messages; pruning; the runner's
 * per-batch shape inference (a short last batch); AddBackwardOps (fan-out
 * summed, shared weights, broadcasting, no gradient for data/labels or ops
 * off the loss path) checked end to end against finite differences. */
#include "optest.h"

#include "core/backward.h"
#include "core/gradcheck.h"
#include "core/initializer.h"
#include "core/memplan.h"
#include "core/net.h"
#include "base/rng.h"
#include "core/scope.h"
#include "core/optimizer.h"

static pd_net *load(const char *text, pd_dtype fdt) {
  pd_net *net = NULL;
  pd_error err = {0};
  pd_net_opts o = {.float_dtype = fdt};
  if (pd_net_from_text("t.pbtxt", text, strlen(text), &o, &net, &err)) fail_msg("load: %s", err.msg);
  return net;
}

static const char *load_fail(const char *text) {
  static pd_error err;
  pd_net *net = NULL;
  if (!pd_net_from_text("t.pbtxt", text, strlen(text), NULL, &net, &err)) {
    pd_net_free(net);
    fail_msg("expected an error");
  }
  return err.msg;
}

static void test_scope(void **state) {
  (void)state;
  pd_scope *outer = pd_scope_new(NULL), *inner = pd_scope_new(outer);
  char name[32];
  for (int i = 0; i < 1000; i++) {
    snprintf(name, sizeof name, "v%d", i);
    pd_var *v = pd_scope_var(outer, name);
    assert_non_null(v);
    v->tensor.dtype = PD_I32;
  }
  assert_int_equal(pd_scope_size(outer), 1000);
  assert_ptr_equal(pd_scope_var(outer, "v17"), pd_scope_find(outer, "v17")); /* no duplicate */
  assert_int_equal(pd_scope_size(outer), 1000);
  /* the child sees the parent's variables until it shadows one */
  assert_ptr_equal(pd_scope_find(inner, "v999"), pd_scope_find(outer, "v999"));
  assert_null(pd_scope_find_local(inner, "v999"));
  pd_var *shadow = pd_scope_var(inner, "v999");
  assert_ptr_not_equal(shadow, pd_scope_find(outer, "v999"));
  assert_ptr_equal(pd_scope_find(inner, "v999"), shadow);
  assert_null(pd_scope_find(inner, "nope"));
  pd_scope_free(inner);
  pd_scope_free(outer);
}

static const char *MLP =
    "name: \"m\"\n"
    "var { name: \"x\" shape: [-1, 2, 3] }\n"
    "var { name: \"y\" shape: [-1, 1] dtype: INT64 }\n"
    "op { type: \"reshape\" inputs: \"x\" outputs: \"flat\" attrs { key: \"shape\" value { ints: [-1, 6] } } }\n"
    "op { type: \"fc\" inputs: [\"flat\", \"w\", \"b\"] outputs: \"h\" attrs { key: \"size\" value { i: 4 } } "
    "attrs { key: \"act\" value { s: \"tanh\" } } }\n"
    "op { type: \"fc\" inputs: [\"h\", \"w2\"] outputs: \"logits\" attrs { key: \"size\" value { i: 3 } } }\n"
    "op { type: \"softmax_with_cross_entropy\" inputs: [\"logits\", \"y\"] outputs: [\"sm\", \"loss\"] }\n"
    "op { type: \"mean\" inputs: \"loss\" outputs: \"avg\" }\n"
    "op { type: \"softmax\" inputs: \"logits\" outputs: \"prob\" }\n"
    "op { type: \"accuracy\" inputs: [\"prob\", \"y\"] outputs: \"acc\" }\n";

static void assert_dims(const pd_net *net, const char *name, int ndim, const int64_t *dims) {
  int v = pd_net_var(net, name);
  assert_true(v >= 0);
  char a[64], b[64];
  if (!pd_dims_equal(net->vars[v].meta.ndim, net->vars[v].meta.dims, ndim, dims))
    fail_msg("%s: shape %s, expected %s", name,
             pd_dims_str(net->vars[v].meta.ndim, net->vars[v].meta.dims, a, sizeof a),
             pd_dims_str(ndim, dims, b, sizeof b));
}

/* Kinds resolved, parameter shapes inferred, -1 carried through. */
static void test_build_and_infer(void **state) {
  (void)state;
  pd_net *net = load(MLP, PD_F32);
  assert_int_equal(net->nops, 7);
  assert_int_equal(net->vars[pd_net_var(net, "x")].kind, PD_VAR_DATA);
  assert_int_equal(net->vars[pd_net_var(net, "w")].kind, PD_VAR_PARAM);
  assert_int_equal(net->vars[pd_net_var(net, "b")].kind, PD_VAR_PARAM);
  assert_int_equal(net->vars[pd_net_var(net, "h")].kind, PD_VAR_TEMP);
  assert_dims(net, "flat", 2, (int64_t[]){-1, 6});
  assert_dims(net, "w", 2, (int64_t[]){6, 4});
  assert_dims(net, "b", 1, (int64_t[]){4});
  assert_dims(net, "w2", 2, (int64_t[]){4, 3});
  assert_dims(net, "loss", 2, (int64_t[]){-1, 1});
  assert_dims(net, "avg", 1, (int64_t[]){1});
  pd_net_free(net);
}

static void test_build_errors(void **state) {
  (void)state;
  /* reading a variable nobody declares or writes */
  const char *m = load_fail("op { type: \"relu\" inputs: \"a\" outputs: \"b\" }");
  assert_non_null(strstr(m, "t.pbtxt:1:1: op #0 \"relu\" reads \"a\", which is neither declared"));
  /* two ops writing one variable */
  m = load_fail(
      "var { name: \"a\" shape: [-1, 2] }\n"
      "op { type: \"relu\" inputs: \"a\" outputs: \"b\" }\nop { type: \"tanh\" inputs: \"a\" outputs: \"b\" }");
  assert_non_null(strstr(m, "t.pbtxt:3:1: op #1 \"tanh\" writes \"b\", which op #0 \"relu\""));
  /* too many inputs */
  m = load_fail("var { name: \"a\" shape: [-1, 2] }\nop { type: \"relu\" inputs: [\"a\", \"a\"] outputs: \"b\" }");
  assert_non_null(strstr(m, "op #0 \"relu\": too many inputs: relu takes X, got 2"));
  /* a data variable without a shape */
  m = load_fail("var { name: \"a\" }\nop { type: \"relu\" inputs: \"a\" outputs: \"b\" }");
  assert_non_null(strstr(m, "data variable \"a\" needs a shape"));
  /* -1 anywhere but the first dim */
  m = load_fail("var { name: \"a\" shape: [2, -1] }");
  assert_non_null(strstr(m, "only the first may be -1"));
  /* a shape that can never work */
  m = load_fail("var { name: \"a\" shape: [-1, 3] }\nvar { name: \"c\" shape: [-1, 4] }\n"
                "op { type: \"elementwise_add\" inputs: [\"a\", \"c\"] outputs: \"b\" }");
  assert_non_null(strstr(m, "op #0 \"elementwise_add\""));
  /* declared twice */
  m = load_fail("var { name: \"a\" shape: [1] }\nvar { name: \"a\" shape: [1] }");
  assert_non_null(strstr(m, "t.pbtxt:2:7: variable \"a\" is declared twice"));
}

/* infer needs only the ops behind the fetched variable: no label. */
static void test_prune(void **state) {
  (void)state;
  pd_net *net = load(MLP, PD_F32);
  bool need[16];
  int prob = pd_net_var(net, "prob");
  pd_net_prune(net, &prob, 1, need);
  bool expect[] = {true, true, true, false, false, true, false};
  for (int o = 0; o < net->nops; o++)
    if (need[o] != expect[o])
      fail_msg("op #%d (%s): needed %d, expected %d", o, net->ops[o].def->type, need[o], expect[o]);
  pd_net_free(net);
}

/* Shapes are inferred again when the batch changes (a short last batch). */
static void test_runner_batches(void **state) {
  (void)state;
  pd_net *net = load(MLP, PD_F32);
  pd_error err = {0};
  pd_scope *scope = pd_scope_new(NULL);
  pd_runner r;
  assert_int_equal(pd_net_select_kernels(net, PD_CPU, &err), PD_OK);
  assert_int_equal(pd_init_persistables(net, scope, NULL, 1, &err), PD_OK);
  assert_int_equal(pd_runner_init(&r, net, scope, NULL, &err), PD_OK);
  int x = pd_net_var(net, "x"), y = pd_net_var(net, "y"), h = pd_net_var(net, "h");
  const int64_t sizes[] = {5, 5, 2};
  void *h_data = NULL;
  for (int b = 0; b < 3; b++) {
    int64_t n = sizes[b];
    assert_int_equal(pd_tensor_set_dims(r.t[x], 3, (int64_t[]){n, 2, 3}, &err), PD_OK);
    assert_int_equal(pd_tensor_alloc(r.t[x], &err), PD_OK);
    assert_int_equal(pd_tensor_set_dims(r.t[y], 2, (int64_t[]){n, 1}, &err), PD_OK);
    assert_int_equal(pd_tensor_alloc(r.t[y], &err), PD_OK);
    for (int64_t i = 0; i < n * 6; i++) pd_tensor_set(r.t[x], i, 0.1 * (double)i);
    for (int64_t i = 0; i < n; i++) pd_tensor_set(r.t[y], i, (double)(i % 3));
    if (pd_runner_run(&r, 0, net->nops, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r.t[h]->dims[0], n);
    if (b == 0)
      h_data = pd_tensor_data(r.t[h]);
    else
      assert_ptr_equal(pd_tensor_data(r.t[h]), h_data); /* no reallocation for a smaller batch */
  }
  pd_runner_free(&r);
  pd_scope_free(scope);
  pd_net_free(net);
}

/* Builds `text` in float64, adds backward for "avg", feeds x (and y) with
 * seeded values, and requires every parameter's gradient to match finite
 * differences to 1e-6. Returns the net for further checks (caller frees
 * net and scope). */
static pd_net *gradcheck_net(const char *text, int64_t rows, pd_scope **scope_out) {
  pd_net *net = load(text, PD_F64);
  pd_error err = {0};
  if (pd_net_add_backward(net, "avg", &err) || pd_net_select_kernels(net, PD_CPU, &err)) fail_msg("%s", err.msg);
  pd_scope *scope = pd_scope_new(NULL);
  pd_runner r;
  assert_int_equal(pd_init_persistables(net, scope, NULL, 3, &err), PD_OK);
  assert_int_equal(pd_runner_init(&r, net, scope, NULL, &err), PD_OK);
  uint64_t s = 99;
  for (int v = 0; v < net->nvars; v++) {
    if (net->vars[v].kind != PD_VAR_DATA) continue;
    pd_tensor *t = r.t[v];
    int64_t dims[PD_MAX_DIMS];
    memcpy(dims, net->vars[v].meta.dims, sizeof dims);
    dims[0] = rows;
    assert_int_equal(pd_tensor_set_dims(t, net->vars[v].meta.ndim, dims, &err), PD_OK);
    assert_int_equal(pd_tensor_alloc(t, &err), PD_OK);
    for (int64_t i = 0; i < pd_tensor_numel(t); i++)
      pd_tensor_set(t, i, t->dtype == PD_I64 ? (double)(pd_rng_next(&s) % 3) : 2 * pd_rng_uniform(&s) - 1);
  }
  pd_gradcheck_result res;
  if (pd_gradcheck_run(&r, 0, 1, 1e-6, &res, &err)) fail_msg("%s", err.msg);
  if (!(res.worst_err <= 1e-6))
    fail_msg("%s[%lld]: analytic %.12g numeric %.12g error %g", res.worst_var, (long long)res.worst_index, res.analytic,
             res.numeric, res.worst_err);
  assert_true(res.vars > 0);
  pd_runner_free(&r);
  *scope_out = scope;
  return net;
}

static int count_ops(const pd_net *net, const char *type) {
  int n = 0;
  for (int o = 0; o < net->nops; o++) n += strcmp(net->ops[o].def->type, type) == 0;
  return n;
}

static void test_backward_mlp(void **state) {
  (void)state;
  pd_scope *scope;
  pd_net *net = gradcheck_net(MLP, 5, &scope);
  /* no gradient for data, labels, or the accuracy branch */
  assert_int_equal(pd_net_var(net, "x@GRAD"), -1);
  assert_int_equal(pd_net_var(net, "y@GRAD"), -1);
  assert_int_equal(pd_net_var(net, "prob@GRAD"), -1);
  assert_true(pd_net_var(net, "w@GRAD") >= 0);
  assert_int_equal(count_ops(net, "accuracy_grad"), 0);
  pd_scope_free(scope);
  pd_net_free(net);
}

/* h is read by two ops: its gradient is the sum of both partials. */
static void test_backward_fanout(void **state) {
  (void)state;
  const char *text =
      "var { name: \"x\" shape: [-1, 3] }\n"
      "op { type: \"fc\" inputs: [\"x\", \"w\", \"b\"] outputs: \"h\" attrs { key: \"size\" value { i: 4 } } "
      "attrs { key: \"act\" value { s: \"sigmoid\" } } }\n"
      "op { type: \"tanh\" inputs: \"h\" outputs: \"t\" }\n"
      "op { type: \"sum\" inputs: [\"h\", \"t\", \"h\"] outputs: \"s\" }\n"
      "op { type: \"square_error\" inputs: [\"s\", \"t\"] outputs: \"e\" }\n"
      "op { type: \"mean\" inputs: \"e\" outputs: \"avg\" }\n";
  pd_scope *scope;
  pd_net *net = gradcheck_net(text, 4, &scope);
  int h = pd_net_var(net, "h@GRAD");
  assert_true(h >= 0);
  assert_string_equal(net->ops[net->vars[h].producer].def->type, "sum"); /* the partials summed */
  assert_true(pd_net_var(net, "h@GRAD@RENAME@2") >= 0);                  /* three partials: tanh, sum twice */
  pd_scope_free(scope);
  pd_net_free(net);
}

/* One weight used by two fc ops: its gradient sums both uses. */
static void test_backward_shared_weights(void **state) {
  (void)state;
  const char *text =
      "var { name: \"x\" shape: [-1, 3] }\n"
      "op { type: \"fc\" inputs: [\"x\", \"w\"] outputs: \"a\" attrs { key: \"size\" value { i: 3 } } "
      "attrs { key: \"act\" value { s: \"tanh\" } } }\n"
      "op { type: \"fc\" inputs: [\"a\", \"w\"] outputs: \"c\" attrs { key: \"size\" value { i: 3 } } }\n"
      "op { type: \"mse\" inputs: [\"c\", \"x\"] outputs: \"avg\" }\n";
  pd_scope *scope;
  pd_net *net = gradcheck_net(text, 3, &scope);
  assert_true(pd_net_var(net, "w@GRAD@RENAME@1") >= 0);
  pd_scope_free(scope);
  pd_net_free(net);
}

/* A bias row broadcast over the batch by elementwise_add. */
static void test_backward_broadcast(void **state) {
  (void)state;
  const char *text = "var { name: \"x\" shape: [-1, 4] }\n"
                     "var { name: \"bias\" shape: [4] kind: PARAM }\n"
                     "op { type: \"mul\" inputs: [\"x\", \"w\"] outputs: \"m\" }\n"
                     "var { name: \"w\" shape: [4, 4] kind: PARAM }\n"
                     "op { type: \"elementwise_add\" inputs: [\"m\", \"bias\"] outputs: \"z\" }\n"
                     "op { type: \"sigmoid\" inputs: \"z\" outputs: \"s\" }\n"
                     "op { type: \"cos_sim\" inputs: [\"s\", \"x\"] outputs: \"c\" }\n"
                     "op { type: \"mean\" inputs: \"c\" outputs: \"avg\" }\n";
  pd_scope *scope;
  pd_net *net = gradcheck_net(text, 6, &scope);
  pd_scope_free(scope);
  pd_net_free(net);
}

/* A kernel the net needs but no op has is an error before anything runs,
 * naming the op, the key asked for and the keys there are (GPU kernels are
 * float32 only, so a float64 net has none). */
static void test_missing_kernel(void **state) {
  (void)state;
  pd_net *net = load(MLP, PD_F64);
  pd_error err = {0};
  assert_int_equal(pd_net_select_kernels(net, PD_GPU, &err), PD_ERR_INPUT);
  if (!strstr(err.msg, "t.pbtxt:") || !strstr(err.msg, " has no kernel for {GPU, float64}; it has {CPU, "))
    fail_msg("unexpected message: %s", err.msg);
  pd_net_free(net);
}

static void test_backward_errors(void **state) {
  (void)state;
  pd_net *net = load(MLP, PD_F32);
  pd_error err = {0};
  assert_int_equal(pd_net_add_backward(net, "loss", &err), PD_ERR_INPUT);
  assert_non_null(
      strstr(err.msg, "the loss \"loss\" must be one float number (e.g. the output of `mean`); it is float32 [-1, 1]"));
  assert_int_equal(pd_net_add_backward(net, "nope", &err), PD_ERR_INPUT);
  assert_non_null(strstr(err.msg, "the loss \"nope\" is not a variable of the net"));
  pd_net_free(net);
}

/* The memory plan changes where temporaries live, never what they hold: a
 * small CNN (conv, relu and sigmoid (in place where their input dies, and
 * one whose input is read again), max pool, batch_norm, flatten, concat, a
 * fan-out summed in backward, dropout, reshape and identity views, softmax
 * with cross-entropy, momentum), trained and run forward, over batches of 6,
 * 6 and a short one of 4 (which re-plans). */
static const char CNN[] =
    "var { name: 'x' shape: [-1, 2, 6, 6] }\n"
    "var { name: 'y' shape: [-1, 1] dtype: INT64 }\n"
    "op { type: 'conv2d' inputs: ['x', 'cw', 'cb'] outputs: 'c' attrs { key: 'num_filters' value { i: 4 } }\n"
    "     attrs { key: 'kernel_size' value { ints: [3, 3] } } attrs { key: 'paddings' value { ints: [1, 1] } } }\n"
    "op { type: 'batch_norm' inputs: ['c', 'bs', 'bb', 'bm', 'bv'] outputs: ['n', 'bm', 'bv'] }\n"
    "op { type: 'relu' inputs: 'n' outputs: 'r' }\n"
    "op { type: 'pool2d' inputs: 'r' outputs: 'p' attrs { key: 'ksize' value { ints: [2, 2] } }\n"
    "     attrs { key: 'strides' value { ints: [2, 2] } } }\n"
    "op { type: 'flatten' inputs: 'p' outputs: 'f' }\n"
    "op { type: 'scale' inputs: 'f' outputs: 'g' attrs { key: 'scale' value { f: 2 } } }\n"
    "op { type: 'concat' inputs: ['g', 'f'] outputs: 'cat' attrs { key: 'axis' value { i: 1 } } }\n"
    "op { type: 'fc' inputs: ['cat', 'w1', 'b1'] outputs: 'h' attrs { key: 'size' value { i: 8 } }\n"
    "     attrs { key: 'act' value { s: 'tanh' } } }\n"
    "op { type: 'dropout' inputs: 'h' outputs: ['d', 'dm'] attrs { key: 'dropout_prob' value { f: 0.25 } } }\n"
    "op { type: 'elementwise_add' inputs: ['d', 'h'] outputs: 'hh' }\n"
    "op { type: 'sigmoid' inputs: 'hh' outputs: 'hs' }\n"
    "op { type: 'elementwise_add' inputs: ['hs', 'hh'] outputs: 'hq' }\n"
    "op { type: 'identity' inputs: 'hq' outputs: 'hi' }\n"
    "op { type: 'reshape' inputs: 'hi' outputs: 'hr' attrs { key: 'shape' value { ints: [-1, 2, 4] } } }\n"
    "op { type: 'flatten' inputs: 'hr' outputs: 'hf' }\n"
    "op { type: 'fc' inputs: ['hf', 'w2', 'b2'] outputs: 'logits' attrs { key: 'size' value { i: 3 } } }\n"
    "op { type: 'softmax_with_cross_entropy' inputs: ['logits', 'y'] outputs: ['sm', 'loss'] }\n"
    "op { type: 'mean' inputs: 'loss' outputs: 'avg' }\n";

typedef struct cnn_run {
  pd_net *net;
  pd_scope *scope;
  pd_runner r;
} cnn_run;

/* CNN made trainable (momentum) with seeded parameters; plan: 0 none, 1 as
 * train does (forward kept), 2 every temporary, 3 the forward ops alone
 * (as infer runs: every value dies at its last reader). */
static void cnn_open(cnn_run *c, pd_dtype fdt, int plan, bool forward) {
  c->net = load(CNN, fdt);
  pd_error err = {0};
  Paddle__OptimizerDesc opt = PADDLE__OPTIMIZER_DESC__INIT;
  opt.type = "momentum", opt.lr = 0.1f;
  if (pd_net_make_trainable(c->net, "avg", &opt, &err) || pd_net_select_kernels(c->net, PD_CPU, &err))
    fail_msg("%s", err.msg);
  c->scope = pd_scope_new(NULL);
  assert_int_equal(pd_init_persistables(c->net, c->scope, NULL, 7, &err), PD_OK);
  bool active[64] = {0};
  assert_true(c->net->nops <= 64);
  for (int o = 0; o < c->net->nops; o++) active[o] = !forward || o < c->net->n_forward;
  assert_int_equal(pd_runner_init(&c->r, c->net, c->scope, active, &err), PD_OK);
  int avg = pd_net_var(c->net, "avg");
  if (plan) assert_int_equal(pd_runner_plan_memory(&c->r, &avg, 1, plan == 1, &err), PD_OK);
  c->r.exec.training = !forward, c->r.exec.seed = 5;
}

static void cnn_feed(cnn_run *c, int64_t n, int step) {
  pd_error err = {0};
  pd_net *net = c->net;
  int x = pd_net_var(net, "x"), y = pd_net_var(net, "y"), lr = pd_net_var(net, "@lr");
  c->r.exec.step = step;
  if (lr >= 0) pd_tensor_set(c->r.t[lr], 0, 0.1);
  assert_int_equal(pd_tensor_set_dims(c->r.t[x], 4, (int64_t[]){n, 2, 6, 6}, &err), PD_OK);
  assert_int_equal(pd_tensor_alloc(c->r.t[x], &err), PD_OK);
  assert_int_equal(pd_tensor_set_dims(c->r.t[y], 2, (int64_t[]){n, 1}, &err), PD_OK);
  assert_int_equal(pd_tensor_alloc(c->r.t[y], &err), PD_OK);
  uint64_t s = 11 + (uint64_t)step;
  for (int64_t i = 0; i < n * 72; i++) pd_tensor_set(c->r.t[x], i, 2 * pd_rng_uniform(&s) - 1);
  for (int64_t i = 0; i < n; i++) pd_tensor_set(c->r.t[y], i, (double)(pd_rng_next(&s) % 3));
}

static void cnn_close(cnn_run *c) {
  pd_runner_free(&c->r);
  pd_scope_free(c->scope);
  pd_net_free(c->net);
}

/* Runs a planned and an unplanned CNN op by op in lockstep (a training step
 * with each plan, and the forward pass alone); after each op,
 * every variable that a later op still reads (a lifetime computed here,
 * apart from the plan's) and every persistable must hold the same bits in
 * both. A buffer handed on while a value in it is still needed fails at the
 * op that overwrote it. */
static void test_memory_plan(void **state) {
  (void)state;
  const pd_dtype types[] = {PD_F64, PD_F32};
  for (int k = 0; k < 2; k++)
    for (int plan = 1; plan <= 3; plan++) {
      cnn_run ref, pl;
      cnn_open(&ref, types[k], 0, plan == 3);
      cnn_open(&pl, types[k], plan, plan == 3);
      pd_net *net = pl.net;
      int *last = calloc((size_t)net->nvars, sizeof *last), *first = calloc((size_t)net->nvars, sizeof *first);
      for (int v = 0; v < net->nvars; v++) first[v] = -1, last[v] = -1;
      for (int o = 0; o < (plan == 3 ? net->n_forward : net->nops); o++) {
        const pd_op *op = &net->ops[o];
        for (int s = 0; s < op->def->n_inputs; s++)
          for (int i = 0; i < op->in[s].n; i++)
            if (op->in[s].vars[i] >= 0) last[op->in[s].vars[i]] = o;
        for (int s = 0; s < op->def->n_outputs; s++)
          for (int i = 0; i < op->out[s].n; i++)
            if (op->out[s].vars[i] >= 0 && first[op->out[s].vars[i]] < 0) first[op->out[s].vars[i]] = o;
      }
      const int64_t sizes[] = {6, 6, 4}; /* the short batch re-plans */
      pd_error err = {0};
      int compared = 0;
      for (int b = 0; b < 3; b++) {
        cnn_feed(&ref, sizes[b], b);
        cnn_feed(&pl, sizes[b], b);
        for (int o = 0; o < (plan == 3 ? net->n_forward : net->nops); o++) {
          if (pd_runner_run(&ref.r, o, o + 1, &err) || pd_runner_run(&pl.r, o, o + 1, &err)) fail_msg("%s", err.msg);
          for (int v = 0; v < net->nvars; v++) {
            bool live = net->vars[v].kind == PD_VAR_TEMP ? first[v] >= 0 && first[v] <= o && o < last[v]
                                                         : net->vars[v].kind != PD_VAR_DATA;
            if (!live) continue;
            const pd_tensor *a = ref.r.t[v], *c = pl.r.t[v];
            assert_int_equal(pd_tensor_bytes(a), pd_tensor_bytes(c));
            if (memcmp(pd_tensor_data(a), pd_tensor_data(c), pd_tensor_bytes(a)) != 0)
              fail_msg("%s, plan %d, batch %d: after op #%d %s, \"%s\" differs from the run without a plan",
                       pd_dtype_name(types[k]), plan, b, o, net->ops[o].def->type, net->vars[v].name);
            compared++;
          }
        }
      }
      assert_true(compared > 300);
      assert_true(pl.r.plan->planned < pl.r.plan->naive); /* something was shared */
      assert_true(pl.r.plan->nbufs < pl.r.plan->ngroups);
      free(first), free(last);
      cnn_close(&ref);
      cnn_close(&pl);
    }
}

/* What a STATE variable starts from: its own init (a constant divisor, not
 * zero), else the reading op's slot value (batch_norm's running variance 1),
 * else zero for update-op state (@lr, p@MOMENT1 in a printed net); one with
 * none of these is an error naming it and its declaration. */
static void test_state_init(void **state) {
  (void)state;
  static const char text[] = "var { name: \"x\" shape: [-1, 2, 2, 2] }\n"
                             "var { name: \"div\" kind: STATE shape: [2] init { type: \"constant\" value: 255 } }\n"
                             "var { name: \"m\" kind: STATE shape: [2] }\n"
                             "var { name: \"@lr\" kind: STATE shape: [1] dtype: FLOAT64 }\n"
                             "op { type: \"broadcast_div\" inputs: [\"x\", \"div\"] outputs: \"xs\" }\n"
                             "op { type: \"batch_norm\" inputs: [\"x\", \"s\", \"b\", \"mean\", \"var\"] outputs: "
                             "[\"y\", \"mean\", \"var\"] }\n"
                             "op { type: \"sgd\" inputs: [\"b\", \"m\", \"@lr\"] outputs: \"b\" }\n";
  pd_net *net = load(text, PD_F32);
  pd_error err = {0};
  pd_scope *scope = pd_scope_new(NULL);
  if (pd_init_persistables(net, scope, NULL, 1, &err)) fail_msg("%s", err.msg);
  const char *names[] = {"div", "mean", "var", "@lr"};
  const double want[] = {255, 0, 1, 0};
  for (int i = 0; i < 4; i++) {
    const pd_tensor *t = &pd_scope_find(scope, names[i])->tensor;
    assert_int_equal(net->vars[pd_net_var(net, names[i])].kind, PD_VAR_STATE);
    for (int64_t k = 0; k < pd_tensor_numel(t); k++)
      if (pd_tensor_get(t, k) != want[i])
        fail_msg("%s[%lld] = %g, expected %g", names[i], (long long)k, pd_tensor_get(t, k), want[i]);
  }
  pd_scope_free(scope);
  pd_net_free(net);
  /* the divisor without its init: nothing to start from */
  static const char bare[] = "var { name: \"x\" shape: [-1, 2] }\n"
                             "var { name: \"div\" kind: STATE shape: [2] }\n"
                             "op { type: \"broadcast_div\" inputs: [\"x\", \"div\"] outputs: \"xs\" }\n";
  net = load(bare, PD_F32);
  scope = pd_scope_new(NULL);
  assert_int_equal(pd_init_persistables(net, scope, NULL, 1, &err), PD_ERR_INPUT);
  if (!strstr(err.msg, "t.pbtxt:2:7: STATE variable \"div\" has no value to start from: give it an init"))
    fail_msg("message: %s", err.msg);
  pd_scope_free(scope);
  pd_net_free(net);
}

/* The PD_OP_* flags the core acts on sit on exactly these ops of the
 * registry (their generated grad ops carry none). */
static void test_op_flags(void **state) {
  (void)state;
  static const struct {
    unsigned flag;
    const char *want;
  } cases[] = {{PD_OP_UPDATE, "adam momentum sgd "},
               {PD_OP_COLLECTIVE, "allreduce "},
               {PD_OP_GRAD_CLIP, "clip_by_global_norm "},
               {PD_OP_STACKS_ROWS, "fc "}};
  int n = 0;
  const pd_op_def *const *all = pd_op_all(&n);
  assert_true(n > 0);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    char got[256] = "";
    for (int i = 0; i < n; i++)
      if (all[i]->flags & cases[c].flag) {
        strncat(got, all[i]->type, sizeof got - strlen(got) - 2);
        strcat(got, " ");
      }
    if (strcmp(got, cases[c].want)) fail_msg("flag %#x on \"%s\", expected \"%s\"", cases[c].flag, got, cases[c].want);
  }
  for (int i = 0; i < n; i++)
    if (all[i]->flags & ~(unsigned)(PD_OP_UPDATE | PD_OP_COLLECTIVE | PD_OP_GRAD_CLIP | PD_OP_STACKS_ROWS))
      fail_msg("op %s has an unknown flag %#x", all[i]->type, all[i]->flags);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scope),
      cmocka_unit_test(test_build_and_infer),
      cmocka_unit_test(test_build_errors),
      cmocka_unit_test(test_prune),
      cmocka_unit_test(test_runner_batches),
      cmocka_unit_test(test_backward_mlp),
      cmocka_unit_test(test_backward_fanout),
      cmocka_unit_test(test_backward_shared_weights),
      cmocka_unit_test(test_backward_broadcast),
      cmocka_unit_test(test_missing_kernel),
      cmocka_unit_test(test_backward_errors),
      cmocka_unit_test(test_memory_plan),
      cmocka_unit_test(test_state_init),
      cmocka_unit_test(test_op_flags),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
