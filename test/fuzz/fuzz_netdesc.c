/* fuzz_netdesc.c — libFuzzer target for everything a NetDesc file reaches
 * before any tensor is allocated: parsing, op validation against the
 * OpProtos, shape inference (pd_net_from_text); then, for a net that builds,
 * what `desc --backward --optimizer` does (kernel selection on the CPU, the
 * backward ops for train.loss, the optimizer ops) and the expanded net back
 * as text. A refusal must say why, naming the file; the printed text must
 * load again (`desc` promises its output is a net paddle-run loads as is).
 * (Whether a message carries the file and position is the bad-input
 * catalogue's job, test/bad/: not every refusal here names the file yet.)
 * Inputs of odd length build in float64, as `gradcheck` does.
 *   make build-fuzz/fuzz_netdesc
 *   build-fuzz/fuzz_netdesc -dict=test/fuzz/fuzz_netdesc.dict build-fuzz/corpus/fuzz_netdesc \
 *       test/fuzz/corpus/fuzz_netdesc */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backward.h"
#include "core/net.h"
#include "core/netdesc_out.h"
#include "text/textformat.h"
#include "core/optimizer.h"

static void die(const char *what, const pd_error *err, const pd_buf *text) {
  fprintf(stderr, "fuzz_netdesc: %s\n%s\n", what, err ? err->msg : "");
  if (text && text->data) fprintf(stderr, "--- printed text:\n%.*s\n", (int)text->len, text->data);
  abort();
}

/* Every refusal is an input error (or, rarely, out of memory) with a message. */
static void check_refusal(const pd_error *err) {
  if (err->status != PD_ERR_INPUT && err->status != PD_ERR_RUNTIME) die("refused with no status", err, NULL);
  if (!err->msg[0]) die("refused with no message", err, NULL);
}

/* What `desc --backward --optimizer` does after loading; PD_OK or a refusal. */
static pd_status expand(pd_net *net, pd_error *err) {
  pd_status st = pd_net_select_kernels(net, PD_CPU, err);
  const Paddle__TrainDesc *td = net->desc->train;
  if (st || !td || !td->loss || !*td->loss) return st;
  if ((st = pd_net_find_training(net, td->loss, err))) return st;
  if (net->loss < 0 && (st = pd_net_add_backward(net, td->loss, err))) return st;
  if (!net->n_optimizer) {
    Paddle__OptimizerDesc opt = PADDLE__OPTIMIZER_DESC__INIT;
    if (td->optimizer) opt = *td->optimizer;
    if ((st = pd_net_add_optimizer(net, &opt, err))) return st;
  }
  return pd_net_select_kernels(net, PD_CPU, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pd_net_opts opts = {.float_dtype = size % 2 ? PD_F64 : PD_F32};
  pd_error err = {0};
  pd_net *net = NULL;
  if (pd_net_from_text("fuzz.pbtxt", (const char *)data, size, &opts, &net, &err) != PD_OK) {
    if (net) die("a refused net was handed out", &err, NULL);
    check_refusal(&err);
    return 0;
  }
  if (expand(net, &err) != PD_OK) {
    check_refusal(&err);
    pd_net_free(net);
    return 0;
  }

  Paddle__NetDesc *d = pd_net_to_desc(net);
  if (!d) die("pd_net_to_desc failed", NULL, NULL);
  pd_buf text = {0};
  if (pd_text_print(&d->base, 0, &text, &err) != PD_OK) die("printing the expanded net failed", &err, NULL);

  /* The expanded net loads again, and expands to nothing new. */
  pd_net *again = NULL;
  if (pd_net_from_text("printed.pbtxt", text.data ? text.data : "", text.len, &opts, &again, &err) != PD_OK ||
      expand(again, &err) != PD_OK)
    die("the printed net does not load again", &err, &text);
  if (again->nops != net->nops) die("the printed net loads with a different number of ops", NULL, &text);

  pd_net_free(again);
  pd_buf_free(&text);
  protobuf_c_message_free_unpacked(&d->base, NULL);
  pd_net_free(net);
  return 0;
}
