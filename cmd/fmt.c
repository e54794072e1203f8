/* fmt.c — `paddle-run fmt`: parse a file at the schema level only (no op
 * validation) and print canonical text with its comments, or convert to and
 * from the protobuf binary encoding; -i rewrites the file in place. Output
 * is written only after the whole input parsed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "text/textformat.h"
#include "base/util.h"
#include "text/schema.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_fmt = {"fmt", "print a text-format file canonically, or convert it to/from binary",
                               "usage: paddle-run fmt FILE [-i] [--type MESSAGE] [--binary | --from-binary]\n"
                               "\n"
                               "Parses FILE as protobuf text format at the schema level only (no op checks)\n"
                               "and prints it canonically: fields in field-number order, two-space indent,\n"
                               "short lists on one line (`shape: [-1, 784]`), every comment kept beside the\n"
                               "field it precedes or follows. Binary input prints as protoc --decode does.\n"
                               "\n"
                               "  -i               rewrite FILE in place (atomically: a bad FILE is left as\n"
                               "                   it is)\n"
                               "  --type MESSAGE   the message type (default paddle.NetDesc)\n"
                               "  --binary         write the protobuf binary encoding to stdout\n"
                               "  --from-binary    read FILE as binary and print it as text\n"
                               "\n"
                               "FILE may be - for standard input. Exit 0 on success, 2 on a bad file.\n",
                               run};

/* Replaces `path` by `data`: a temporary file beside it (with its mode)
 * renamed over it, so a reader sees the old file or the new one, never a
 * part. */
static int write_in_place(const char *path, const char *data, size_t len) {
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fprintf(stderr, "paddle-run: %s: -i needs a regular file\n", path);
    return 2;
  }
  char *tmp = malloc(strlen(path) + sizeof ".fmt.XXXXXX");
  if (!tmp) return pd_cli_fail(&(pd_error){PD_ERR_RUNTIME, "out of memory", -1});
  sprintf(tmp, "%s.fmt.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    fprintf(stderr, "paddle-run: %s: cannot write a temporary file beside it: %s\n", path, strerror(errno));
    free(tmp);
    return 1;
  }
  bool ok = fchmod(fd, sb.st_mode & 07777) == 0;
  for (size_t at = 0; ok && at < len;) {
    ssize_t w = write(fd, data + at, len - at);
    if (w < 0 && errno == EINTR) continue;
    ok = w > 0;
    at += ok ? (size_t)w : 0;
  }
  ok = ok && fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  ok = ok && rename(tmp, path) == 0;
  if (!ok) {
    fprintf(stderr, "paddle-run: %s: cannot rewrite it: %s\n", path, strerror(errno));
    unlink(tmp);
  }
  free(tmp);
  return ok ? 0 : 1;
}

static int run(int argc, char **argv) {
  pd_opt opts[] = {
      {.name = "--type", .has_value = true}, {.name = "--binary"}, {.name = "--from-binary"}, {.name = "-i"}};
  char *pos[1];
  int code = 0;
  int npos = pd_cli_parse(&pd_cmd_fmt, argc, argv, opts, 4, pos, 1, &code);
  if (npos < 0) return code;
  if (npos != 1) return pd_cli_usage_error("fmt", "expected one FILE; see `paddle-run fmt --help`");
  const char *type = opts[0].value ? opts[0].value : "paddle.NetDesc";
  bool to_bin = opts[1].value, from_bin = opts[2].value;
  bool in_place = opts[3].value;
  if (to_bin && from_bin) return pd_cli_usage_error("fmt", "--binary and --from-binary exclude each other");
  if (in_place && (to_bin || from_bin)) return pd_cli_usage_error("fmt", "-i rewrites a text file: no --binary");
  if (in_place && !strcmp(pos[0], "-")) return pd_cli_usage_error("fmt", "-i needs a FILE, not standard input");
  const ProtobufCMessageDescriptor *desc = pd_schema_find(type);
  if (!desc)
    return pd_cli_usage_error("fmt", "unknown message type \"%s\" (e.g. paddle.NetDesc, paddle.OpProto)", type);
  pd_error err = {0};
  char *data = NULL;
  size_t len = 0;
  if (pd_read_file(pos[0], from_bin ? (size_t)2 << 30 : PD_NETDESC_MAX, &data, &len, &err)) return pd_cli_fail(&err);
  ProtobufCMessage *msg = NULL;
  pd_srcmap map = {0};
  pd_comments comments = {0};
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
  } else if (pd_text_parse(desc, data, len, pos[0], &msg, &map, &err) ||
             pd_text_comments(data, len, msg, &map, &comments, &err)) {
    if (msg) protobuf_c_message_free_unpacked(msg, NULL);
    pd_srcmap_free(&map);
    free(data);
    return pd_cli_fail(&err);
  }
  pd_srcmap_free(&map);
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
    /* binary input prints exactly as protoc --decode does (docs/onnx.md) */
    pd_print_opts po = {.compact = !from_bin, .compact_strings = !from_bin, .comments = &comments};
    if (pd_text_print_opts(msg, 0, &po, &b, &err))
      rc = pd_cli_fail(&err);
    else if (in_place)
      rc = write_in_place(pos[0], b.data ? b.data : "", b.len);
    else if ((b.len && fwrite(b.data, 1, b.len, stdout) != b.len) || fflush(stdout))
      rc = 1;
    pd_buf_free(&b);
  }
  pd_comments_free(&comments);
  protobuf_c_message_free_unpacked(msg, NULL);
  return rc;
}
