/* export.c — `paddle-run export`: a network and its parameters as an ONNX
 * model (opset 13) for other runtimes, pruned to what the fetched
 * variables need, in inference form. Written only once complete. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/fileutil.h"
#include "onnx/onnx_export.h"
#include "io/params.h"
#include "base/util.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_export = {"export", "write a network and its parameters as an ONNX model",
                                  "usage: paddle-run export NET.pbtxt --params DIR -o MODEL.onnx [--fetch VAR]...\n"
                                  "\n"
                                  "Writes the ops that the fetched variables need as an ONNX model (opset 13),\n"
                                  "in inference form (dropout passes through, batch_norm uses its running\n"
                                  "statistics). Variable names, shapes and dtypes are kept; data variables\n"
                                  "become the graph's inputs (the batch -1 a symbolic dim), parameters and\n"
                                  "state its initializers.\n"
                                  "\n"
                                  "  --params DIR       required: the parameters, a directory of NAME.npy files\n"
                                  "                     or a checkpoint (an empty directory for a net without any)\n"
                                  "  -o, --output FILE  the model to write\n"
                                  "  --fetch VAR        an output of the model (repeatable); default: the outputs\n"
                                  "                     of the part of the net ONNX can express that nothing in\n"
                                  "                     that part reads (loss and metric ops have no ONNX form)\n",
                                  run};

static int run(int argc, char **argv) {
  enum { PARAMS, OUT, OUT_SHORT, FETCH, NOPT };
  pd_opt opts[NOPT] = {{.name = "--params", .has_value = true},
                       {.name = "--output", .has_value = true},
                       {.name = "-o", .has_value = true},
                       {.name = "--fetch", .has_value = true, .repeat = true}};
  char *pos[1];
  int code = 0;
  int npos = pd_cli_parse(&pd_cmd_export, argc, argv, opts, NOPT, pos, 1, &code);
  if (npos < 0) return code;
  if (npos != 1) return pd_cli_usage_error("export", "expected NET.pbtxt; see `paddle-run export --help`");
  const char *out = opts[OUT].value ? opts[OUT].value : opts[OUT_SHORT].value;
  if (!out) return pd_cli_usage_error("export", "give the model to write with -o MODEL.onnx");
  if (!opts[PARAMS].value)
    return pd_cli_usage_error("export", "--params DIR is required: the values of the parameters and state to write (a "
                                        "directory of NAME.npy files or a checkpoint; an empty directory for a net "
                                        "without any)");
  pd_error err = {0};
  pd_net *net = NULL;
  pd_scope *scope = NULL;
  int *targets = NULL, ntargets = 0;
  bool *active = NULL;
  uint8_t *data = NULL;
  size_t len = 0;
  pd_status st = pd_net_load(pos[0], NULL, &net, &err);
  if (!st && opts[FETCH].n_values) {
    ntargets = opts[FETCH].n_values;
    if (!(targets = calloc((size_t)ntargets, sizeof *targets))) st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
    for (int i = 0; i < ntargets && !st; i++)
      if ((targets[i] = pd_net_var(net, opts[FETCH].values[i])) < 0)
        st = pd_errorf(&err, PD_ERR_INPUT, "--fetch: the net has no variable \"%s\"", opts[FETCH].values[i]);
  } else if (!st) {
    st = pd_onnx_default_targets(net, &targets, &ntargets, &err);
  }
  if (!st && !(active = calloc((size_t)net->nops + 1, 1))) st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
  if (!st) pd_net_prune(net, targets, ntargets, active);
  if (!st && !(scope = pd_scope_new(NULL))) st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
  bool need = false; /* an empty directory serves a net with nothing to load */
  for (int v = 0; !st && v < net->nvars; v++)
    need |= net->vars[v].kind == PD_VAR_PARAM || net->vars[v].kind == PD_VAR_STATE;
  if (!st && (need || !pd_cli_empty_dir(opts[PARAMS].value)))
    st = pd_params_load(net, scope, opts[PARAMS].value, active, true, NULL, NULL, &err);
  if (!st) st = pd_check_creatable(out, &err);
  if (!st) st = pd_onnx_export(net, scope, targets, ntargets, &data, &len, &err);
  if (!st) st = pd_write_file_atomic(out, data, len, &err);
  if (!st) {
    printf("exported %s to %s (ONNX opset %d, %zu bytes); outputs:", pos[0], out, PD_ONNX_EXPORT_OPSET, len);
    for (int i = 0; i < ntargets; i++) printf(" %s", net->vars[targets[i]].name);
    printf("\n");
  }
  free(data), free(targets), free(active);
  if (scope) pd_scope_free(scope);
  if (net) pd_net_free(net);
  pd_cli_free(opts, NOPT);
  return st ? pd_cli_fail(&err) : 0;
}
