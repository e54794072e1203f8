/* test_npy.c — the .npy reader and writer: every dtype and rank 0..4 round
 * trips bit for bit; the header bytes are numpy.save's; v1/v2/v3 headers and
 * the dict's legal spellings parse; every refusal says what it found; and a
 * lying, truncated or over-long file is refused before anything is allocated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/fileutil.h"
#include "io/npy.h"

static char tmpdir[64];

static int make_tmpdir(void **state) {
  (void)state;
  strcpy(tmpdir, "/tmp/pd-test-npy-XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

/* A path in the temp dir; a few live at once. */
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

/* Files in the temp dir whose name contains `part` (leftover temp files). */
static int count_files(const char *part) {
  DIR *d = opendir(tmpdir);
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strstr(e->d_name, part)) n++;
  closedir(d);
  return n;
}

/* A .npy image: magic, version, length field, the dict text as given
 * (padded with spaces and '\n' to 64 bytes when pad), then data. */
static uint8_t *make_npy(int major, int minor, const char *dict, bool pad, const void *data, size_t dlen, size_t *len) {
  size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
  size_t hl = dl;
  if (pad) hl = ((pre + dl + 1 + 63) / 64) * 64 - pre;
  uint8_t *b = malloc(pre + hl + dlen + 1);
  memcpy(b, "\x93NUMPY", 6);
  b[6] = (uint8_t)major;
  b[7] = (uint8_t)minor;
  for (size_t i = 0; i < pre - 8; i++) b[8 + i] = (uint8_t)(hl >> (8 * i));
  memcpy(b + pre, dict, dl);
  if (pad) {
    memset(b + pre + dl, ' ', hl - dl);
    b[pre + hl - 1] = '\n';
  }
  if (dlen) memcpy(b + pre + hl, data, dlen);
  *len = pre + hl + dlen;
  return b;
}

static void expect_error(pd_status st, const pd_error *err, const char *name, const char *want) {
  if (st != PD_ERR_INPUT || !strstr(err->msg, want) || strncmp(err->msg, name, strlen(name)) != 0)
    fail_msg("expected PD_ERR_INPUT with \"%s\" (starting with %s), got status %d: %s", want, name, st, err->msg);
}

/* Parsing the dict (with data to match) must fail with `want` in the message. */
static void refuse_dict(int major, const char *dict, size_t dlen, const char *want) {
  size_t len;
  uint8_t *data = calloc(1, dlen + 1);
  uint8_t *b = make_npy(major, 0, dict, true, data, dlen, &len);
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  expect_error(pd_npy_parse("x.npy", b, len, &t, &err), &err, "x.npy: ", want);
  assert_null(t.storage); /* refused before allocating */
  free(b);
  free(data);
}

static void refuse_bytes(const void *b, size_t len, const char *want) {
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  expect_error(pd_npy_parse("x.npy", b, len, &t, &err), &err, "x.npy: ", want);
  assert_null(t.storage);
}

static void fill_pattern(pd_tensor *t) {
  int64_t n = pd_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double v = t->dtype == PD_U8 ? (double)((i * 37 + 5) % 256) : (double)((i * 7) % 23) - 11;
    if (pd_dtype_is_float(t->dtype)) v += 0.25 + 1e-3 * (double)i;
    if (t->dtype == PD_I64) v *= 1e12; /* beyond int32 */
    pd_tensor_set(t, i, v);
  }
}

/* ---- round trips ------------------------------------------------------------------- */

