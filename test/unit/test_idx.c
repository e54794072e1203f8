/* test_idx.c — the IDX reader: each element type (ubyte, sbyte, short, int,
 * float, double; big-endian) read plain and gzip-compressed (written here
 * with zlib's gzwrite) gives the expected dtype and values; gzip is found by
 * its magic, not the name; every malformed or lying file is refused with a
 * message naming the file, before anything is allocated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/fileutil.h"
#include "io/idx.h"

static char tmpdir[64];

static int make_tmpdir(void **state) {
  (void)state;
  strcpy(tmpdir, "/tmp/pd-test-idx-XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

static const char *tpath(const char *name) {
  static char bufs[4][256];
  static int k;
  char *b = bufs[k++ % 4];
  snprintf(b, 256, "%s/%s", tmpdir, name);
  return b;
}

static void write_bytes(const char *path, const void *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

static void gzip_file(const char *path, const void *buf, size_t len) {
  gzFile z = gzopen(path, "wb");
  assert_non_null(z);
  assert_int_equal(gzwrite(z, buf, (unsigned)len), (int)len);
  assert_int_equal(gzclose(z), Z_OK);
}

static void *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *buf = malloc((size_t)n + 1);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static size_t elem_size(int type) {
  switch (type) {
  case 0x0B:
    return 2;
  case 0x0C:
  case 0x0D:
    return 4;
  case 0x0E:
    return 8;
  default:
    return 1;
  }
}

/* An IDX image of `type` with the given dims and values (stored big-endian). */
static uint8_t *make_idx(int type, int ndim, const uint32_t *dims, const double *vals, size_t n, size_t *len) {
  size_t es = elem_size(type), hl = 4 + 4 * (size_t)ndim;
  uint8_t *b = calloc(1, hl + n * es + 1);
  b[2] = (uint8_t)type;
  b[3] = (uint8_t)ndim;
  for (int i = 0; i < ndim; i++)
    for (int k = 0; k < 4; k++) b[4 + 4 * i + k] = (uint8_t)(dims[i] >> (24 - 8 * k));
  for (size_t i = 0; i < n; i++) {
    uint64_t u = 0;
    switch (type) {
    case 0x08:
      u = (uint8_t)vals[i];
      break;
    case 0x09:
      u = (uint8_t)(int8_t)vals[i];
      break;
    case 0x0B:
      u = (uint16_t)(int16_t)vals[i];
      break;
    case 0x0C:
      u = (uint32_t)(int32_t)vals[i];
      break;
    case 0x0D: {
      float f = (float)vals[i];
      uint32_t w;
      memcpy(&w, &f, 4);
      u = w;
    } break;
    case 0x0E:
      memcpy(&u, &vals[i], 8);
      break;
    }
    for (size_t k = 0; k < es; k++) b[hl + i * es + k] = (uint8_t)(u >> (8 * (es - 1 - k)));
  }
  *len = hl + n * es;
  return b;
}

static void expect_error(pd_status st, const pd_error *err, const char *name, const char *want) {
  if (st != PD_ERR_INPUT || !strstr(err->msg, want) || strncmp(err->msg, name, strlen(name)) != 0)
    fail_msg("expected PD_ERR_INPUT with \"%s\" (starting with %s), got status %d: %s", want, name, st, err->msg);
}

static void refuse_bytes(const void *b, size_t len, const char *want) {
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  expect_error(pd_idx_parse("x.idx", b, len, &t, &err), &err, "x.idx: ", want);
  assert_null(t.storage);
}

