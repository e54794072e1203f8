/* check.c — `paddle-run check`: parse, validate and infer shapes, then print
 * every variable (kind, dtype, shape), the parameter count, FLOPs per
 * example and a memory estimate — without allocating a single tensor. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "net.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_check = {"check", "validate a network and print every variable's shape",
                                 "usage: paddle-run check NET.pbtxt [--batch-size N]\n"
                                 "\n"
                                 "Parses NET.pbtxt, checks every op against its OpProto, infers every\n"
                                 "variable's shape (-1 is the batch) and prints them, with the parameter\n"
                                 "count, FLOPs per example and a memory estimate. Allocates no tensors.\n"
                                 "\n"
                                 "  --batch-size N   batch for the memory estimate (default: the file's, or 64)\n",
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

static int run(int argc, char **argv) {
  pd_opt opts[] = {{.name = "--batch-size", .has_value = true}};
  char *pos[1];
  int code = 0;
  int npos = pd_cli_parse(&pd_cmd_check, argc, argv, opts, 1, pos, 1, &code);
  if (npos < 0) return code;
  if (npos != 1) return pd_cli_usage_error("check", "expected NET.pbtxt; see `paddle-run check --help`");
  pd_error err = {0};
  pd_net *net = NULL;
  if (pd_net_load(pos[0], NULL, &net, &err) || pd_net_select_kernels(net, PD_CPU, &err)) {
    pd_net_free(net);
    return pd_cli_fail(&err);
  }
  long long batch = net->desc->train && net->desc->train->has_batch_size ? net->desc->train->batch_size : 64;
  if (opts[0].value && !pd_cli_int("check", "--batch-size", opts[0].value, 1, &batch)) {
    pd_net_free(net);
    return 2;
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
  double params = 0, param_bytes = 0, act_bytes = 0;
  for (int v = 0; v < net->nvars; v++) {
    const pd_var_info *vi = &net->vars[v];
    char d[128];
    printf("%-24s %-6s %-8s %s\n", vi->name, pd_var_kind_name(vi->kind), pd_dtype_name(vi->meta.dtype),
           pd_dims_str(vi->meta.ndim, vi->meta.dims, d, sizeof d));
    int64_t n = pd_tensor_numel(&one[v]);
    double bytes = n > 0 ? (double)n * (double)pd_dtype_size(one[v].dtype) : 0;
    if (vi->kind == PD_VAR_PARAM)
      params += (double)n, param_bytes += bytes;
    else if (vi->kind != PD_VAR_STATE)
      act_bytes += bytes;
  }
  char b1[32], b2[32], b3[32];
  printf("\nparameters: %.0f (%s)\n", params, human(param_bytes, b1, sizeof b1));
  printf("FLOPs per example: forward %s\n", count(pd_net_flops(net, one, 0, net->n_forward), b1, sizeof b1));
  printf("memory estimate: parameters %s, activations %s per example (%s at batch %lld)\n",
         human(param_bytes, b1, sizeof b1), human(act_bytes, b2, sizeof b2),
         human(act_bytes * (double)batch, b3, sizeof b3), batch);
  free(one);
  pd_net_free(net);
  return 0;
}
