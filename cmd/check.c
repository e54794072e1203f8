/* check.c — `paddle-run check`: parse, validate and infer shapes, then print
 * every variable (kind, dtype, shape), the parameter count, FLOPs per
 * example, a memory estimate and the memory plan's figures — without
 * allocating a single tensor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backward.h"
#include "cli.h"
#include "gpu/gpurt.h"
#include "core/memplan.h"
#include "core/net.h"
#include "core/runner.h"
#include "base/util.h"
#include "core/optimizer.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_check = {"check", "validate a network and print every variable's shape",
                                 "usage: paddle-run check NET.pbtxt [--batch-size N] [--device cpu|gpu[:N]]\n"
                                 "\n"
                                 "Parses NET.pbtxt, checks every op against its OpProto, infers every\n"
                                 "variable's shape (-1 is the batch) and prints them, with the parameter\n"
                                 "count, FLOPs per example and a memory estimate. Allocates no tensors.\n"
                                 "\n"
                                 "  --batch-size N   batch for the memory estimate (default: the file's, or 64)\n"
                                 "  --device gpu[:N] also check that every op of the training step has a GPU\n"
                                 "                   kernel, allocate the step at the batch on the GPU through\n"
                                 "                   its caching allocator and report the bytes in use and peak\n",
                                 run};

static const char *human(double bytes, char *buf, size_t size) {
  const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, u++;
  snprintf(buf, size, u ? "%.2f %s" : "%.0f %s", bytes, unit[u]);
  return buf;
}

static const char *count(double n, char *buf, size_t size) {
  const char *unit[] = {"", " K", " M", " G", " T"};
  int u = 0;
  while (n >= 1000 && u < 4) n /= 1000, u++;
  snprintf(buf, size, u ? "%.2f%s" : "%.0f%s", n, unit[u]);
  return buf;
}

/* The memory plan (lib/core/memplan.h) of the net's ops at the batch: the
 * temporaries' bytes each on its own against the bytes with the plan's
 * shared buffers. A training step keeps its forward values (train does). */
static pd_status plan_line(const pd_net *net, long long batch, bool training, pd_error *err) {
  pd_tensor *shapes = calloc((size_t)net->nvars + 1, sizeof *shapes);
  pd_tensor **ptrs = calloc((size_t)net->nvars + 1, sizeof *ptrs);
  pd_memplan p = {0};
  pd_status st = shapes && ptrs ? PD_OK : pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (!st) st = pd_net_shapes_at(net, batch, shapes, err);
  if (!st) st = pd_memplan_init(&p, net, NULL, NULL, training, err);
  if (!st) {
    for (int v = 0; v < net->nvars; v++) ptrs[v] = &shapes[v];
    pd_memplan_assign(&p, ptrs);
    double temps = 0; /* every temporary in its own buffer */
    for (int v = 0; v < net->nvars; v++) {
      int64_t n = pd_tensor_numel(&shapes[v]);
      if (net->vars[v].kind == PD_VAR_TEMP && n > 0) temps += (double)n * (double)pd_dtype_size(shapes[v].dtype);
    }
    double planned = temps - (double)p.naive + (double)p.planned;
    char b1[32], b2[32];
    printf("memory plan at batch %lld, %s: temporaries %s naive, %s planned (%d variables in %d shared buffers%s)\n",
           batch, training ? "training step" : "forward", human(temps, b1, sizeof b1), human(planned, b2, sizeof b2),
           p.ngroups, p.nbufs, training ? "; the forward values stay" : "");
  }
  pd_memplan_free(&p);
  free(shapes), free(ptrs);
  return st;
}

/* On a GPU: the training step (the net is made trainable when it has a
 * loss) must have a kernel for every op; its tensors are allocated at the
 * batch (nothing runs) and the allocator's figures printed. */
static int check_gpu(pd_net *net, long long batch, pd_place place) {
  pd_error err = {0};
  const Paddle__TrainDesc *td = net->desc->train;
  pd_status st = pd_net_select_kernels(net, PD_GPU, &err);
  pd_scope *scope = st ? NULL : pd_scope_new(NULL);
  if (!st && !scope) st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
  pd_runner r = {0};
  if (!st) st = pd_runner_init(&r, net, scope, NULL, &err);
  for (int v = 0; v < net->nvars && !st; v++) { /* data tensors at the batch, as a feed would set them */
    if (net->vars[v].kind != PD_VAR_DATA) continue;
    pd_tensor *t = r.t[v];
    int64_t dims[PD_MAX_DIMS];
    memcpy(dims, net->vars[v].meta.dims, sizeof dims);
    if (net->vars[v].meta.ndim > 0 && dims[0] < 0) dims[0] = batch;
    t->dtype = net->vars[v].meta.dtype;
    st = pd_tensor_set_dims(t, net->vars[v].meta.ndim, dims, &err);
    if (!st) st = pd_tensor_alloc(t, &err);
  }
  if (!st) st = pd_runner_set_place(&r, place, &err);
  if (!st) st = pd_gpu_runner_stage(&r, &err);
  if (!st) st = pd_runner_prepare(&r, &err);
  if (!st) st = pd_gpu_sync("allocating the step", &err);
  if (!st) {
    pd_gpu_mem m = pd_gpu_mem_stats();
    char dev[300], b1[32], b2[32], b3[32];
    printf("gpu: %s\n", pd_gpu_describe(dev, sizeof dev));
    printf("gpu memory at batch %lld (%s, caching allocator): %s in use, peak %s, %s cached, %zu device allocations\n",
           batch, td && td->loss && *td->loss ? "training step" : "forward", human((double)m.in_use, b1, sizeof b1),
           human((double)m.peak, b2, sizeof b2), human((double)m.cached, b3, sizeof b3), m.device_allocs);
  }
  pd_runner_free(&r);
  pd_scope_free(scope);
  return st ? pd_cli_fail(&err) : 0;
}