/* Each element type: (type, dtype it becomes, values that exercise its range). */
static void test_every_element_type_plain_and_gzip(void **state) {
  (void)state;
  static const struct {
    int type;
    pd_dtype dtype;
    double vals[6];
  } cases[] = {
      {0x08, PD_U8, {0, 1, 127, 128, 254, 255}},
      {0x09, PD_I32, {-128, -1, 0, 1, 100, 127}},
      {0x0B, PD_I32, {-32768, -300, -1, 0, 258, 32767}},
      {0x0C, PD_I32, {-2147483648.0, -65536, -1, 0, 16777217, 2147483647}},
      {0x0D, PD_F32, {-1.5, 0, 0.25, 3.0e38, -1e-38, 1234.5}},
      {0x0E, PD_F64, {-1.5, 0, 0.1, 1e300, -4.9e-324, 3.141592653589793}},
  };
  uint32_t dims[3] = {1, 2, 3};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
    for (int gz = 0; gz <= 1; gz++) {
      size_t len;
      uint8_t *b = make_idx(cases[c].type, 3, dims, cases[c].vals, 6, &len);
      const char *path = tpath(gz ? "t.idx.gz" : "t.idx");
      if (gz)
        gzip_file(path, b, len);
      else
        write_bytes(path, b, len);
      pd_tensor t;
      pd_tensor_init(&t, PD_U8);
      pd_error err = {0};
      if (pd_idx_read(path, &t, &err)) fail_msg("type 0x%02x: %s", cases[c].type, err.msg);
      assert_int_equal(t.dtype, cases[c].dtype);
      assert_true(pd_dims_equal(t.ndim, t.dims, 3, (int64_t[]){1, 2, 3}));
      for (int i = 0; i < 6; i++) {
        double want = cases[c].dtype == PD_F32 ? (double)(float)cases[c].vals[i] : cases[c].vals[i];
        if (pd_tensor_get(&t, i) != want)
          fail_msg("type 0x%02x element %d: expected %.17g, got %.17g", cases[c].type, i, want, pd_tensor_get(&t, i));
      }
      pd_idx_header h;
      if (pd_idx_read_header(path, &h, &err)) fail_msg("%s", err.msg);
      assert_int_equal(h.type, cases[c].type);
      assert_int_equal(h.data_offset, 16);
      assert_int_equal(h.data_bytes, 6 * elem_size(cases[c].type));
      pd_tensor_release(&t);
      free(b);
    }
}

/* gzip is told by its magic bytes: a .gz name over plain bytes and a plain
 * name over gzip bytes both read. */
static void test_gzip_by_magic_not_name(void **state) {
  (void)state;
  double v[4] = {9, 8, 7, 6};
  size_t len;
  uint8_t *b = make_idx(0x08, 1, (uint32_t[]){4}, v, 4, &len);
  write_bytes(tpath("plain.gz"), b, len);
  gzip_file(tpath("packed.idx"), b, len);
  pd_tensor t;
  pd_tensor_init(&t, PD_U8);
  pd_error err = {0};
  assert_int_equal(pd_idx_read(tpath("plain.gz"), &t, &err), PD_OK);
  assert_int_equal(pd_tensor_get(&t, 3), 6);
  assert_int_equal(pd_idx_read(tpath("packed.idx"), &t, &err), PD_OK);
  assert_int_equal(pd_tensor_get(&t, 0), 9);
  /* in memory too */
  size_t zlen;
  void *z = slurp(tpath("packed.idx"), &zlen);
  assert_int_equal(pd_idx_parse("m.gz", z, zlen, &t, &err), PD_OK);
  assert_int_equal(t.dims[0], 4);
  free(z);
  pd_tensor_release(&t);
  free(b);
}

/* Concatenated gzip members (what `cat a.gz b.gz` makes) are one stream, as
 * gunzip reads them, split anywhere, even inside the header; a big file goes
 * through the fast inflater, whose every refusal the zlib path repeats. */
static void test_gzip_members_and_large(void **state) {
  (void)state;
  enum { N = 300000 };
  double *v = malloc(sizeof *v * N);
  for (int i = 0; i < N; i++) v[i] = (double)(((int64_t)i * 7919) % 251);
  size_t len, za, zb;
  uint8_t *b = make_idx(0x08, 2, (uint32_t[]){N / 100, 100}, v, N, &len);
  pd_tensor t;
  pd_tensor_init(&t, PD_U8);
  pd_error err = {0};
  for (size_t cut = 5; cut < len; cut += len / 2) {
    gzip_file(tpath("a.gz"), b, cut);
    gzip_file(tpath("b.gz"), b + cut, len - cut);
    uint8_t *x = slurp(tpath("a.gz"), &za), *y = slurp(tpath("b.gz"), &zb);
    uint8_t *both = malloc(za + zb + 3);
    memcpy(both, x, za);
    memcpy(both + za, y, zb);
    assert_int_equal(pd_idx_parse("two.gz", both, za + zb, &t, &err), PD_OK);
    assert_int_equal(t.dims[0], N / 100);
    for (int i = 0; i < N; i += 997) assert_int_equal(pd_tensor_get(&t, i), v[i]);
    assert_int_equal(pd_tensor_get(&t, N - 1), v[N - 1]);
    memcpy(both + za + zb, "abc", 3); /* not a member */
    refuse_bytes(both, za + zb + 3, "x.idx: 3 bytes of trailing data after the gzip stream");
    free(both), free(x), free(y);
  }
  gzip_file(tpath("big.gz"), b, len);
  assert_int_equal(pd_idx_read(tpath("big.gz"), &t, &err), PD_OK);
  assert_int_equal(pd_tensor_get(&t, 12345), v[12345]);
  uint8_t *z = slurp(tpath("big.gz"), &za);
  z[za / 2] ^= 0x55; /* inside the deflate data: zlib's message, not libdeflate's silence */
  refuse_bytes(z, za, "x.idx: ");
  free(z);
  pd_tensor_release(&t);
  free(b), free(v);
}

