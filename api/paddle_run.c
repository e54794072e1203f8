/* paddle_run.c — the C API (include/paddle_run.h) over the library: a
 * handle holds a net, its scope and up to two runners (forward for
 * pdr_infer, the whole training step for pdr_train_step), built as
 * `paddle-run infer` and `train` build theirs. Only the pdr_ symbols leave
 * the shared object (api/libpaddle-run.map). CPU only. */
#include "paddle_run.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/initializer.h"
#include "core/net.h"
#include "core/optimizer.h"
#include "core/runner.h"
#include "io/checkpoint.h"
#include "io/params.h"

_Static_assert((int)PDR_FLOAT32 == (int)PD_F32 && (int)PDR_FLOAT64 == (int)PD_F64 && (int)PDR_INT32 == (int)PD_I32 &&
                   (int)PDR_INT64 == (int)PD_I64 && (int)PDR_UINT8 == (int)PD_U8,
               "pdr_dtype numbers pd_dtype's");

struct pdr_net {
  pd_error err;
  pd_net *net;
  pd_scope *scope;
  bool *inset; /* per variable: an input was set */
  /* forward: the runner for the fetch set it was built for */
  pd_runner fr;
  bool have_fr;
  int *fetch, nfetch;
  /* training (PDR_OPEN_TRAIN) */
  bool train;
  Paddle__TrainDesc *td;
  Paddle__OptimizerDesc *opt;
  pd_runner tr;
  bool have_tr;
  int *metrics, nmetrics;
  int64_t step, batch; /* steps taken; rows of the last one */
  /* the last run's outputs and the runner holding them */
  const int *outs;
  int nouts;
  pd_runner *out_r;
};

static const pd_error oom = {.status = PD_ERR_RUNTIME, .msg = "out of memory", .row = -1};

const char *pdr_version(void) { return PD_VERSION; }

static pdr_status fail(pdr_net *h, pdr_status st, const char *fmt, const char *arg) {
  h->err.status = (pd_status)st;
  snprintf(h->err.msg, sizeof h->err.msg, fmt, arg);
  return st;
}

/* Every call starts with a clean error, so pdr_errmsg tells of the last. */
#define BEGIN(h)                     \
  do {                               \
    if (!(h)) return PDR_ERR_MISUSE; \
    pd_error_clear(&(h)->err);       \
  } while (0)

/* Training: the train section's optimizer added, parameters read (all of
 * them, as `train --params` without --allow-partial-params) and the rest
 * initialised from the seed, as `paddle-run train` starts. */
static pd_status open_train(pdr_net *h, const char *params, pd_error *err) {
  static Paddle__TrainDesc empty_train = PADDLE__TRAIN_DESC__INIT;
  static Paddle__OptimizerDesc empty_opt = PADDLE__OPTIMIZER_DESC__INIT;
  pd_net *net = h->net;
  h->td = net->desc->train ? net->desc->train : &empty_train;
  h->opt = h->td->optimizer ? h->td->optimizer : &empty_opt;
  if (!h->td->loss || !*h->td->loss)
    return pd_errorf(err, PD_ERR_INPUT, "%s: no loss: set train { loss: \"VAR\" } in the file", net->file);
  pd_status st = pd_schedule_check(h->opt, err);
  if (!st) st = pd_net_make_trainable(net, h->td->loss, h->opt, err);
  if (!st && !(h->metrics = calloc(h->td->n_metrics + 1, sizeof *h->metrics)))
    st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (!st) h->metrics[h->nmetrics++] = net->loss;
  for (size_t i = 0; !st && i < h->td->n_metrics; i++) {
    int v = pd_net_var(net, h->td->metrics[i]);
    if (v < 0 || pd_tensor_numel(&net->vars[v].meta) != 1)
      st = pd_errorf(err, PD_ERR_INPUT, "%s: train.metrics \"%s\" must be a one-element variable of the net", net->file,
                     h->td->metrics[i]);
    else
      h->metrics[h->nmetrics++] = v;
  }
  if (!st && params) {
    int mismatched = 0;
    st = pd_params_load(net, h->scope, params, NULL, false, NULL, &mismatched, err);
    if (!st && mismatched)
      st = pd_errorf(err, PD_ERR_INPUT,
                     "%s does not hold this net's parameters (%d files or variables missed or skipped: another net's?)",
                     params, mismatched);
  }
  if (!st) st = pd_init_persistables(net, h->scope, h->td->default_init, h->td->seed, err);
  h->train = !st;
  return st;
}

