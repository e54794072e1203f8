/* fuzz_onnx.c — libFuzzer target for ONNX import, in memory: the bytes as
 * an onnx.ModelProto; one that decodes goes through the importer, which
 * either refuses it with a message naming the file (or runs out of nothing:
 * inputs this small never exhaust memory) or gives a NetDesc that must build
 * again (pd_net_from_text) and select CPU kernels. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"
#include "onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pd_error e0 = {0};
  if (pd_pb_check_depth(&onnx__model_proto__descriptor, data, size, "fuzz.onnx", &e0)) return 0;
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, data);
  if (!m) return 0;
  if (!m->graph) {
    protobuf_c_message_free_unpacked(&m->base, NULL);
    return 0;
  }
  pd_onnx_import im;
  pd_error err = {0};
  pd_status st = pd_onnx_import_model(m, "fuzz.onnx", &im, &err);
  if (st) {
    if (st != PD_ERR_INPUT || strncmp(err.msg, "fuzz.onnx", 9) != 0) abort();
  } else {
    pd_net *net = NULL;
    pd_error e2 = {0};
    if (pd_net_from_text("fuzz.pbtxt", im.text, im.len, NULL, &net, &e2)) abort();
    if (pd_net_select_kernels(net, PD_CPU, &e2)) abort();
    pd_net_free(net);
  }
  pd_onnx_import_free(&im);
  protobuf_c_message_free_unpacked(&m->base, NULL);
  return 0;
}