static void test_refuses_bad_headers(void **state) {
  (void)state;
  refuse_bytes("", 0, "x.idx: the file is empty; expected an IDX file");
  refuse_bytes("\x00", 1, "x.idx: truncated: the file ends after 1 bytes, inside the 4-byte IDX magic");
  refuse_bytes("\x00\x00\x08", 3, "truncated: the file ends after 3 bytes");
  refuse_bytes("PK\x03\x04", 4, "x.idx: not an IDX file: expected the magic 00 00 at byte 0, found 50 4b");
  refuse_bytes("\x00\x00\x0a\x01\x00\x00\x00\x01\x00", 9,
               "x.idx: unknown IDX element type 0x0A at byte 2 (expected 0x08 ubyte, 0x09 sbyte, 0x0B short, 0x0C "
               "int, 0x0D float or 0x0E double)");
  refuse_bytes("\x00\x00\x08\x00", 4, "x.idx: the IDX header at byte 3 says 0 dimensions; expected at least 1");
  refuse_bytes("\x00\x00\x08\x09", 4, "the IDX header at byte 3 says 9 dimensions; paddle-run supports at most 8");
  refuse_bytes("\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00", 10,
               "x.idx: truncated: the header has 3 dimensions (16 bytes) but the file ends after 10 bytes");
  /* Eight dims of 2^32-1 overflow 64 bits. */
  uint8_t big[36] = {0, 0, 0x0E, 8};
  memset(big + 4, 0xff, 32);
  refuse_bytes(big, sizeof big,
               "x.idx: shape [4294967295, 4294967295, 4294967295, 4294967295, 4294967295, "
               "4294967295, 4294967295, 4294967295] has more elements than fit in 64 bits");
}

static void test_refuses_wrong_data_size(void **state) {
  (void)state;
  double v[12] = {0};
  size_t len;
  /* Lying dims: 60000 x 28 x 28 ubytes claimed, 12 present. */
  uint8_t *b = make_idx(0x08, 3, (uint32_t[]){60000, 28, 28}, v, 12, &len);
  refuse_bytes(b, len,
               "x.idx: truncated: shape [60000, 28, 28] of ubyte needs 47040000 bytes of data from byte 16, "
               "but the file has 12");
  free(b);
  b = make_idx(0x0B, 1, (uint32_t[]){12}, v, 12, &len);
  refuse_bytes(b, len - 1, "truncated: shape [12] of short needs 24 bytes of data from byte 8, but the file has 23");
  b[7] = 11;
  refuse_bytes(b, len,
               "x.idx: the file is longer than its header says: shape [11] of short needs 22 bytes of data "
               "from byte 8, but the file has 24");
  free(b);
  /* A 4 GiB int file claimed in a 16-byte file reads nothing and allocates nothing. */
  b = make_idx(0x0C, 2, (uint32_t[]){0x40000000, 4}, v, 0, &len);
  refuse_bytes(b, len, "needs 17179869184 bytes of data from byte 12, but the file has 0");
  pd_idx_header h;
  pd_error err = {0};
  write_bytes(tpath("lie.idx"), b, len);
  expect_error(pd_idx_read_header(tpath("lie.idx"), &h, &err), &err, tpath("lie.idx"), "truncated");
  free(b);
}

