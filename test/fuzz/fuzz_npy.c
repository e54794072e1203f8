/* fuzz_npy.c — libFuzzer target for the .npy reader, in memory. The first
 * byte picks how the rest is fed: as is, gzip-wrapped (so the fuzzer reaches
 * the inflate path with valid streams), or gzip in two members. A file that
 * parses must round trip through our writer's header; one that does not must
 * say why, naming the file; the data set reader gathers rows from it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/dataset.h"
#include "io/npy.h"

/* gzip-compresses src into a new buffer, as 1 or 2 members. */
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
  /* Every refusal names the file; inputs this small never run out of memory. */
  if (err->status != PD_ERR_INPUT || strncmp(err->msg, "fuzz.npy: ", 10) != 0) abort();
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
  pd_npy_header h;
  pd_status hs = pd_npy_parse_header("fuzz.npy", buf, len, &h, &err);
  if (hs) check_error(&err);
  pd_tensor t, u;
  pd_tensor_init(&t, PD_F32);
  pd_tensor_init(&u, PD_F32);
  if (pd_npy_parse("fuzz.npy", buf, len, &t, &err) == PD_OK) {
    /* Our writer's bytes for the same array must parse to the same array. */
    char hdr[512];
    size_t hl, bytes = pd_tensor_bytes(&t);
    if (pd_npy_encode_header(t.dtype, t.ndim, t.dims, hdr, sizeof hdr, &hl, &err)) abort();
    if (hl % 64) abort();
    uint8_t *img = malloc(hl + bytes);
    memcpy(img, hdr, hl);
    if (bytes) memcpy(img + hl, pd_tensor_data(&t), bytes);
    if (pd_npy_parse("fuzz.npy", img, hl + bytes, &u, &err)) abort();
    if (u.dtype != t.dtype || !pd_dims_equal(u.ndim, u.dims, t.ndim, t.dims)) abort();
    if (bytes && memcmp(pd_tensor_data(&u), pd_tensor_data(&t), bytes)) abort();
    free(img);
  } else {
    check_error(&err);
  }
  pd_dataset *ds;
  if (pd_dataset_open_memory("fuzz.npy", buf, len, &ds, &err) == PD_OK) {
    int64_t n = pd_dataset_rows(ds), rows[3] = {n - 1, 0, n / 2};
    for (int want = 0; want < PD_NUM_DTYPES; want++)
      if (pd_dataset_read(ds, rows, 3, (pd_dtype)want, &u, &err)) check_error(&err);
    pd_dataset_close(ds);
  } else {
    check_error(&err);
  }
  pd_tensor_release(&t);
  pd_tensor_release(&u);
  free(z);
  return 0;
}
