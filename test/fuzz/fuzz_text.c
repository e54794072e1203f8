/* fuzz_text.c — libFuzzer target for the text reader and the vocabulary
 * parser (io/textdata.h), in memory. The first 4 bytes pick the streams
 * (1-4), the window (1-8), held_out (0, 1/4, 1/2) and the part, and whether
 * a vocabulary comes first; the rest is split at 0xff bytes into the
 * vocabulary and up to 3 files. A corpus that opens must give rows whose
 * ids are in the vocabulary's range and whose keep is 0 or 1; one that does
 * not must say why, naming a file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/textdata.h"

static void check_error(const pd_error *err) {
  if (err->status != PD_ERR_INPUT) abort();
  if (strncmp(err->msg, "f", 1) != 0 && strncmp(err->msg, "vocab", 5) != 0 && strncmp(err->msg, "text data", 9) != 0)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  pd_text_opts o = {.streams = 1 + data[0] % 4,
                    .window = 1 + data[1] % 8,
                    .held_out = (data[2] % 3) * 0.25,
                    .eval_part = data[2] & 4};
  bool with_vocab = data[3] & 1;
  const uint8_t *p = data + 4, *end = data + size;
  const uint8_t *parts[4];
  size_t lens[4];
  int n = 0;
  while (n < 4) {
    const uint8_t *q = memchr(p, 0xff, (size_t)(end - p));
    if (!q) q = end;
    parts[n] = p, lens[n] = (size_t)(q - p), n++;
    if (q == end) break;
    p = q + 1;
  }
  const char *names[4] = {"f0", "f1", "f2", "f3"};
  int first = with_vocab ? 1 : 0;
  if (n - first < 1) return 0;
  pd_error err = {0};
  int16_t map[256];
  uint8_t bytes[256];
  int nv;
  if (with_vocab && pd_vocab_parse("vocab", parts[0], lens[0], map, bytes, &nv, &err) == PD_OK)
    for (int i = 0; i < nv; i++)
      if (map[bytes[i]] != i) abort();
  pd_text *t;
  if (pd_text_open_memory(names, parts + first, lens + first, n - first, "vocab", with_vocab ? parts[0] : NULL,
                          with_vocab ? lens[0] : 0, &o, &t, &err)) {
    check_error(&err);
    return 0;
  }
  int vn;
  const uint8_t *v = pd_text_vocab(t, &vn);
  int64_t limit = v ? vn : 256, rows = pd_text_rows(t);
  if (rows <= 0 || rows % o.streams) abort();
  int64_t ids[8];
  for (int64_t r = 0; r < rows; r += 1 + rows / 16)
    for (int role = PD_TEXT_INPUT; role <= PD_TEXT_TARGET; role++) {
      pd_text_row(t, role, r, ids);
      for (int64_t i = 0; i < o.window; i++)
        if (ids[i] < 0 || ids[i] >= limit) abort();
    }
  float keep;
  pd_text_row(t, PD_TEXT_KEEP, rows - 1, &keep);
  if (keep != 0 && keep != 1) abort();
  pd_text_row(t, PD_TEXT_KEEP, 0, &keep);
  if (keep != 0) abort();
  pd_text_close(t);
  return 0;
}