static pd_status open_net(pdr_net *h, const char *params, unsigned flags, pd_error *err) {
  pd_net *net = h->net;
  pd_status st = PD_OK;
  if (flags & ~PDR_OPEN_TRAIN) return pd_errorf(err, PD_ERR_INPUT, "pdr_open: unknown flags 0x%x", flags);
  if (!(h->scope = pd_scope_new(NULL)) || !(h->inset = calloc((size_t)net->nvars + 1, 1)))
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (flags & PDR_OPEN_TRAIN) {
    st = open_train(h, params, err);
  } else if (params) {
    st = pd_params_load(net, h->scope, params, NULL, true, NULL, NULL, err);
  } else {
    for (int v = 0; v < net->nvars && !st; v++)
      if (net->vars[v].kind == PD_VAR_PARAM)
        st = pd_errorf(err, PD_ERR_INPUT, "%s: the net has parameters: give a parameter directory", net->file);
  }
  if (!st) st = pd_net_select_kernels(net, PD_CPU, err);
  /* inputs may be set before the first run: the variables exist from here */
  for (int v = 0; v < net->nvars && !st; v++)
    if (!pd_scope_var(h->scope, net->vars[v].name)) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  return st;
}

static pdr_status finish_open(pdr_net *h, pd_status st, const char *params, unsigned flags) {
  if (!st) st = open_net(h, params, flags, &h->err);
  return (pdr_status)st;
}

pdr_status pdr_open(const char *path, const char *params, unsigned flags, pdr_net **out) {
  if (!out) return PDR_ERR_MISUSE;
  pdr_net *h = *out = calloc(1, sizeof *h);
  if (!h) return PDR_ERR_RUNTIME;
  if (!path) return fail(h, PDR_ERR_MISUSE, "pdr_open: no path%s", "");
  return finish_open(h, pd_net_load(path, NULL, &h->net, &h->err), params, flags);
}

pdr_status pdr_open_text(const char *name, const char *text, size_t len, const char *params, unsigned flags,
                         pdr_net **out) {
  if (!out) return PDR_ERR_MISUSE;
  pdr_net *h = *out = calloc(1, sizeof *h);
  if (!h) return PDR_ERR_RUNTIME;
  if (!text) return fail(h, PDR_ERR_MISUSE, "pdr_open_text: no text%s", "");
  return finish_open(h, pd_net_from_text(name ? name : "<text>", text, len, NULL, &h->net, &h->err), params, flags);
}

void pdr_close(pdr_net *h) {
  if (!h) return;
  if (h->have_fr) pd_runner_free(&h->fr);
  if (h->have_tr) pd_runner_free(&h->tr);
  pd_scope_free(h->scope);
  pd_net_free(h->net);
  free(h->inset), free(h->fetch), free(h->metrics);
  free(h);
}

pdr_status pdr_errcode(const pdr_net *h) { return (pdr_status)(h ? h->err.status : oom.status); }
const char *pdr_errmsg(const pdr_net *h) { return h ? h->err.msg : oom.msg; }

/* Whether the handle holds a net (an open that failed holds only its error). */
static bool usable(pdr_net *h, const char *call) {
  if (h->net && h->scope) return true;
  fail(h, PDR_ERR_MISUSE, "%s: the net did not open", call);
  return false;
}