static void test_round_trip_every_dtype_and_rank(void **state) {
  (void)state;
  static const int64_t shapes[][4] = {{0}, {5}, {3, 4}, {2, 3, 4}, {2, 1, 3, 2}};
  for (int dt = 0; dt < PD_NUM_DTYPES; dt++)
    for (int rank = 0; rank <= 4; rank++) {
      pd_tensor t, r;
      pd_tensor_init(&t, (pd_dtype)dt);
      pd_tensor_init(&r, PD_F32);
      pd_error err = {0};
      assert_int_equal(pd_tensor_set_dims(&t, rank, shapes[rank], &err), PD_OK);
      assert_int_equal(pd_tensor_alloc(&t, &err), PD_OK);
      fill_pattern(&t);
      const char *path = tpath("rt.npy");
      if (pd_npy_write(path, &t, &err)) fail_msg("%s", err.msg);
      if (pd_npy_read(path, &r, &err)) fail_msg("%s", err.msg);
      assert_int_equal(r.dtype, dt);
      assert_true(pd_dims_equal(r.ndim, r.dims, t.ndim, t.dims));
      assert_memory_equal(pd_tensor_data(&r), pd_tensor_data(&t), pd_tensor_bytes(&t));
      /* v1, data 64-byte aligned, the file exactly header + data */
      pd_npy_header h;
      if (pd_npy_read_header(path, &h, &err)) fail_msg("%s", err.msg);
      assert_int_equal(h.major, 1);
      assert_int_equal(h.data_offset % 64, 0);
      struct stat sb;
      assert_int_equal(stat(path, &sb), 0);
      assert_int_equal((uint64_t)sb.st_size, h.data_offset + pd_tensor_bytes(&t));
      pd_tensor_release(&t);
      pd_tensor_release(&r);
    }
  assert_int_equal(count_files(".tmp-"), 0);
}

/* Zero-size dims and a rank-8 shape also round trip. */
static void test_round_trip_edge_shapes(void **state) {
  (void)state;
  static const int64_t s1[] = {3, 0}, s2[] = {1, 2, 1, 2, 1, 2, 1, 2}, s3[] = {70000};
  const int64_t *shapes[] = {s1, s2, s3};
  int ranks[] = {2, 8, 1};
  for (int k = 0; k < 3; k++) {
    pd_tensor t, r;
    pd_tensor_init(&t, PD_F64);
    pd_tensor_init(&r, PD_F32);
    pd_error err = {0};
    assert_int_equal(pd_tensor_set_dims(&t, ranks[k], shapes[k], &err), PD_OK);
    assert_int_equal(pd_tensor_alloc(&t, &err), PD_OK);
    fill_pattern(&t);
    if (pd_npy_write(tpath("edge.npy"), &t, &err)) fail_msg("%s", err.msg);
    if (pd_npy_read(tpath("edge.npy"), &r, &err)) fail_msg("%s", err.msg);
    assert_true(pd_dims_equal(r.ndim, r.dims, t.ndim, t.dims));
    assert_memory_equal(pd_tensor_data(&r), pd_tensor_data(&t), pd_tensor_bytes(&t));
    pd_tensor_release(&t);
    pd_tensor_release(&r);
  }
}

/* The header is byte for byte what numpy 1.24's np.save writes. */
static void test_header_matches_numpy(void **state) {
  (void)state;
  char buf[512];
  size_t len;
  pd_error err = {0};
  const char *want = "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
                     "                                                          \n";
  assert_int_equal(pd_npy_encode_header(PD_F32, 2, (int64_t[]){2, 3}, buf, sizeof buf, &len, &err), PD_OK);
  assert_int_equal(len, 128);
  assert_memory_equal(buf, want, 128);
  want = "\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': False, 'shape': (), }"
         "                                                              \n";
  assert_int_equal(pd_npy_encode_header(PD_U8, 0, NULL, buf, sizeof buf, &len, &err), PD_OK);
  assert_int_equal(len, 128);
  assert_memory_equal(buf, want, 128);
  /* 1-d: a trailing comma, then 20 spare spaces (21 digits less one). */
  want = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }                    ";
  assert_int_equal(pd_npy_encode_header(PD_I64, 1, (int64_t[]){3}, buf, sizeof buf, &len, &err), PD_OK);
  assert_int_equal(len, 128);
  assert_memory_equal(buf + 10, want, strlen(want));
  /* Eight big dims make a longer header, still a multiple of 64. */
  int64_t big[8] = {1000000000000LL, 2, 3, 4, 5, 6, 7, 8};
  assert_int_equal(pd_npy_encode_header(PD_F64, 8, big, buf, sizeof buf, &len, &err), PD_OK);
  assert_int_equal(len % 64, 0);
  assert_int_equal(buf[len - 1], '\n');
  /* A -1 dim or an unknown shape cannot be saved. */
  assert_int_equal(pd_npy_encode_header(PD_F32, 1, (int64_t[]){-1}, buf, sizeof buf, &len, &err), PD_ERR_INPUT);
  assert_int_equal(pd_npy_encode_header(PD_F32, -1, NULL, buf, sizeof buf, &len, &err), PD_ERR_INPUT);
}

