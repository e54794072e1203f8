/* tfmt.c — the conformance harness's view of lib/textformat: parses FILE as
 * a text-format message of any type paddle-run knows (paddle.* plus the
 * test-only pdtest.* schema, registered here) and writes it to stdout as
 * protobuf binary or canonical text, so test/scripts/conformance.py can
 * compare it with `protoc --encode`.
 *
 *   tfmt --type FULL.NAME [--binary | --text] FILE     (FILE may be -)
 *
 * Exit 0 ok, 2 bad input (message on stderr, nothing on stdout), 1 I/O. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testall.pb-c.h"
#include "text/textformat.h"
#include "text/schema.h"

static const ProtobufCMessageDescriptor *const pdtest_types[] = {&pdtest__top__descriptor, &pdtest__all__descriptor,
                                                                 &pdtest__inner__descriptor, &pdtest__req__descriptor};

static int usage(const char *why) {
  fprintf(stderr, "tfmt: %s\nusage: tfmt --type FULL.NAME [--binary | --text] FILE\n", why);
  return 2;
}

static int read_all(const char *path, char **data, size_t *len) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  if (!f) return -1;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    char *nb = realloc(buf, cap *= 2);
    if (!nb) free(buf);
    buf = nb;
  }
  int bad = ferror(f);
  if (f != stdin) fclose(f);
  if (!buf || bad) {
    free(buf);
    return -1;
  }
  *data = buf;
  *len = n;
  return 0;
}

int main(int argc, char **argv) {
  const char *type = NULL, *file = NULL;
  int text = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--type") && i + 1 < argc)
      type = argv[++i];
    else if (!strcmp(argv[i], "--binary"))
      text = 0;
    else if (!strcmp(argv[i], "--text"))
      text = 1;
    else if (argv[i][0] == '-' && argv[i][1])
      return usage("unknown option");
    else if (!file)
      file = argv[i];
    else
      return usage("more than one FILE");
  }
  if (!type || !file) return usage("need --type and FILE");
  pd_schema_register(pdtest_types, sizeof pdtest_types / sizeof pdtest_types[0]);
  const ProtobufCMessageDescriptor *desc = pd_schema_find(type);
  if (!desc) return usage("unknown message type");

  char *data;
  size_t len;
  if (read_all(file, &data, &len)) {
    fprintf(stderr, "tfmt: cannot read %s\n", file);
    return 1;
  }
  pd_error err = {0};
  ProtobufCMessage *msg = NULL;
  pd_status st = pd_text_parse(desc, data, len, file, &msg, NULL, &err);
  free(data);
  if (st) {
    fprintf(stderr, "%s\n", err.msg);
    return pd_exit_code(st);
  }
  int rc = 0;
  if (text) {
    pd_buf b = {0};
    st = pd_text_print(msg, 0, &b, &err);
    if (st)
      fprintf(stderr, "%s\n", err.msg), rc = pd_exit_code(st);
    else if (b.len && fwrite(b.data, 1, b.len, stdout) != b.len)
      rc = 1;
    pd_buf_free(&b);
  } else {
    size_t n = protobuf_c_message_get_packed_size(msg);
    uint8_t *out = malloc(n ? n : 1);
    if (!out)
      rc = 1;
    else if (protobuf_c_message_pack(msg, out) != n || fwrite(out, 1, n, stdout) != n)
      rc = 1;
    free(out);
  }
  protobuf_c_message_free_unpacked(msg, NULL);
  if (fflush(stdout)) rc = 1;
  return rc;
}
