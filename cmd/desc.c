/* desc.c — `paddle-run desc`: the network as paddle-run builds it, printed
 * as a NetDesc: every op with all its attributes, every parameter declared
 * with its inferred shape, and with --backward / --optimizer the gradient
 * and update ops. The output loads and trains as it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backward.h"
#include "text/textformat.h"
#include "cli.h"
#include "core/netdesc_out.h"
#include "base/util.h"
#include "core/optimizer.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_desc = {"desc", "print the network, optionally with backward and optimizer ops",
                                "usage: paddle-run desc NET.pbtxt [--backward] [--optimizer NAME] [--ranks N]\n"
                                "\n"
                                "Prints the network as paddle-run builds it: attributes with their\n"
                                "defaults, parameters declared with their inferred shapes.\n"
                                "\n"
                                "  --backward         add the gradient ops for train.loss (x@GRAD is the\n"
                                "                     gradient of x)\n"
                                "  --optimizer NAME   also add the update ops: sgd, momentum or adam (the\n"
                                "                     file's optimizer settings, with this type)\n"
                                "  --ranks N          as trained by N MPI ranks: an allreduce op takes the\n"
                                "                     gradients to their mean over the ranks first\n"
                                "\n"
                                "The output is a NetDesc that `paddle-run train` loads and trains as it is,\n"
                                "with the same results as the original file.\n",
                                run};

/* The printed train section names the optimizer that was added. */
static void name_optimizer(Paddle__TrainDesc *td, const char *type) {
  if (!td->optimizer && (td->optimizer = malloc(sizeof *td->optimizer))) paddle__optimizer_desc__init(td->optimizer);
  char *t = strdup(type);
  if (!td->optimizer || !t) {
    free(t);
    return;
  }
  const ProtobufCFieldDescriptor *f =
      protobuf_c_message_descriptor_get_field_by_name(&paddle__optimizer_desc__descriptor, "type");
  if (td->optimizer->type != f->default_value) free(td->optimizer->type);
  td->optimizer->type = t;
}

static int run(int argc, char **argv) {
  pd_opt opts[] = {
      {.name = "--backward"}, {.name = "--optimizer", .has_value = true}, {.name = "--ranks", .has_value = true}};
  char *pos[1];
  int code = 0;
  int npos = pd_cli_parse(&pd_cmd_desc, argc, argv, opts, 3, pos, 1, &code);
  if (npos < 0) return code;
  long long ranks = 1;
  if (opts[2].value && !pd_cli_int("desc", "--ranks", opts[2].value, 1, PD_MAX_COUNT, &ranks)) return 2;
  if (opts[2].value && !opts[1].value) return pd_cli_usage_error("desc", "--ranks needs --optimizer NAME");
  if (npos != 1) return pd_cli_usage_error("desc", "expected NET.pbtxt; see `paddle-run desc --help`");
  pd_error err = {0};
  pd_net *net = NULL;
  pd_status st = pd_net_load(pos[0], NULL, &net, &err);
  bool backward = opts[0].value || opts[1].value;
  const Paddle__TrainDesc *td = st ? NULL : net->desc->train;
  if (!st && backward && (!td || !td->loss || !*td->loss))
    st = pd_errorf(&err, PD_ERR_INPUT, "%s: --backward needs train { loss: \"VAR\" } in the file", pos[0]);
  /* a block's gradient ops live in the block's own net, built by its op's
   * gradient when the net trains: the NetDesc has no place for them yet */
  if (!st && backward && net->nblocks)
    st = pd_errorf(&err, PD_ERR_INPUT,
                   "%s: --backward and --optimizer do not print nets whose ops run blocks (the gradient ops "
                   "inside a block are built when the net trains); `desc` without them prints it",
                   pos[0]);
  /* the file's optimizer settings, with the type asked for */
  Paddle__OptimizerDesc opt = PADDLE__OPTIMIZER_DESC__INIT;
  if (td && td->optimizer) opt = *td->optimizer;
  opt.type = (char *)opts[1].value;
  if (!st) net->ranks = (int)ranks;
  if (!st && backward) st = pd_net_make_trainable(net, td->loss, opts[1].value ? &opt : NULL, &err);
  if (st) {
    pd_net_free(net);
    return pd_cli_fail(&err);
  }
  Paddle__NetDesc *d = pd_net_to_desc(net);
  if (d && d->train && opts[1].value) name_optimizer(d->train, opts[1].value);
  pd_buf b = {0};
  if (!d || pd_text_print_opts(&d->base, 0, &(pd_print_opts){.compact = true}, &b, &err))
    code = d ? pd_cli_fail(&err) : 1;
  else if (fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout))
    code = 1;
  pd_buf_free(&b);
  if (d) protobuf_c_message_free_unpacked(&d->base, NULL);
  pd_net_free(net);
  return code;
}