static void test_refuses_bad_gzip(void **state) {
  (void)state;
  double v[100];
  for (int i = 0; i < 100; i++) v[i] = i;
  size_t len, zlen;
  uint8_t *b = make_idx(0x08, 2, (uint32_t[]){10, 10}, v, 100, &len);
  gzip_file(tpath("g.gz"), b, len);
  uint8_t *z = slurp(tpath("g.gz"), &zlen);
  refuse_bytes(z, zlen - 9, "x.idx: gzip data is truncated");
  refuse_bytes(z, 2, "x.idx: gzip data is truncated");
  uint8_t *bad = malloc(zlen);
  memcpy(bad, z, zlen);
  bad[zlen - 5] ^= 1; /* the length in the trailer */
  refuse_bytes(bad, zlen, "x.idx: corrupt gzip data");
  memcpy(bad, z, zlen);
  bad[2] = 7; /* not deflate */
  refuse_bytes(bad, zlen, "x.idx: corrupt gzip data near byte");
  free(bad);
  free(z);
  /* The header promises 100 bytes but 200 follow: a decompression bomb in small. */
  b = realloc(b, len + 100);
  memset(b + len, 0, 100);
  gzip_file(tpath("bomb.gz"), b, len + 100);
  z = slurp(tpath("bomb.gz"), &zlen);
  refuse_bytes(z, zlen, "x.idx: the gzip data inflates to more than the 112 bytes its header promises");
  free(z);
  /* A header promising 1 TB over a small stream fails without allocating it. */
  uint8_t lie[12] = {0, 0, 0x08, 2, 0, 0x10, 0, 0, 0, 0x10, 0, 0};
  gzip_file(tpath("lie.gz"), lie, sizeof lie);
  z = slurp(tpath("lie.gz"), &zlen);
  refuse_bytes(z, zlen, "x.idx: truncated: the header promises 1099511627788 bytes but the gzip data inflates to 12");
  free(z);
  /* The header itself cut short inside gzip. */
  gzip_file(tpath("cut.gz"), lie, 6);
  z = slurp(tpath("cut.gz"), &zlen);
  refuse_bytes(z, zlen, "x.idx: truncated: the header has 2 dimensions (12 bytes) but the file ends after 6 bytes");
  free(z);
  free(b);
}

static void test_missing_file(void **state) {
  (void)state;
  pd_tensor t;
  pd_tensor_init(&t, PD_U8);
  pd_error err = {0};
  expect_error(pd_idx_read(tpath("nope.idx"), &t, &err), &err, tpath("nope.idx"), "cannot open: No such file");
}

/* The decoded-data cache (fileutil.h): a big gzip file's decoded bytes are
 * kept on the first open and mapped on the next, after checking; a copy
 * that does not check out (changed bytes, a changed source) is inflated
 * around and rewritten; several members and PADDLE_RUN_CACHE=off write none. */
static bool open_img(const char *path, pd_file_image *img) {
  pd_error err = {0};
  if (pd_file_image_open(path, pd_idx_file_size, img, &err)) fail_msg("%s", err.msg);
  return img->cached;
}

static int cache_files(const char *dir, char *one, size_t size) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ls '%s' 2>/dev/null | grep -c '\\.data$'", dir);
  FILE *p = popen(cmd, "r");
  int n = 0;
  if (!p || fscanf(p, "%d", &n) != 1) n = -1;
  if (p) pclose(p);
  snprintf(cmd, sizeof cmd, "ls '%s'/*.data 2>/dev/null | head -n 1", dir);
  p = popen(cmd, "r");
  one[0] = '\0';
  if (p && fgets(one, (int)size, p)) one[strcspn(one, "\n")] = '\0';
  if (p) pclose(p);
  return n;
}