pdr_status pdr_set_input(pdr_net *h, const char *name, pdr_dtype dtype, int ndim, const int64_t *dims,
                         const void *data) {
  BEGIN(h);
  if (!usable(h, "pdr_set_input")) return PDR_ERR_MISUSE;
  if (!name || (ndim && !dims) || ndim < 0 || ndim > PD_MAX_DIMS)
    return fail(h, PDR_ERR_MISUSE, "pdr_set_input: bad arguments (input \"%s\")", name ? name : "(null)");
  pd_net *net = h->net;
  int v = pd_net_var(net, name);
  if (v < 0 || net->vars[v].kind != PD_VAR_DATA)
    return fail(h, PDR_ERR_INPUT, v < 0 ? "the net has no variable \"%s\"" : "\"%s\" is not a data variable of the net",
                name);
  const pd_tensor *meta = &net->vars[v].meta;
  char want[128], got[128];
  if ((int)dtype != (int)meta->dtype)
    return (pdr_status)pd_errorf(&h->err, PD_ERR_INPUT, "input \"%s\": dtype %s given, the net declares %s", name,
                                 (unsigned)dtype < PD_NUM_DTYPES ? pd_dtype_name((pd_dtype)dtype) : "(unknown)",
                                 pd_dtype_name(meta->dtype));
  bool fits = ndim == meta->ndim;
  for (int d = 0; d < ndim && fits; d++) fits = dims[d] >= 0 && pd_dim_fits(meta->dims[d], dims[d]);
  if (!fits)
    return (pdr_status)pd_errorf(&h->err, PD_ERR_INPUT, "input \"%s\": shape %s given, the net declares %s", name,
                                 pd_dims_str(ndim, dims, got, sizeof got),
                                 pd_dims_str(meta->ndim, meta->dims, want, sizeof want));
  pd_tensor *t = &pd_scope_var(h->scope, name)->tensor;
  t->dtype = meta->dtype;
  pd_status st = pd_tensor_set_dims(t, ndim, dims, &h->err);
  if (!st) st = pd_tensor_alloc(t, &h->err);
  if (st) return (pdr_status)st;
  if (pd_tensor_bytes(t)) {
    if (!data) return fail(h, PDR_ERR_MISUSE, "pdr_set_input: no data for \"%s\"", name);
    memcpy(pd_tensor_data(t), data, pd_tensor_bytes(t));
  }
  h->inset[v] = true;
  return PDR_OK;
}

/* Every data variable that an active op reads has been set. */
static pd_status check_inputs(pdr_net *h, const bool *active, int end) {
  pd_net *net = h->net;
  for (int o = 0; o < end; o++) {
    if (active && !active[o]) continue;
    const pd_op *op = &net->ops[o];
    for (int s = 0; s < PD_MAX_SLOTS; s++)
      for (int i = 0; i < op->in[s].n; i++) {
        int v = op->in[s].vars[i];
        if (v >= 0 && net->vars[v].kind == PD_VAR_DATA && !h->inset[v]) {
          char label[256];
          return pd_errorf(&h->err, PD_ERR_INPUT, "input \"%s\" is needed (by %s): set it with pdr_set_input",
                           net->vars[v].name, pd_net_op_label(net, o, label, sizeof label));
        }
      }
  }
  return PD_OK;
}

/* The default fetch: the variables the forward ops compute from what is
 * set (inputs, parameters, state) that no other such op reads. */
static pd_status default_fetch(pdr_net *h, int **out, int *n) {
  pd_net *net = h->net;
  bool *have = calloc((size_t)net->nvars + 1, 1), *made = calloc((size_t)net->nvars + 1, 1),
       *read = calloc((size_t)net->nvars + 1, 1);
  int *f = calloc((size_t)net->nvars + 1, sizeof *f), nf = 0;
  if (!have || !made || !read || !f) {
    free(have), free(made), free(read), free(f);
    return pd_errorf(&h->err, PD_ERR_RUNTIME, "out of memory");
  }
  for (int v = 0; v < net->nvars; v++)
    have[v] = h->inset[v] || net->vars[v].kind == PD_VAR_PARAM || net->vars[v].kind == PD_VAR_STATE;
  for (int o = 0; o < net->n_forward; o++) {
    const pd_op *op = &net->ops[o];
    bool ok = true;
    for (int s = 0; s < PD_MAX_SLOTS && ok; s++)
      for (int i = 0; i < op->in[s].n && ok; i++) ok = op->in[s].vars[i] < 0 || have[op->in[s].vars[i]];
    if (!ok) continue;
    for (int s = 0; s < PD_MAX_SLOTS; s++)
      for (int i = 0; i < op->in[s].n; i++)
        if (op->in[s].vars[i] >= 0) read[op->in[s].vars[i]] = true;
    for (int s = 0; s < PD_MAX_SLOTS; s++)
      for (int i = 0; i < op->out[s].n; i++)
        if (op->out[s].vars[i] >= 0) have[op->out[s].vars[i]] = made[op->out[s].vars[i]] = true;
  }
  for (int v = 0; v < net->nvars; v++)
    if (made[v] && !read[v] && net->vars[v].kind == PD_VAR_TEMP) f[nf++] = v;
  free(have), free(made), free(read);
  *out = f, *n = nf;
  return PD_OK;
}