/* ---- header versions and spellings -------------------------------------------------- */

static void parse_ok(int major, const char *dict, bool pad, const void *data, size_t dlen, pd_tensor *t) {
  size_t len;
  uint8_t *b = make_npy(major, 0, dict, pad, data, dlen, &len);
  pd_error err = {0};
  if (pd_npy_parse("ok.npy", b, len, t, &err)) fail_msg("dict %s: %s", dict, err.msg);
  free(b);
}

static void test_versions_1_2_3(void **state) {
  (void)state;
  float v[3] = {1.5f, -2, 3};
  for (int major = 1; major <= 3; major++) {
    pd_tensor t;
    pd_tensor_init(&t, PD_U8);
    parse_ok(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", true, v, sizeof v, &t);
    assert_int_equal(t.dtype, PD_F32);
    assert_int_equal(t.ndim, 1);
    assert_int_equal(t.dims[0], 3);
    assert_memory_equal(pd_tensor_data(&t), v, sizeof v);
    pd_tensor_release(&t);
  }
  /* v3 is utf-8: non-ASCII bytes inside a string do not confuse the parser
   * (here in an unknown key, which is then refused by name). */
  refuse_dict(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (), 'caf\xc3\xa9': 1}", 4,
              "unexpected key 'caf\\xc3\\xa9'");
}

static void test_dict_spellings(void **state) {
  (void)state;
  int32_t v[6] = {1, 2, 3, 4, 5, 6};
  static const char *const dicts[] = {
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<i4'}",                    /* keys in any order */
      "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2, 3)}",            /* double quotes */
      "{'descr':'<i4','fortran_order':False,'shape':(2,3)}",                          /* no spaces */
      "{ 'descr' : '<i4' ,\n 'fortran_order' : False ,\t'shape' : ( 2 , 3 , ) , }\n", /* spaces, trailing commas */
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 3L), }",                /* Python 2 longs */
      "{'descr': '=i4', 'fortran_order': False, 'shape': (2, 3), }",                  /* native order */
      "{'descr': 'i4', 'fortran_order': False, 'shape': (2, 3), }",
  };
  for (size_t k = 0; k < sizeof dicts / sizeof *dicts; k++)
    for (int pad = 0; pad <= 1; pad++) {
      pd_tensor t;
      pd_tensor_init(&t, PD_F32);
      parse_ok(1, dicts[k], pad, v, sizeof v, &t);
      assert_int_equal(t.dtype, PD_I32);
      assert_true(pd_dims_equal(t.ndim, t.dims, 2, (int64_t[]){2, 3}));
      assert_memory_equal(pd_tensor_data(&t), v, sizeof v);
      pd_tensor_release(&t);
    }
  /* '<u1' as well as '|u1'; fortran_order True where the layouts agree. */
  uint8_t u[4] = {1, 2, 3, 250};
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  parse_ok(1, "{'descr': '<u1', 'fortran_order': True, 'shape': (4,), }", true, u, 4, &t);
  assert_int_equal(t.dtype, PD_U8);
  assert_memory_equal(pd_tensor_data(&t), u, 4);
  parse_ok(1, "{'descr': '|u1', 'fortran_order': True, 'shape': (1, 4, 1), }", true, u, 4, &t);
  assert_int_equal(t.ndim, 3);
  parse_ok(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }", true, u, 1, &t);
  assert_int_equal(t.ndim, 0);
  assert_int_equal(((uint8_t *)pd_tensor_data(&t))[0], 1);
  pd_tensor_release(&t);
}

/* ---- refusals ----------------------------------------------------------------------- */