static int run(int argc, char **argv) {
  enum { BATCH, DEV, NOPT = DEV + PD_N_DEVICE_OPTS };
  pd_opt opts[NOPT] = {[BATCH] = {.name = "--batch-size", .has_value = true}, PD_DEVICE_OPTS(DEV)};
  char *pos[1];
  int code = 0;
  int npos = pd_cli_parse(&pd_cmd_check, argc, argv, opts, NOPT, pos, 1, &code);
  if (npos < 0) return code;
  if (npos != 1) return pd_cli_usage_error("check", "expected NET.pbtxt; see `paddle-run check --help`");
  pd_place place;
  if ((code = pd_cli_device("check", opts, DEV, &place))) return code;
  pd_error err = {0};
  pd_net *net = NULL;
  if (pd_net_load(pos[0], NULL, &net, &err) || pd_net_select_kernels(net, PD_CPU, &err)) {
    pd_net_free(net);
    return pd_cli_fail(&err);
  }
  long long batch = net->desc->train && net->desc->train->has_batch_size ? net->desc->train->batch_size : 64;
  if (opts[BATCH].value && !pd_cli_int("check", "--batch-size", opts[BATCH].value, 1, PD_MAX_BATCH, &batch)) {
    pd_net_free(net);
    return 2;
  }
  if (pd_net_check_memory(net, batch, &err)) {
    pd_net_free(net);
    return pd_cli_fail(&err);
  }
  pd_tensor *one = calloc((size_t)net->nvars + 1, sizeof *one);
  if (!one || pd_net_shapes_at(net, 1, one, &err)) {
    free(one);
    pd_net_free(net);
    return pd_cli_fail(&err);
  }
  printf("net \"%s\" (%s): %d ops, %d variables\n\n", net->desc->name ? net->desc->name : "", net->file, net->nops,
         net->nvars);
  printf("%-24s %-6s %-8s %s\n", "variable", "kind", "dtype", "shape");
  double params = 0, param_bytes = 0, act_bytes = 0, frozen = 0;
  int n_params = 0, n_frozen = 0;
  bool batched = false; /* some variable has the batch dim; else the net's shapes are fixed */
  for (int v = 0; v < net->nvars; v++) {
    const pd_var_info *vi = &net->vars[v];
    batched |= vi->meta.ndim > 0 && vi->meta.dims[0] < 0;
    char d[128];
    printf("%-24s %-6s %-8s %s\n", vi->name, pd_var_kind_name(vi->kind), pd_dtype_name(vi->meta.dtype),
           pd_dims_str(vi->meta.ndim, vi->meta.dims, d, sizeof d));
    int64_t n = pd_tensor_numel(&one[v]);
    double bytes = n > 0 ? (double)n * (double)pd_dtype_size(one[v].dtype) : 0;
    if (vi->kind == PD_VAR_PARAM) {
      params += (double)n, param_bytes += bytes, n_params++;
      if (vi->frozen) frozen += (double)n, n_frozen++;
    } else if (vi->kind != PD_VAR_STATE)
      act_bytes += bytes;
  }
  char b1[32], b2[32], b3[32];
  printf("\nparameters: %.0f (%s)\n", params, human(param_bytes, b1, sizeof b1));
  if (n_frozen) /* trainable: false (docs/netdesc.md) */
    printf("trainable: %.0f in %d variables; frozen: %.0f in %d variables\n", params - frozen, n_params - n_frozen,
           frozen, n_frozen);
  if (batched) {
    printf("FLOPs per example: forward %s\n", count(pd_net_flops(net, one, 0, net->n_forward), b1, sizeof b1));
    printf("memory estimate: parameters %s, activations %s per example (%s at batch %lld)\n",
           human(param_bytes, b1, sizeof b1), human(act_bytes, b2, sizeof b2),
           human(act_bytes * (double)batch, b3, sizeof b3), batch);
  } else { /* every shape fixed (a text binding's net): the whole batch is in them */
    printf("FLOPs per batch (no -1 batch dim; the shapes are the batch's): forward %s\n",
           count(pd_net_flops(net, one, 0, net->n_forward), b1, sizeof b1));
    printf("memory estimate: parameters %s, activations %s per batch\n", human(param_bytes, b1, sizeof b1),
           human(act_bytes, b2, sizeof b2));
  }
  free(one);
  /* the plan of the forward pass, then of the training step */
  const Paddle__TrainDesc *td = net->desc->train;
  Paddle__OptimizerDesc dflt = PADDLE__OPTIMIZER_DESC__INIT;
  pd_status st = plan_line(net, batch, false, &err);
  if (!st && td && td->loss && *td->loss) {
    st = pd_net_make_trainable(net, td->loss, td->optimizer ? td->optimizer : &dflt, &err);
    if (!st) st = plan_line(net, batch, true, &err);
  }
  if (st) {
    pd_net_free(net);
    return pd_cli_fail(&err);
  }
  code = place.kind == PD_GPU ? check_gpu(net, batch, place) : 0;
  pd_net_free(net);
  pd_gpu_close();
  return code;
}