/* The forward runner for this fetch set (rebuilt when the set changes). */
static pd_status forward_runner(pdr_net *h, int *f, int nf) {
  if (h->have_fr && nf == h->nfetch && !memcmp(f, h->fetch, sizeof *f * (size_t)nf)) {
    free(f);
    return PD_OK;
  }
  if (h->have_fr) pd_runner_free(&h->fr);
  h->have_fr = false, h->out_r = NULL, h->nouts = 0;
  free(h->fetch);
  h->fetch = f, h->nfetch = nf;
  pd_net *net = h->net;
  bool *active = calloc((size_t)net->nops + 1, 1);
  if (!active) return pd_errorf(&h->err, PD_ERR_RUNTIME, "out of memory");
  pd_net_prune(net, f, nf, active);
  for (int o = net->n_forward; o < net->nops; o++) active[o] = false;
  pd_status st = pd_runner_init(&h->fr, net, h->scope, active, &h->err);
  h->have_fr = !st;
  /* beside a training runner it stays unplanned, as train's evaluation does */
  if (!st && !h->train) st = pd_runner_plan_memory(&h->fr, f, nf, false, &h->err);
  free(active);
  if (st && h->have_fr) pd_runner_free(&h->fr), h->have_fr = false;
  if (st) h->nfetch = 0; /* rebuilt next time */
  return st;
}

pdr_status pdr_infer(pdr_net *h, const char *const *fetch, int nfetch) {
  BEGIN(h);
  if (!usable(h, "pdr_infer")) return PDR_ERR_MISUSE;
  if (nfetch < 0 || (nfetch && !fetch)) return fail(h, PDR_ERR_MISUSE, "pdr_infer: bad fetch list%s", "");
  pd_net *net = h->net;
  int *f = NULL, nf = 0;
  pd_status st = PD_OK;
  if (nfetch) {
    if (!(f = calloc((size_t)nfetch, sizeof *f))) return fail(h, PDR_ERR_RUNTIME, "out of memory%s", "");
    for (nf = 0; nf < nfetch && !st; nf++)
      if (!fetch[nf] || (f[nf] = pd_net_var(net, fetch[nf])) < 0)
        st =
            pd_errorf(&h->err, PD_ERR_INPUT, "fetch: the net has no variable \"%s\"", fetch[nf] ? fetch[nf] : "(null)");
    if (st) {
      free(f);
      return (pdr_status)st;
    }
  } else if ((st = default_fetch(h, &f, &nf))) {
    return (pdr_status)st;
  }
  if (!nf) {
    free(f);
    return fail(h, PDR_ERR_INPUT, "nothing to compute from the inputs set; set more inputs or name what to fetch%s",
                "");
  }
  st = forward_runner(h, f, nf);
  if (!st) st = check_inputs(h, h->fr.active, net->n_forward);
  if (st) return (pdr_status)st;
  h->fr.exec.training = false;
  st = pd_runner_run(&h->fr, 0, net->n_forward, &h->err);
  h->out_r = st ? NULL : &h->fr;
  h->outs = h->fetch, h->nouts = st ? 0 : h->nfetch;
  return (pdr_status)st;
}

pdr_status pdr_train_step(pdr_net *h) {
  BEGIN(h);
  if (!usable(h, "pdr_train_step")) return PDR_ERR_MISUSE;
  if (!h->train) return fail(h, PDR_ERR_MISUSE, "pdr_train_step: open the net with PDR_OPEN_TRAIN%s", "");
  pd_net *net = h->net;
  pd_status st = check_inputs(h, NULL, net->nops);
  if (st) return (pdr_status)st;
  if (!h->have_tr) {
    st = pd_runner_init(&h->tr, net, h->scope, NULL, &h->err);
    h->have_tr = !st;
    if (!st) st = pd_runner_plan_memory(&h->tr, h->metrics, h->nmetrics, true, &h->err);
    if (st) return (pdr_status)st;
    h->tr.exec.training = true;
    h->tr.exec.seed = h->td->seed;
  }
  h->out_r = NULL, h->nouts = 0;
  /* as one step of `paddle-run train`: the schedule's rate and the 1-based step */
  int lr_v = pd_net_var(net, "@lr"), step_v = pd_net_var(net, "@step");
  h->tr.exec.step = h->step;
  if (lr_v >= 0) pd_tensor_set(h->tr.t[lr_v], 0, pd_schedule_lr(h->opt, h->step));
  if (step_v >= 0) pd_tensor_set(h->tr.t[step_v], 0, (double)(h->step + 1));
  st = pd_runner_run(&h->tr, 0, net->nops, &h->err);
  if (st) return (pdr_status)st;
  h->step++;
  for (int v = 0; v < net->nvars; v++)
    if (net->vars[v].kind == PD_VAR_DATA && h->inset[v] && h->tr.t[v]->ndim) h->batch = h->tr.t[v]->dims[0];
  h->out_r = &h->tr, h->outs = h->metrics, h->nouts = h->nmetrics;
  const pd_tensor *loss = h->tr.t[net->loss];
  double l = pd_tensor_numel(loss) >= 1 ? pd_tensor_get(loss, 0) : NAN;
  if (!isfinite(l))
    return (pdr_status)pd_errorf(&h->err, PD_ERR_RUNTIME, "the loss \"%s\" is %s at step %lld",
                                 net->vars[net->loss].name,
                                 isnan(l) ? "nan"
                                 : l > 0  ? "inf"
                                          : "-inf",
                                 (long long)h->step);
  return PDR_OK;
}