static void test_decoded_cache(void **state) {
  (void)state;
  enum { ROWS = 1500, COLS = 1000, N = ROWS * COLS };
  uint8_t *raw = malloc(16 + N);
  memcpy(raw, (uint8_t[]){0, 0, 0x08, 2, 0, 0, ROWS >> 8, ROWS & 0xff, 0, 0, COLS >> 8, COLS & 0xff}, 12);
  uint64_t s = 42; /* noise: compresses to more than the 1 MiB worth caching */
  for (int i = 0; i < N; i++) raw[12 + i] = (uint8_t)((s = s * 6364136223846793005u + 1442695040888963407u) >> 56);
  size_t len = 12 + N;
  char dirbuf[256], gz[256], one[512]; /* tpath's buffers rotate */
  strcpy(dirbuf, tpath("cache"));
  strcpy(gz, tpath("noise.gz"));
  setenv("PADDLE_RUN_CACHE", dirbuf, 1);
  gzip_file(gz, raw, len);
  pd_file_image img;
  assert_false(open_img(gz, &img)); /* first open: inflated, copy written */
  assert_int_equal(img.size, len);
  assert_memory_equal(img.data, raw, len);
  pd_file_image_close(&img);
  assert_int_equal(cache_files(dirbuf, one, sizeof one), 1);
  assert_true(open_img(gz, &img)); /* second: the copy */
  assert_int_equal(img.size, len);
  assert_memory_equal(img.data, raw, len);
  pd_file_image_close(&img);
  /* a changed byte in the copy: its CRC fails, the file is inflated, the copy rewritten */
  size_t clen;
  uint8_t *copy = slurp(one, &clen);
  assert_int_equal(clen, 4096 + len);
  copy[4096 + 777] ^= 1;
  write_bytes(one, copy, clen);
  free(copy);
  assert_false(open_img(gz, &img));
  assert_memory_equal(img.data, raw, len);
  pd_file_image_close(&img);
  assert_true(open_img(gz, &img));
  pd_file_image_close(&img);
  /* the source rewritten in place (same inode, new bytes): not the old copy */
  raw[12 + 5] ^= 0xff;
  gzip_file(gz, raw, len);
  assert_false(open_img(gz, &img));
  assert_memory_equal(img.data, raw, len);
  pd_file_image_close(&img);
  assert_true(open_img(gz, &img));
  assert_memory_equal(img.data, raw, len);
  pd_file_image_close(&img);
  /* two members: the trailer's CRC covers only the last, so no copy */
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dirbuf);
  assert_int_equal(system(cmd), 0);
  size_t za, zb;
  gzip_file(tpath("m1.gz"), raw, len / 2);
  gzip_file(tpath("m2.gz"), raw + len / 2, len - len / 2);
  uint8_t *x = slurp(tpath("m1.gz"), &za), *y = slurp(tpath("m2.gz"), &zb), *both = malloc(za + zb);
  memcpy(both, x, za);
  memcpy(both + za, y, zb);
  write_bytes(tpath("two.gz"), both, za + zb);
  free(x), free(y), free(both);
  assert_false(open_img(tpath("two.gz"), &img));
  assert_memory_equal(img.data, raw, len);
  pd_file_image_close(&img);
  assert_false(open_img(tpath("two.gz"), &img));
  pd_file_image_close(&img);
  assert_int_equal(cache_files(dirbuf, one, sizeof one), 0);
  /* no PADDLE_RUN_CACHE, XDG_CACHE_HOME not absolute: $HOME/.cache/paddle-run, ~/.cache made too */
  char home[256], where[300];
  snprintf(home, sizeof home, "%s/home", tmpdir);
  snprintf(where, sizeof where, "%s/.cache/paddle-run", home);
  assert_int_equal(mkdir(home, 0700), 0);
  char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  setenv("HOME", home, 1);
  setenv("XDG_CACHE_HOME", "relative/cache", 1);
  unsetenv("PADDLE_RUN_CACHE");
  assert_false(open_img(gz, &img));
  pd_file_image_close(&img);
  assert_int_equal(cache_files(where, one, sizeof one), 1);
  assert_true(open_img(gz, &img));
  pd_file_image_close(&img);
  unsetenv("XDG_CACHE_HOME");
  if (old_home) setenv("HOME", old_home, 1), free(old_home);
  /* off */
  setenv("PADDLE_RUN_CACHE", "off", 1);
  assert_false(open_img(gz, &img));
  pd_file_image_close(&img);
  assert_false(open_img(gz, &img));
  pd_file_image_close(&img);
  assert_int_equal(cache_files(dirbuf, one, sizeof one), 0);
  unsetenv("PADDLE_RUN_CACHE");
  free(raw);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_element_type_plain_and_gzip),
      cmocka_unit_test(test_gzip_by_magic_not_name),
      cmocka_unit_test(test_gzip_members_and_large),
      cmocka_unit_test(test_refuses_bad_headers),
      cmocka_unit_test(test_refuses_wrong_data_size),
      cmocka_unit_test(test_refuses_bad_gzip),
      cmocka_unit_test(test_missing_file),
      cmocka_unit_test(test_decoded_cache),
  };
  return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