static void test_refuses_dtypes(void **state) {
  (void)state;
  const char *tail = "is not supported; paddle-run reads float32, float64, int32, int64, uint8 little-endian";
  char want[256];
  static const char *const cases[][2] = {
      {">f4", "(big-endian)"},
      {">i8", "(big-endian)"},
      {"<f2", "(float16)"},
      {"<c16", "(complex128)"},
      {"|b1", "(bool)"},
      {"|i1", "(int8)"},
      {"<u2", "(uint16)"},
      {"<u8", "(uint64)"},
      {"|O", "(Python objects)"},
      {"|S5", "(byte strings)"},
      {"<U3", "(unicode strings)"},
      {"<M8[ns]", "(datetime)"},
      {">f2", "(big-endian float16)"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    char dict[128];
    snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (1,), }", cases[k][0]);
    snprintf(want, sizeof want, "x.npy: dtype '%s' %s %s", cases[k][0], cases[k][1], tail);
    refuse_dict(1, dict, 16, want);
  }
  refuse_dict(1, "{'descr': 'zz', 'fortran_order': False, 'shape': (1,), }", 4, "dtype 'zz' is not supported");
  refuse_dict(1, "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (1,), }", 8,
              "x.npy: dtype is a structured dtype (a list of fields), which is not supported");
  refuse_dict(1, "{'descr': 4, 'fortran_order': False, 'shape': (1,), }", 4,
              "expected a dtype string like '<f4' for 'descr', found '4'");
  /* The big-endian message exactly as users see it. */
  size_t len;
  uint8_t *b = make_npy(1, 0, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", true, "12345678", 8, &len);
  write_bytes(tpath("x.npy"), b, len);
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  assert_int_equal(pd_npy_read(tpath("x.npy"), &t, &err), PD_ERR_INPUT);
  snprintf(want, sizeof want, "%s: dtype '>f4' (big-endian) %s", tpath("x.npy"), tail);
  assert_string_equal(err.msg, want);
  free(b);
}

static void test_refuses_bad_headers(void **state) {
  (void)state;
  refuse_dict(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24,
              "x.npy: the array is stored in Fortran (column-major) order (fortran_order: True); paddle-run reads "
              "C-order arrays only");
  refuse_dict(1, "{'descr': '<f4', 'fortran_order': False}", 4,
              "bad .npy header at byte 49: the header dict has no 'shape' key");
  refuse_dict(1, "{'descr': '<f4', 'shape': (1,)}", 4, "has no 'fortran_order' key");
  refuse_dict(1, "{'fortran_order': False, 'shape': (1,)}", 4, "has no 'descr' key");
  refuse_dict(
      1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'foo': 1}", 4,
      "bad .npy header at byte 66: unexpected key 'foo' (a .npy header has 'descr', 'fortran_order' and 'shape')");
  refuse_dict(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4,
              "key 'descr' appears twice");
  refuse_dict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", 12,
              "shape (3) is not a tuple; a 1-d shape is written (3,)");
  refuse_dict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [3]}", 12,
              "'shape' must be a tuple like (2, 3), found '['");
  refuse_dict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1)}", 4, "dimension -1 is negative");
  refuse_dict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 99999999999999999999)}", 4,
              "dimension 99999999999999999999 is too large");
  refuse_dict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (007,)}", 4, "has a leading zero");
  refuse_dict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1)}", 4,
              "more than 8 dimensions");
  refuse_dict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296)}", 4,
              "x.npy: shape [4294967296, 4294967296, 4294967296] has more elements than fit in 64 bits");
  refuse_dict(1, "{'descr': '<f4', 'fortran_order': false, 'shape': (1,)}", 4,
              "'fortran_order' must be True or False, found 'f'");
  refuse_dict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2 3)}", 4,
              "expected ',' or ')' in the shape, found '3'");
  refuse_dict(1, "{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", 4,
              "expected ',' or '}' after a value, found '''");
  refuse_dict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", 4,
              "unexpected 'x' after the header dict");
  refuse_dict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", 4,
              "expected ',' or '}' after a value, found the end of the header");
  refuse_dict(1, "{'descr': '<f4', ", 4, "expected a quoted key or '}', found the end of the header");
  refuse_dict(1, "{'descr: '<f4', 'fortran_order': False, 'shape': (1,)}", 4, "unexpected key 'descr: '");
  refuse_dict(1, "{'descr': '<f4", 4, "string not closed before the end of the line");
  refuse_dict(1, "['descr', '<f4']", 4,
              "bad .npy header at byte 10: expected '{' at the start of the header dict, found '['");
  refuse_dict(1, "{'descr' '<f4'}", 4, "expected ':' after 'descr', found '''");
  refuse_dict(1, "", 0, "expected '{' at the start of the header dict, found the end of the header");
  /* A dict with no closing quote before the end of the header. */
  size_t len;
  uint8_t *b = make_npy(1, 0, "{'descr': '<f4", false, NULL, 0, &len);
  refuse_bytes(b, len, "string not closed before the end of the header");
  free(b);
}

