/* import.c — `paddle-run import`: an ONNX model as a NetDesc plus a
 * parameter directory that infer and train use as they are. Everything is
 * converted in memory first; the outputs are written only when all of it
 * succeeded (the parameters renamed into place, the net written atomically). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "io/npy.h"
#include "cli.h"
#include "base/fileutil.h"
#include "onnx/onnx_import.h"
#include "base/util.h"

static int run(int argc, char **argv);
enum { OUT, OUT_SHORT, PARAMS, CONSTANT, NOPT };
static int import(int argc, char **argv, pd_opt *opts);

const pd_command pd_cmd_import = {
    "import", "convert an ONNX model into a NetDesc and a parameter directory",
    "usage: paddle-run import MODEL.onnx -o NET.pbtxt [--params-out DIR] [--constant NAME=FILE.npy]...\n"
    "\n"
    "Maps every node of the model (ONNX opsets up to 17) onto paddle-run's ops\n"
    "and writes the network as a NetDesc: the graph's inputs become data\n"
    "variables, its initializers parameters (float) or state, Constant values\n"
    "state. Shape arithmetic (Shape, Gather, Unsqueeze, Concat, ... feeding a\n"
    "Reshape) is computed at import. The exported (fixed) batch of the inputs\n"
    "becomes -1 unless a node needs its value; the output says which. Nodes\n"
    "that have no mapping are an error listing each op type with its count and\n"
    "first node (docs/onnx.md lists what is supported).\n"
    "\n"
    "  -o, --output NET.pbtxt   the NetDesc to write\n"
    "  --params-out DIR         the parameter directory (NAME.npy per value) to\n"
    "                           create; needed when the model has initializers.\n"
    "                           Use it with `infer --params DIR` or `train --params DIR`\n"
    "  --constant NAME=FILE.npy graph input NAME takes this value, fixed at import\n"
    "                           (repeatable): for an input a node needs as a\n"
    "                           constant, such as a Reshape's shape or a Clip's\n"
    "                           bounds given as graph inputs\n",
    run};

static int run(int argc, char **argv) {
  pd_opt opts[NOPT] = {{.name = "--output", .has_value = true},
                       {.name = "-o", .has_value = true},
                       {.name = "--params-out", .has_value = true},
                       {.name = "--constant", .has_value = true, .repeat = true}};
  int rc = import(argc, argv, opts);
  pd_cli_free(opts, NOPT); /* --constant's values */
  return rc;
}

static int import(int argc, char **argv, pd_opt *opts) {
  char *pos[1];
  int code = 0;
  int npos = pd_cli_parse(&pd_cmd_import, argc, argv, opts, NOPT, pos, 1, &code);
  if (npos < 0) return code;
  if (npos != 1) return pd_cli_usage_error("import", "expected MODEL.onnx; see `paddle-run import --help`");
  const char *out = opts[OUT].value ? opts[OUT].value : opts[OUT_SHORT].value;
  if (!out) return pd_cli_usage_error("import", "give the NetDesc to write with -o NET.pbtxt");
  for (int i = 0; i < opts[CONSTANT].n_values; i++) {
    const char *eq = strchr(opts[CONSTANT].values[i], '=');
    if (!eq || eq == opts[CONSTANT].values[i] || !eq[1])
      return pd_cli_usage_error("import", "--constant %s: expected NAME=FILE.npy", opts[CONSTANT].values[i]);
  }
  if (!pd_cli_unique_vars("import", &opts[CONSTANT])) return 2;
  pd_error err = {0};
  Onnx__ModelProto *m = NULL;
  pd_onnx_import im = {0};
  pd_status st = pd_onnx_read(pos[0], &m, &err);
  for (int i = 0; i < opts[CONSTANT].n_values && !st; i++) {
    const char *arg = opts[CONSTANT].values[i], *eq = strchr(arg, '=');
    char *name = strndup(arg, (size_t)(eq - arg));
    pd_tensor t;
    pd_tensor_init(&t, PD_F32);
    if (!name) st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
    if (!st) st = pd_npy_read(eq + 1, &t, &err);
    if (!st) st = pd_onnx_set_input(m, name, &t, &err);
    pd_tensor_release(&t);
    free(name);
  }
  if (!st) st = pd_onnx_import_model(m, pos[0], &im, &err);
  if (!st && im.nvalues && !opts[PARAMS].value)
    st = pd_errorf(&err, PD_ERR_INPUT, "%s: the model has %d initializers and constants: give --params-out DIR", pos[0],
                   im.nvalues);
  if (!st) st = pd_check_creatable(out, &err);
  bool saved = false;
  if (!st && opts[PARAMS].value && !(st = pd_onnx_save_values(&im, opts[PARAMS].value, &err))) saved = true;
  if (!st) st = pd_write_file_atomic(out, im.text, im.len, &err);
  if (st && saved) { /* the net could not be written: take the parameters back */
    char cmd_path[4096];
    for (int i = 0; i < im.nvalues; i++) {
      char *f = pd_checkpoint_file_name(im.values[i].name);
      if (f && snprintf(cmd_path, sizeof cmd_path, "%s/%s", opts[PARAMS].value, f) < (int)sizeof cmd_path)
        remove(cmd_path);
      free(f);
    }
    remove(opts[PARAMS].value);
  }
  if (!st) {
    printf("imported %s (ONNX opset %lld): %d values%s%s\n", pos[0], (long long)im.opset, im.nvalues,
           saved ? " in " : "", saved ? opts[PARAMS].value : "");
    printf("inputs:");
    for (int i = 0; i < im.ninputs; i++) printf(" %s", im.inputs[i]);
    printf("\noutputs:");
    for (int i = 0; i < im.noutputs; i++) printf(" %s", im.outputs[i]);
    printf("\n");
    if (im.batch_relaxed)
      printf("batch: the exported batch %lld is -1 (any batch size: no node needs its value)\n",
             (long long)im.batch_from);
    else if (im.batch_from)
      printf("batch: kept at %lld as exported, since the net needs it: %s\n", (long long)im.batch_from,
             im.batch_kept ? im.batch_kept : "");
    if (im.nweights) {
      printf("weights given as graph inputs (put NAME.npy for each in the parameter directory):");
      for (int i = 0; i < im.nweights; i++) printf(" %s", im.weights[i]);
      printf("\n");
    }
  }
  pd_onnx_import_free(&im);
  if (m) protobuf_c_message_free_unpacked(&m->base, NULL);
  return st ? pd_cli_fail(&err) : 0;
}
