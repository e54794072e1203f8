/* fmt.c — `paddle-run fmt`: parse a file at the schema level only (no op
 * validation) and print canonical text, or convert to and from the protobuf
 * binary encoding. Output is written only after the whole input parsed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "text/textformat.h"
#include "base/util.h"
#include "text/schema.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_fmt = {"fmt", "print a text-format file canonically, or convert it to/from binary",
                               "usage: paddle-run fmt FILE [--type MESSAGE] [--binary | --from-binary]\n"
                               "\n"
                               "Parses FILE as protobuf text format at the schema level only (no op checks)\n"
                               "and prints it canonically: fields in field-number order, two-space indent.\n"
                               "\n"
                               "  --type MESSAGE   the message type (default paddle.NetDesc)\n"
                               "  --binary         write the protobuf binary encoding to stdout\n"
                               "  --from-binary    read FILE as binary and print it as text\n"
                               "\n"
                               "FILE may be - for standard input. Exit 0 on success, 2 on a bad file.\n",
                               run};

static int run(int argc, char **argv) {
  pd_opt opts[] = {{.name = "--type", .has_value = true}, {.name = "--binary"}, {.name = "--from-binary"}};
  char *pos[1];
  int code = 0;
  int npos = pd_cli_parse(&pd_cmd_fmt, argc, argv, opts, 3, pos, 1, &code);
  if (npos < 0) return code;
  if (npos != 1) return pd_cli_usage_error("fmt", "expected one FILE; see `paddle-run fmt --help`");
  const char *type = opts[0].value ? opts[0].value : "paddle.NetDesc";
  bool to_bin = opts[1].value, from_bin = opts[2].value;
  if (to_bin && from_bin) return pd_cli_usage_error("fmt", "--binary and --from-binary exclude each other");
  const ProtobufCMessageDescriptor *desc = pd_schema_find(type);
  if (!desc)
    return pd_cli_usage_error("fmt", "unknown message type \"%s\" (e.g. paddle.NetDesc, paddle.OpProto)", type);
  pd_error err = {0};
  char *data = NULL;
  size_t len = 0;
  if (pd_read_file(pos[0], from_bin ? (size_t)2 << 30 : PD_NETDESC_MAX, &data, &len, &err)) return pd_cli_fail(&err);
  ProtobufCMessage *msg = NULL;
  if (from_bin) {
    if (pd_pb_check_depth(desc, (const uint8_t *)data, len, pos[0], &err)) {
      free(data);
      return pd_cli_fail(&err);
    }
    msg = protobuf_c_message_unpack(desc, NULL, len, (const uint8_t *)data);
    if (!msg) {
      free(data);
      fprintf(stderr, "paddle-run: %s: not a valid binary %s\n", pos[0], type);
      return 2;
    }
  } else if (pd_text_parse(desc, data, len, pos[0], &msg, NULL, &err)) {
    free(data);
    return pd_cli_fail(&err);
  }
  free(data);
  int rc = 0;
  if (to_bin) {
    size_t n = protobuf_c_message_get_packed_size(msg);
    uint8_t *out = malloc(n ? n : 1);
    if (!out)
      rc = pd_cli_fail(&(pd_error){PD_ERR_RUNTIME, "out of memory", -1});
    else {
      protobuf_c_message_pack(msg, out);
      if (fwrite(out, 1, n, stdout) != n || fflush(stdout)) rc = 1;
      free(out);
    }
  } else {
    pd_buf b = {0};
    if (pd_text_print(msg, 0, &b, &err))
      rc = pd_cli_fail(&err);
    else if ((b.len && fwrite(b.data, 1, b.len, stdout) != b.len) || fflush(stdout))
      rc = 1;
    pd_buf_free(&b);
  }
  protobuf_c_message_free_unpacked(msg, NULL);
  return rc;
}