static void test_refuses_bad_preamble(void **state) {
  (void)state;
  refuse_bytes("", 0, "x.npy: the file is empty; expected a .npy file");
  refuse_bytes("\x89PNG\r\n\x1a\n", 8,
               "x.npy: not a .npy file: expected the magic \\x93NUMPY at byte 0, found bytes 89 50 4e 47 0d 0a");
  refuse_bytes("\x93NUM", 4, "x.npy: truncated: the file ends after 4 bytes, inside the .npy preamble");
  refuse_bytes("\x93NUMPY\x01\x00\x10", 9, "truncated: the file ends after 9 bytes");
  refuse_bytes("\x93NUMPY\x02\x00\x10\x00", 10, "truncated: the file ends after 10 bytes");
  refuse_bytes("\x93NUMPY\x04\x00\x10\x00\x00\x00", 12,
               ".npy format version 4.0 (bytes 6-7) is not supported; paddle-run reads 1.0, 2.0 and 3.0");
  refuse_bytes("\x93NUMPY\x01\x01\x10\x00", 10, "format version 1.1");
  refuse_bytes("\x93NUMPY\x01\x00\x00\x10{}", 12,
               "x.npy: truncated: the header is 4096 bytes long from byte 10, but the file ends after 12 bytes");
  /* A v2 length field claiming 4 GiB is refused without reading on. */
  refuse_bytes("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14,
               "header length 4294967295 (at byte 8) is more than the 65536 bytes paddle-run accepts");
}

static void test_refuses_wrong_data_size(void **state) {
  (void)state;
  float v[6] = {0};
  size_t len;
  uint8_t *b = make_npy(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", true, v, sizeof v, &len);
  refuse_bytes(b, len - 4,
               "x.npy: truncated: shape [2, 3] float32 needs 24 bytes of data from byte 128, but the file has 20");
  refuse_bytes(b, 128, "needs 24 bytes of data from byte 128, but the file has 0");
  free(b);
  b = make_npy(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }", true, v, sizeof v, &len);
  refuse_bytes(b, len,
               "x.npy: the file is longer than its header says: shape [1, 3] float32 needs 12 bytes of data from byte "
               "128, but the file has 24");
  free(b);
  /* Lying dims: a terabyte claimed by a 100-byte file is refused, not allocated. */
  b = make_npy(1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000), }", true, v, 8, &len);
  refuse_bytes(b, len, "truncated: shape [1000000, 1000000] float64 needs 8000000000000 bytes");
  free(b);
}

/* A file name goes first in every message from the file reader. */
static void test_read_errors_name_the_file(void **state) {
  (void)state;
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  const char *p = tpath("missing.npy");
  expect_error(pd_npy_read(p, &t, &err), &err, p, "cannot open: No such file or directory");
  write_bytes(tpath("empty.npy"), "", 0);
  expect_error(pd_npy_read(tpath("empty.npy"), &t, &err), &err, tpath("empty.npy"), "the file is empty");
  expect_error(pd_npy_read(tmpdir, &t, &err), &err, tmpdir, "is a directory");
  pd_npy_header h;
  expect_error(pd_npy_read_header(tpath("empty.npy"), &h, &err), &err, tpath("empty.npy"), "the file is empty");
}

/* ---- gzip ------------------------------------------------------------------------------ */

