/* fuzz_textformat.c — libFuzzer target for the text-format parser and
 * printer: any input parsed as paddle.NetDesc either fails with a message
 * (and hands out nothing) or succeeds, and then its canonical text must
 * parse again to the very same message (equal packed bytes) and print to the
 * very same text. Source positions are looked up for every recorded entry. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paddle.pb-c.h"
#include "text/textformat.h"

static uint8_t *pack(const ProtobufCMessage *m, size_t *n) {
  *n = protobuf_c_message_get_packed_size(m);
  uint8_t *b = malloc(*n + 1);
  if (!b || protobuf_c_message_pack(m, b) != *n) abort();
  return b;
}

static void die(const char *what, const pd_buf *text, const pd_error *err) {
  fprintf(stderr, "fuzz_textformat: %s\n%s\n--- printed text:\n%s\n", what, err ? err->msg : "",
          text && text->data ? text->data : "");
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const ProtobufCMessageDescriptor *desc = &paddle__net_desc__descriptor;
  pd_error err = {0};
  pd_srcmap map = {0};
  ProtobufCMessage *m = NULL;
  if (pd_text_parse(desc, (const char *)data, size, "fuzz", &m, &map, &err) != PD_OK) {
    if (m || map.n || map.pos || !err.msg[0]) die("error path handed something out or said nothing", NULL, &err);
    return 0;
  }
  for (size_t i = 0; i < map.n; i++) {
    int line = 0, col = 0;
    const pd_srcpos *p = &map.pos[i];
    if (!pd_srcmap_find(&map, p->msg, p->field, p->index, &line, &col) || line < 1 || col < 1)
      die("srcmap entry not found again", NULL, NULL);
  }

  pd_buf text = {0};
  if (pd_text_print(m, 0, &text, &err) != PD_OK) die("print failed", NULL, &err);
  ProtobufCMessage *again = NULL;
  if (pd_text_parse(desc, text.data ? text.data : "", text.len, "printed", &again, NULL, &err) != PD_OK)
    die("printed text does not parse", &text, &err);

  size_t n1, n2;
  uint8_t *b1 = pack(m, &n1), *b2 = pack(again, &n2);
  if (n1 != n2 || memcmp(b1, b2, n1)) die("re-parsed message differs", &text, NULL);

  pd_buf text2 = {0};
  if (pd_text_print(again, 0, &text2, &err) != PD_OK) die("second print failed", NULL, &err);
  if (text.len != text2.len || (text.len && memcmp(text.data, text2.data, text.len)))
    die("printing is not a fixpoint", &text, NULL);

  free(b1);
  free(b2);
  pd_buf_free(&text);
  pd_buf_free(&text2);
  protobuf_c_message_free_unpacked(m, NULL);
  protobuf_c_message_free_unpacked(again, NULL);
  pd_srcmap_free(&map);
  return 0;
}
