/* fuzz_onnx.c — libFuzzer target for the whole of `paddle-run import`
 * below the command line: the bytes are written to a file and read back as
 * an onnx.ModelProto by pd_onnx_read (the nesting-depth scan, then
 * protobuf-c's unpack); a model that decodes goes through the importer,
 * which either refuses it with a message naming the file (or runs out of
 * nothing: inputs this small never exhaust memory) or gives a NetDesc that
 * must build again (pd_net_from_text) and select CPU kernels, and whose
 * values are written as a parameter directory (pd_onnx_save_values), which
 * is then removed.
 *   make build-fuzz/fuzz_onnx
 *   build-fuzz/fuzz_onnx -max_len=1048576 build-fuzz/corpus/fuzz_onnx test/fuzz/corpus/fuzz_onnx \
 *       build-fuzz/seeds/fuzz_onnx */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/checkpoint.h"
#include "core/net.h"
#include "onnx/onnx_import.h"

static char dir[64], model[96], params[96];

static void remove_params(const pd_onnx_import *im) {
  char p[4200];
  for (int i = 0; i < im->nvalues; i++) {
    char *f = pd_checkpoint_file_name(im->values[i].name);
    if (f && snprintf(p, sizeof p, "%s/%s", params, f) < (int)sizeof p) unlink(p);
    free(f);
  }
  rmdir(params);
}

static void cleanup(void) {
  unlink(model);
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%.40s/fuzz_onnx-XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    if (!mkdtemp(dir)) abort();
    snprintf(model, sizeof model, "%s/fuzz.onnx", dir);
    snprintf(params, sizeof params, "%s/params", dir);
    atexit(cleanup);
  }
  FILE *f = fopen(model, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) abort();
  Onnx__ModelProto *m = NULL;
  pd_error err = {0};
  pd_status st = pd_onnx_read(model, &m, &err);
  if (st) {
    if (st != PD_ERR_INPUT || strncmp(err.msg, model, strlen(model)) != 0) abort();
    return 0;
  }
  pd_onnx_import im;
  st = pd_onnx_import_model(m, model, &im, &err);
  if (st) {
    if (st != PD_ERR_INPUT || strncmp(err.msg, model, strlen(model)) != 0) abort();
  } else {
    pd_net *net = NULL;
    pd_error e2 = {0};
    if (pd_net_from_text("fuzz.pbtxt", im.text, im.len, NULL, &net, &e2)) abort();
    if (pd_net_select_kernels(net, PD_CPU, &e2)) abort();
    pd_net_free(net);
    /* a value whose name makes no file name is refused, the rest written */
    st = pd_onnx_save_values(&im, params, &e2);
    if (st && st != PD_ERR_INPUT) abort();
    if (!st) remove_params(&im);
  }
  pd_onnx_import_free(&im);
  protobuf_c_message_free_unpacked(&m->base, NULL);
  return 0;
}