static void gzip_file(const char *path, const void *buf, size_t len) {
  gzFile z = gzopen(path, "wb");
  assert_non_null(z);
  assert_int_equal(gzwrite(z, buf, (unsigned)len), (int)len);
  assert_int_equal(gzclose(z), Z_OK);
}

static void test_gzip_npy(void **state) {
  (void)state;
  double v[4] = {1, 2.5, -3, 1e300};
  size_t len, zlen;
  uint8_t *b = make_npy(1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", true, v, sizeof v, &len);
  gzip_file(tpath("g.npy.gz"), b, len);
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  if (pd_npy_read(tpath("g.npy.gz"), &t, &err)) fail_msg("%s", err.msg);
  assert_int_equal(t.dtype, PD_F64);
  assert_memory_equal(pd_tensor_data(&t), v, sizeof v);
  pd_npy_header h;
  if (pd_npy_read_header(tpath("g.npy.gz"), &h, &err)) fail_msg("%s", err.msg);
  assert_int_equal(h.ndim, 2);
  /* Truncated gzip: named as such. */
  uint8_t *z = slurp(tpath("g.npy.gz"), &zlen);
  refuse_bytes(z, zlen - 12, "gzip data is truncated");
  /* Header promising fewer bytes than the stream holds: a bomb guard. */
  uint8_t *big = make_npy(1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 1), }", true, v, sizeof v, &len);
  gzip_file(tpath("bomb.npy.gz"), big, len);
  expect_error(pd_npy_read(tpath("bomb.npy.gz"), &t, &err), &err, tpath("bomb.npy.gz"),
               "the gzip data inflates to more than the 144 bytes its header promises");
  free(big);
  /* Header promising more than the stream holds. */
  big = make_npy(1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000, 1000), }", true, v, sizeof v, &len);
  gzip_file(tpath("short.npy.gz"), big, len);
  expect_error(pd_npy_read(tpath("short.npy.gz"), &t, &err), &err, tpath("short.npy.gz"),
               "truncated: the header promises 8000128 bytes but the gzip data inflates to 160");
  free(big);
  /* Garbage after the gzip stream. */
  uint8_t *tail = malloc(zlen + 3);
  memcpy(tail, z, zlen);
  memcpy(tail + zlen, "xyz", 3);
  refuse_bytes(tail, zlen + 3, "3 bytes of trailing data after the gzip stream");
  pd_tensor_release(&t);
  free(tail);
  free(z);
  free(b);
}

