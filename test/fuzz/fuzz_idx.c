/* fuzz_idx.c — libFuzzer target for the IDX reader, in memory. The first
 * byte picks how the rest is fed: as is, gzip-wrapped, or gzip in two
 * members, so the inflate path sees valid streams whose headers lie. A file
 * that parses must give exactly its header's element count; one that does
 * not must say why, naming the file; the data set reader gathers from it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/dataset.h"
#include "base/fileutil.h"
#include "io/idx.h"

static uint8_t *gzip_members(const uint8_t *src, size_t len, size_t split, size_t *out_len) {
  size_t cap = 2 * (len + 64) + 128, used = 0;
  uint8_t *out = malloc(cap);
  size_t parts[2][2] = {{0, split}, {split, len - split}};
  for (int m = 0; m < 2; m++) {
    if (m == 1 && split >= len) break;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    zs.next_in = (Bytef *)(src + parts[m][0]);
    zs.avail_in = (uInt)parts[m][1];
    zs.next_out = out + used;
    zs.avail_out = (uInt)(cap - used);
    if (deflate(&zs, Z_FINISH) != Z_STREAM_END) abort();
    used = cap - zs.avail_out;
    deflateEnd(&zs);
  }
  *out_len = used;
  return out;
}

static void check_error(const pd_error *err) {
  if (err->status != PD_ERR_INPUT || strncmp(err->msg, "fuzz.idx: ", 10) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int mode = data[0] % 3;
  const uint8_t *buf = data + 1;
  size_t len = size - 1;
  uint8_t *z = NULL;
  if (mode) {
    z = gzip_members(buf, len, mode == 2 && len ? (size_t)buf[0] % len : len, &len);
    buf = z;
  }
  pd_error err = {0};
  pd_idx_header h;
  if (pd_idx_parse_header("fuzz.idx", buf, len, &h, &err)) check_error(&err);
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  if (pd_idx_parse("fuzz.idx", buf, len, &t, &err) == PD_OK) {
    /* The plain bytes (what we gzip-wrapped, or what came as is unless the
     * fuzzer wrote gzip itself) hold a header that agrees with the tensor. */
    if (mode || !pd_is_gzip(buf, len)) {
      if (pd_idx_parse_header("fuzz.idx", data + 1, size - 1, &h, &err)) abort();
      if (t.dtype != h.dtype || !pd_dims_equal(t.ndim, t.dims, h.ndim, h.dims)) abort();
      if ((uint64_t)pd_tensor_numel(&t) * h.elem_size != h.data_bytes) abort();
    }
  } else {
    check_error(&err);
  }
  pd_dataset *ds;
  if (pd_dataset_open_memory("fuzz.idx", buf, len, &ds, &err) == PD_OK) {
    int64_t n = pd_dataset_rows(ds), rows[3] = {n - 1, 0, n / 2};
    for (int want = 0; want < PD_NUM_DTYPES; want++)
      if (pd_dataset_read(ds, rows, 3, (pd_dtype)want, &t, &err)) check_error(&err);
    pd_dataset_close(ds);
  } else {
    check_error(&err);
  }
  pd_tensor_release(&t);
  free(z);
  return 0;
}