int pdr_output_count(const pdr_net *h) { return h ? h->nouts : 0; }

const char *pdr_output_name(const pdr_net *h, int i) {
  return h && i >= 0 && i < h->nouts ? h->net->vars[h->outs[i]].name : NULL;
}

/* The tensor of output `name` of the last run. */
static const pd_tensor *find_output(pdr_net *h, const char *name) {
  for (int i = 0; name && i < h->nouts; i++)
    if (!strcmp(h->net->vars[h->outs[i]].name, name)) return h->out_r->t[h->outs[i]];
  fail(h, h->nouts ? PDR_ERR_INPUT : PDR_ERR_MISUSE,
       h->nouts ? "\"%s\" is not an output of the last run" : "no output \"%s\": no run has succeeded yet",
       name ? name : "(null)");
  return NULL;
}

pdr_status pdr_output(pdr_net *h, const char *name, pdr_dtype *dtype, int *ndim, const int64_t **dims,
                      const void **data) {
  BEGIN(h);
  const pd_tensor *t = find_output(h, name);
  if (!t) return (pdr_status)h->err.status;
  if (dtype) *dtype = (pdr_dtype)t->dtype;
  if (ndim) *ndim = t->ndim;
  if (dims) *dims = t->dims;
  if (data) *data = pd_tensor_data(t);
  return PDR_OK;
}

pdr_status pdr_output_copy(pdr_net *h, const char *name, void *buf, size_t size) {
  BEGIN(h);
  const pd_tensor *t = find_output(h, name);
  if (!t) return (pdr_status)h->err.status;
  size_t bytes = pd_tensor_bytes(t);
  if (size < bytes || (bytes && !buf))
    return (pdr_status)pd_errorf(&h->err, PD_ERR_INPUT, "output \"%s\" is %zu bytes, the buffer %zu", name, bytes,
                                 buf ? size : 0);
  if (bytes) memcpy(buf, pd_tensor_data(t), bytes);
  return PDR_OK;
}

pdr_status pdr_save_params(pdr_net *h, const char *dir) {
  BEGIN(h);
  if (!usable(h, "pdr_save_params")) return PDR_ERR_MISUSE;
  if (!dir) return fail(h, PDR_ERR_MISUSE, "pdr_save_params: no directory%s", "");
  pd_net *net = h->net;
  pd_ckpt_var *vars = calloc((size_t)net->nvars + 1, sizeof *vars);
  if (!vars) return fail(h, PDR_ERR_RUNTIME, "out of memory%s", "");
  int n = 0;
  for (int v = 0; v < net->nvars; v++) {
    const pd_var *var = pd_scope_find(h->scope, net->vars[v].name);
    if ((net->vars[v].kind == PD_VAR_PARAM || net->vars[v].kind == PD_VAR_STATE) && var && var->tensor.storage)
      vars[n++] = (pd_ckpt_var){net->vars[v].name, &var->tensor};
  }
  pd_ckpt_state state = {.net = net->desc->name ? net->desc->name : "",
                         .step = h->step,
                         .batch_size = h->batch,
                         .optimizer = h->train ? h->opt->type : NULL,
                         .seed = h->train ? h->td->seed : 0,
                         .lr = h->train && h->step ? pd_schedule_lr(h->opt, h->step - 1) : 0};
  pd_ckpt_lock *lock = NULL;
  pd_status st = pd_checkpoint_check_writable(dir, &h->err);
  if (!st) st = pd_checkpoint_lock(dir, &lock, &h->err);
  if (!st) st = pd_checkpoint_save(dir, vars, n, &state, INT_MAX, NULL, 0, &h->err);
  if (lock) pd_checkpoint_unlock(lock);
  free(vars);
  return (pdr_status)st;
}