static void test_gzip_two_members(void **state) {
  (void)state;
  int64_t v[3] = {7, -8, 9};
  size_t len, l1, l2;
  uint8_t *b = make_npy(1, 0, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", true, v, sizeof v, &len);
  gzip_file(tpath("m1.gz"), b, 40);
  gzip_file(tpath("m2.gz"), b + 40, len - 40);
  uint8_t *z1 = slurp(tpath("m1.gz"), &l1), *z2 = slurp(tpath("m2.gz"), &l2);
  uint8_t *cat = malloc(l1 + l2);
  memcpy(cat, z1, l1);
  memcpy(cat + l1, z2, l2);
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  if (pd_npy_parse("m.npy.gz", cat, l1 + l2, &t, &err)) fail_msg("%s", err.msg);
  assert_memory_equal(pd_tensor_data(&t), v, sizeof v);
  /* A corrupt byte in the deflate data is caught (CRC or stream error). */
  cat[l1 / 2] ^= 0xff;
  refuse_bytes(cat, l1 + l2, "x.npy: ");
  pd_tensor_release(&t);
  free(z1), free(z2), free(cat), free(b);
}

/* ---- writing ----------------------------------------------------------------------------- */

static void test_write_is_atomic(void **state) {
  (void)state;
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  assert_int_equal(pd_tensor_set_dims(&t, 1, (int64_t[]){4}, &err), PD_OK);
  assert_int_equal(pd_tensor_alloc(&t, &err), PD_OK);
  fill_pattern(&t);
  /* Overwrite replaces the whole file. */
  char old[300];
  memset(old, 'o', sizeof old);
  write_bytes(tpath("w.npy"), old, sizeof old);
  if (pd_npy_write(tpath("w.npy"), &t, &err)) fail_msg("%s", err.msg);
  size_t len;
  void *b = slurp(tpath("w.npy"), &len);
  assert_int_equal(len, 128 + 16);
  free(b);
  /* The target is a directory: rename fails, nothing is left behind. */
  assert_int_equal(mkdir(tpath("adir.npy"), 0755), 0);
  assert_int_not_equal(pd_npy_write(tpath("adir.npy"), &t, &err), PD_OK);
  assert_non_null(strstr(err.msg, "adir.npy"));
  /* A missing directory: refused with the path. */
  assert_int_equal(pd_npy_write(tpath("nodir/x.npy"), &t, &err), PD_ERR_INPUT);
  assert_non_null(strstr(err.msg, "nodir/x.npy: cannot create: No such file or directory"));
  assert_int_equal(count_files(".tmp-"), 0);
  /* A shape that is not known yet, and a tensor with no data. */
  pd_tensor u;
  pd_tensor_init(&u, PD_F32);
  assert_int_equal(pd_npy_write(tpath("u.npy"), &u, &err), PD_ERR_INPUT);
  assert_non_null(strstr(err.msg, "u.npy: cannot save a tensor whose shape is not known"));
  assert_int_equal(pd_tensor_set_dims(&u, 2, (int64_t[]){-1, 3}, &err), PD_OK);
  assert_int_equal(pd_npy_write(tpath("u.npy"), &u, &err), PD_ERR_INPUT);
  assert_int_equal(pd_tensor_set_dims(&u, 2, (int64_t[]){2, 3}, &err), PD_OK);
  assert_int_equal(pd_npy_write(tpath("u.npy"), &u, &err), PD_ERR_RUNTIME);
  assert_non_null(strstr(err.msg, "has no data to save"));
  assert_int_equal(access(tpath("u.npy"), F_OK), -1);
  assert_int_equal(count_files(".tmp-"), 0);
  pd_tensor_release(&t);
}

/* The atomic-file helpers on their own: abort leaves nothing; commit relative
 * to the current directory works. */
static void test_atomic_file(void **state) {
  (void)state;
  pd_atomic_file f;
  pd_error err = {0};
  assert_int_equal(pd_atomic_begin(&f, tpath("a.bin"), &err), PD_OK);
  assert_int_equal(pd_atomic_write(&f, "abc", 3, &err), PD_OK);
  assert_int_equal(count_files(".tmp-"), 1);
  pd_atomic_abort(&f);
  assert_int_equal(count_files(".tmp-"), 0);
  assert_int_equal(access(tpath("a.bin"), F_OK), -1);
  char cwd[512];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(tmpdir), 0);
  assert_int_equal(pd_write_file_atomic("rel.bin", "xyz", 3, &err), PD_OK);
  assert_int_equal(chdir(cwd), 0);
  size_t len;
  void *b = slurp(tpath("rel.bin"), &len);
  assert_int_equal(len, 3);
  assert_memory_equal(b, "xyz", 3);
  free(b);
  assert_int_equal(pd_atomic_begin(&f, "", &err), PD_ERR_INPUT);
  assert_int_equal(pd_atomic_begin(&f, tpath("dir/"), &err), PD_ERR_INPUT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_every_dtype_and_rank),
      cmocka_unit_test(test_round_trip_edge_shapes),
      cmocka_unit_test(test_header_matches_numpy),
      cmocka_unit_test(test_versions_1_2_3),
      cmocka_unit_test(test_dict_spellings),
      cmocka_unit_test(test_refuses_dtypes),
      cmocka_unit_test(test_refuses_bad_headers),
      cmocka_unit_test(test_refuses_bad_preamble),
      cmocka_unit_test(test_refuses_wrong_data_size),
      cmocka_unit_test(test_read_errors_name_the_file),
      cmocka_unit_test(test_gzip_npy),
      cmocka_unit_test(test_gzip_two_members),
      cmocka_unit_test(test_write_is_atomic),
      cmocka_unit_test(test_atomic_file),
  };
  return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
