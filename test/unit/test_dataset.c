/* test_dataset.c — data files as rows: row count, row shape and dtype of
 * .npy and IDX files (plain and gzip); batches gathered by shuffled index
 * equal the rows they name, converted to the wanted dtype (out-of-range or
 * fractional values for an integer dtype are errors, never wrapped); a row
 * shape that does not fit a variable is named with both shapes; four
 * threads reading at once each get their own rows; and a mapped file that
 * shrinks under the readers fails their reads of the lost rows with a
 * message (no SIGBUS), while the rows still there read fine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "io/dataset.h"
#include "base/fileutil.h"
#include "io/npy.h"

static char tmpdir[64];

static int make_tmpdir(void **state) {
  (void)state;
  strcpy(tmpdir, "/tmp/pd-test-dataset-XXXXXX");
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

static void expect_error(pd_status st, const pd_error *err, const char *want) {
  if (st != PD_ERR_INPUT || !strstr(err->msg, want))
    fail_msg("expected PD_ERR_INPUT with \"%s\", got status %d: %s", want, st, err->msg);
}

/* Saves a tensor of dtype/shape whose element i is f(i) as .npy. */
static void save_npy(const char *path, pd_dtype dt, int ndim, const int64_t *dims, double (*f)(int64_t)) {
  pd_tensor t;
  pd_tensor_init(&t, dt);
  pd_error err = {0};
  assert_int_equal(pd_tensor_set_dims(&t, ndim, dims, &err), PD_OK);
  assert_int_equal(pd_tensor_alloc(&t, &err), PD_OK);
  for (int64_t i = 0; i < pd_tensor_numel(&t); i++) pd_tensor_set(&t, i, f(i));
  if (pd_npy_write(path, &t, &err)) fail_msg("%s", err.msg);
  pd_tensor_release(&t);
}

static double ramp(int64_t i) { return (double)i; }
static double signed_ramp(int64_t i) { return (double)(i % 50) - 20; }

static pd_dataset *open_ok(const char *path) {
  pd_dataset *ds = NULL;
  pd_error err = {0};
  if (pd_dataset_open(path, &ds, &err)) fail_msg("%s", err.msg);
  return ds;
}

/* out[b, j] must be the file's element rows[b] * row_elems + j, i.e. f of it. */
static void check_gather(pd_dataset *ds, const int64_t *rows, int64_t n, pd_dtype want, double (*f)(int64_t),
                         int64_t row_elems) {
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  if (pd_dataset_read(ds, rows, n, want, &t, &err)) fail_msg("%s", err.msg);
  assert_int_equal(t.dtype, want);
  assert_int_equal(t.ndim, 1 + pd_dataset_row_ndim(ds));
  assert_int_equal(t.dims[0], n);
  for (int64_t b = 0; b < n; b++)
    for (int64_t j = 0; j < row_elems; j++) {
      double got = pd_tensor_get(&t, b * row_elems + j), exp = f(rows[b] * row_elems + j);
      if (want == PD_F32) exp = (float)exp;
      if (got != exp)
        fail_msg("row %lld element %lld as %s: expected %g, got %g", (long long)rows[b], (long long)j,
                 pd_dtype_name(want), exp, got);
    }
  pd_tensor_release(&t);
}

static void test_npy_rows_and_gather(void **state) {
  (void)state;
  save_npy(tpath("a.npy"), PD_I32, 3, (int64_t[]){10, 2, 3}, signed_ramp);
  pd_dataset *ds = open_ok(tpath("a.npy"));
  assert_int_equal(pd_dataset_rows(ds), 10);
  assert_int_equal(pd_dataset_row_ndim(ds), 2);
  assert_int_equal(pd_dataset_row_dims(ds)[0], 2);
  assert_int_equal(pd_dataset_row_dims(ds)[1], 3);
  assert_int_equal(pd_dataset_dtype(ds), PD_I32);
  assert_string_equal(pd_dataset_format(ds), "npy");
  assert_string_equal(pd_dataset_path(ds), tpath("a.npy"));
  const int64_t shuffled[] = {7, 0, 3, 3, 9, 1};
  check_gather(ds, shuffled, 6, PD_I32, signed_ramp, 6);
  check_gather(ds, shuffled, 6, PD_I64, signed_ramp, 6);
  check_gather(ds, shuffled, 6, PD_F32, signed_ramp, 6);
  check_gather(ds, shuffled, 6, PD_F64, signed_ramp, 6);
  /* An empty batch is a [0, 2, 3] tensor. */
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  assert_int_equal(pd_dataset_read(ds, NULL, 0, PD_F32, &t, &err), PD_OK);
  assert_true(pd_dims_equal(t.ndim, t.dims, 3, (int64_t[]){0, 2, 3}));
  /* Negative int32 values do not fit uint8: an error naming row and element. */
  expect_error(pd_dataset_read(ds, (int64_t[]){4, 0}, 2, PD_U8, &t, &err), &err,
               "a.npy: row 0, element 0 is -20, out of the range of uint8");
  /* Indexes are checked before anything is read. */
  expect_error(pd_dataset_read(ds, (int64_t[]){1, 10}, 2, PD_F32, &t, &err), &err,
               "a.npy: row 10 (batch position 1) is out of range; the file has 10 rows");
  expect_error(pd_dataset_read(ds, (int64_t[]){-1}, 1, PD_F32, &t, &err), &err, "row -1 (batch position 0)");
  pd_tensor_release(&t);
  pd_dataset_close(ds);
}

/* Every dtype to every dtype, for values that fit all of them. */
static void test_every_conversion(void **state) {
  (void)state;
  for (int from = 0; from < PD_NUM_DTYPES; from++) {
    save_npy(tpath("c.npy"), (pd_dtype)from, 2, (int64_t[]){20, 5}, ramp);
    pd_dataset *ds = open_ok(tpath("c.npy"));
    const int64_t rows[] = {19, 2, 11, 0};
    for (int to = 0; to < PD_NUM_DTYPES; to++) check_gather(ds, rows, 4, (pd_dtype)to, ramp, 5);
    pd_dataset_close(ds);
  }
}

static double halves(int64_t i) { return (double)i / 2; }
static double wide(int64_t i) { return i == 3 ? 3e9 : (double)i; }
static double with_nan(int64_t i) { return i == 2 ? NAN : (double)i; }

static void test_conversion_refusals(void **state) {
  (void)state;
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  save_npy(tpath("h.npy"), PD_F64, 2, (int64_t[]){4, 2}, halves);
  pd_dataset *ds = open_ok(tpath("h.npy"));
  check_gather(ds, (int64_t[]){0, 2}, 2, PD_F32, halves, 2);
  /* row 2 holds 2.0 and 2.5 */
  expect_error(pd_dataset_read(ds, (int64_t[]){2}, 1, PD_I64, &t, &err), &err,
               "h.npy: row 2, element 1 is 2.5, which cannot be read as int64: not a whole number");
  pd_dataset_close(ds);
  save_npy(tpath("h2.npy"), PD_F64, 1, (int64_t[]){4}, halves);
  ds = open_ok(tpath("h2.npy"));
  check_gather(ds, (int64_t[]){2, 0}, 2, PD_I64, halves, 1); /* 1.0 and 0.0 are whole */
  expect_error(pd_dataset_read(ds, (int64_t[]){0, 3}, 2, PD_I64, &t, &err), &err,
               "h2.npy: row 3, element 0 is 1.5, which cannot be read as int64: not a whole number");
  pd_dataset_close(ds);
  save_npy(tpath("w.npy"), PD_I64, 1, (int64_t[]){5}, wide);
  ds = open_ok(tpath("w.npy"));
  check_gather(ds, (int64_t[]){0, 1, 2, 4}, 4, PD_I32, wide, 1);
  expect_error(pd_dataset_read(ds, (int64_t[]){3}, 1, PD_I32, &t, &err), &err,
               "w.npy: row 3, element 0 is 3000000000, out of the range of int32");
  pd_dataset_close(ds);
  save_npy(tpath("n.npy"), PD_F32, 1, (int64_t[]){3}, with_nan);
  ds = open_ok(tpath("n.npy"));
  expect_error(pd_dataset_read(ds, (int64_t[]){2}, 1, PD_U8, &t, &err), &err,
               "n.npy: row 2, element 0 is nan, which cannot be read as uint8: not a number");
  pd_dataset_close(ds);
  save_npy(tpath("big.npy"), PD_F64, 1, (int64_t[]){300}, ramp);
  ds = open_ok(tpath("big.npy"));
  expect_error(pd_dataset_read(ds, (int64_t[]){256}, 1, PD_U8, &t, &err), &err,
               "big.npy: row 256, element 0 is 256, which cannot be read as uint8: out of its range");
  check_gather(ds, (int64_t[]){255}, 1, PD_U8, ramp, 1);
  pd_dataset_close(ds);
  pd_tensor_release(&t);
}

/* IDX, as the Fashion-MNIST files are: ubyte images gzip'ed, read as float32. */
static uint8_t *make_idx(int type, int ndim, const uint32_t *dims, size_t es, size_t n, double (*f)(int64_t),
                         size_t *len) {
  size_t hl = 4 + 4 * (size_t)ndim;
  uint8_t *b = calloc(1, hl + n * es);
  b[2] = (uint8_t)type;
  b[3] = (uint8_t)ndim;
  for (int i = 0; i < ndim; i++)
    for (int k = 0; k < 4; k++) b[4 + 4 * i + k] = (uint8_t)(dims[i] >> (24 - 8 * k));
  for (size_t i = 0; i < n; i++) {
    double v = f((int64_t)i);
    uint64_t u;
    if (type == 0x0D) {
      float x = (float)v;
      uint32_t w;
      memcpy(&w, &x, 4);
      u = w;
    } else if (type == 0x0E) {
      memcpy(&u, &v, 8);
    } else {
      u = (uint64_t)(int64_t)v;
    }
    for (size_t k = 0; k < es; k++) b[hl + i * es + k] = (uint8_t)(u >> (8 * (es - 1 - k)));
  }
  *len = hl + n * es;
  return b;
}

static double pixel(int64_t i) { return (double)((i * 31) % 256); }

static void test_idx_rows(void **state) {
  (void)state;
  size_t len;
  uint8_t *b = make_idx(0x08, 3, (uint32_t[]){12, 4, 4}, 1, 12 * 16, pixel, &len);
  gzip_file(tpath("img-idx3-ubyte.gz"), b, len);
  write_bytes(tpath("img-idx3-ubyte"), b, len);
  free(b);
  for (int gz = 0; gz <= 1; gz++) {
    pd_dataset *ds = open_ok(tpath(gz ? "img-idx3-ubyte.gz" : "img-idx3-ubyte"));
    assert_string_equal(pd_dataset_format(ds), "IDX");
    assert_int_equal(pd_dataset_rows(ds), 12);
    assert_int_equal(pd_dataset_dtype(ds), PD_U8);
    const int64_t rows[] = {11, 5, 0, 5, 8};
    check_gather(ds, rows, 5, PD_F32, pixel, 16);
    check_gather(ds, rows, 5, PD_U8, pixel, 16);
    pd_dataset_close(ds);
  }
  /* Big-endian shorts, read as int64; floats read as float64. */
  b = make_idx(0x0B, 2, (uint32_t[]){6, 3}, 2, 18, signed_ramp, &len);
  write_bytes(tpath("s.idx"), b, len);
  free(b);
  pd_dataset *ds = open_ok(tpath("s.idx"));
  assert_int_equal(pd_dataset_dtype(ds), PD_I32);
  check_gather(ds, (int64_t[]){5, 1, 2}, 3, PD_I64, signed_ramp, 3);
  pd_dataset_close(ds);
  b = make_idx(0x0D, 1, (uint32_t[]){9}, 4, 9, halves, &len);
  gzip_file(tpath("f.idx.gz"), b, len);
  free(b);
  ds = open_ok(tpath("f.idx.gz"));
  assert_int_equal(pd_dataset_dtype(ds), PD_F32);
  assert_int_equal(pd_dataset_row_ndim(ds), 0);
  check_gather(ds, (int64_t[]){8, 3}, 2, PD_F64, halves, 1);
  pd_dataset_close(ds);
}

/* A header whose length is not a multiple of the element size puts the data
 * off alignment; rows still read right (through a scratch row). */
static void test_misaligned_npy(void **state) {
  (void)state;
  const char *dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2)}\n";
  size_t dl = strlen(dict), len = 10 + dl + 48;
  uint8_t *b = malloc(len);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (uint8_t)dl;
  b[9] = 0;
  memcpy(b + 10, dict, dl);
  for (int i = 0; i < 6; i++) {
    double v = halves(i);
    memcpy(b + 10 + dl + 8 * i, &v, 8);
  }
  assert_int_not_equal((10 + dl) % 8, 0);
  write_bytes(tpath("mis.npy"), b, len);
  pd_dataset *ds = open_ok(tpath("mis.npy"));
  check_gather(ds, (int64_t[]){2, 0, 1}, 3, PD_F64, halves, 2);
  check_gather(ds, (int64_t[]){2, 0, 1}, 3, PD_F32, halves, 2);
  pd_dataset_close(ds);
  /* and from memory */
  pd_error err = {0};
  if (pd_dataset_open_memory("mem.npy", b, len, &ds, &err)) fail_msg("%s", err.msg);
  check_gather(ds, (int64_t[]){1}, 1, PD_F64, halves, 2);
  pd_dataset_close(ds);
  free(b);
}

static void test_check_rows(void **state) {
  (void)state;
  save_npy(tpath("p.npy"), PD_U8, 3, (int64_t[]){2, 28, 28}, ramp);
  save_npy(tpath("l.npy"), PD_I64, 1, (int64_t[]){2}, ramp);
  pd_dataset *p = open_ok(tpath("p.npy")), *l = open_ok(tpath("l.npy"));
  pd_error err = {0};
  assert_int_equal(pd_dataset_check_rows(p, "pixels", 2, (int64_t[]){28, 28}, &err), PD_OK);
  assert_int_equal(pd_dataset_check_rows(p, "pixels", 3, (int64_t[]){28, 28, 1}, &err), PD_OK);
  assert_int_equal(pd_dataset_check_rows(p, "pixels", 3, (int64_t[]){1, 28, 28}, &err), PD_OK);
  assert_int_equal(pd_dataset_check_rows(p, "pixels", 2, (int64_t[]){-1, 28}, &err), PD_OK);
  assert_int_equal(pd_dataset_check_rows(p, "pixels", -1, NULL, &err), PD_OK);
  assert_int_equal(pd_dataset_check_rows(l, "label", 1, (int64_t[]){1}, &err), PD_OK);
  assert_int_equal(pd_dataset_check_rows(l, "label", 0, NULL, &err), PD_OK);
  assert_int_equal(pd_dataset_check_rows(p, "pixels", 1, (int64_t[]){784}, &err), PD_ERR_INPUT);
  char want[512];
  snprintf(want, sizeof want, "%s: rows have shape [28, 28], but variable \"pixels\" wants rows of shape [784]",
           tpath("p.npy"));
  assert_string_equal(err.msg, want);
  expect_error(pd_dataset_check_rows(p, "pixels", 2, (int64_t[]){28, 27}, &err), &err, "wants rows of shape [28, 27]");
  expect_error(pd_dataset_check_rows(l, "label", 1, (int64_t[]){10}, &err), &err,
               "l.npy: rows have shape [], but variable \"label\" wants rows of shape [10]");
  pd_dataset_close(p);
  pd_dataset_close(l);
}

static void test_refuses_files_without_rows(void **state) {
  (void)state;
  pd_dataset *ds = NULL;
  pd_error err = {0};
  save_npy(tpath("zero.npy"), PD_F32, 2, (int64_t[]){0, 3}, ramp);
  expect_error(pd_dataset_open(tpath("zero.npy"), &ds, &err), &err, "zero.npy: no rows (shape [0, 3])");
  assert_null(ds);
  save_npy(tpath("hollow.npy"), PD_F32, 3, (int64_t[]){4, 0, 2}, ramp);
  expect_error(pd_dataset_open(tpath("hollow.npy"), &ds, &err), &err,
               "hollow.npy: rows are empty (shape [4, 0, 2]): a row has no elements to read");
  save_npy(tpath("scalar.npy"), PD_F32, 0, NULL, ramp);
  expect_error(pd_dataset_open(tpath("scalar.npy"), &ds, &err), &err,
               "scalar.npy: holds a single value (shape []), not rows");
  write_bytes(tpath("empty.npy"), "", 0);
  expect_error(pd_dataset_open(tpath("empty.npy"), &ds, &err), &err,
               "empty.npy: the file is empty; expected a .npy or IDX file");
  write_bytes(tpath("text.csv"), "1,2,3\n", 6);
  expect_error(pd_dataset_open(tpath("text.csv"), &ds, &err), &err,
               "text.csv: not a .npy or IDX file: it starts with bytes 31 2c 32 2c");
  expect_error(pd_dataset_open(tpath("missing.npy"), &ds, &err), &err, "missing.npy: cannot open");
  /* A truncated file is refused at open, not at the read that would fault. */
  size_t len;
  uint8_t *b = make_idx(0x08, 2, (uint32_t[]){100, 10}, 1, 50, pixel, &len);
  write_bytes(tpath("cut.idx"), b, len);
  expect_error(
      pd_dataset_open(tpath("cut.idx"), &ds, &err), &err,
      "cut.idx: truncated: shape [100, 10] of ubyte needs 1000 bytes of data from byte 12, but the file has 50");
  gzip_file(tpath("cut.idx.gz"), b, len);
  expect_error(pd_dataset_open(tpath("cut.idx.gz"), &ds, &err), &err,
               "cut.idx.gz: truncated: the header promises 1012 bytes but the gzip data inflates to 62");
  free(b);
  b = make_idx(0x08, 2, (uint32_t[]){0, 10}, 1, 0, pixel, &len);
  gzip_file(tpath("none.idx.gz"), b, len);
  expect_error(pd_dataset_open(tpath("none.idx.gz"), &ds, &err), &err, "none.idx.gz: no rows (shape [0, 10])");
  gzip_file(tpath("text.gz"), "hello", 5);
  expect_error(pd_dataset_open(tpath("text.gz"), &ds, &err), &err, "text.gz: not a .npy or IDX file");
  free(b);
}

/* ---- threads: a prefetcher reads while the trainer reads ------------------------------ */

typedef struct reader_arg {
  pd_dataset *ds;
  unsigned seed;
  int bad;
} reader_arg;

static void *reader(void *p) {
  reader_arg *a = p;
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  int64_t rows[32];
  for (int it = 0; it < 200 && !a->bad; it++) {
    for (int i = 0; i < 32; i++) rows[i] = (int64_t)(rand_r(&a->seed) % 1000);
    if (pd_dataset_read(a->ds, rows, 32, it % 2 ? PD_F32 : PD_I64, &t, &err)) {
      a->bad = 1;
      break;
    }
    for (int i = 0; i < 32; i++)
      for (int j = 0; j < 12; j++)
        if (pd_tensor_get(&t, i * 12 + j) != pixel(rows[i] * 12 + j)) a->bad = 2;
  }
  pd_tensor_release(&t);
  return NULL;
}

static void test_concurrent_reads(void **state) {
  (void)state;
  for (int gz = 0; gz <= 1; gz++) {
    size_t len;
    uint8_t *b = make_idx(0x08, 3, (uint32_t[]){1000, 3, 4}, 1, 12000, pixel, &len);
    if (gz)
      gzip_file(tpath("thr.gz"), b, len);
    else
      write_bytes(tpath("thr.idx"), b, len);
    free(b);
    pd_dataset *ds = open_ok(tpath(gz ? "thr.gz" : "thr.idx"));
    pthread_t th[4];
    reader_arg args[4];
    for (int i = 0; i < 4; i++) {
      args[i] = (reader_arg){ds, (unsigned)(i + 1), 0};
      assert_int_equal(pthread_create(&th[i], NULL, reader, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
      pthread_join(th[i], NULL);
      assert_int_equal(args[i].bad, 0);
    }
    pd_dataset_close(ds);
  }
}

/* Reads rows[0..n) of a file that shrank: the lost ones must fail with
 * PD_ERR_RUNTIME naming the first lost row, the kept ones must read. */
static void *shrunk_reader(void *p) {
  pd_dataset *ds = p;
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  intptr_t bad = 0;
  for (int it = 0; it < 50 && !bad; it++) {
    int64_t lost[2] = {it % 60, 3999 - it}, kept[2] = {it % 60, 61 - it % 60};
    if (pd_dataset_read(ds, lost, 2, PD_F32, &t, &err) != PD_ERR_RUNTIME) bad = 1;
    char want[128];
    snprintf(want, sizeof want, "shrink.npy changed size while reading (row %d)", 3999 - it);
    if (!strstr(err.msg, want)) bad = 2;
    if (pd_dataset_read(ds, kept, 2, PD_F32, &t, &err) != PD_OK) bad = 3;
    for (int j = 0; j < 16 && !bad; j++)
      if (pd_tensor_get(&t, 16 + j) != (double)(kept[1] * 16 + j)) bad = 4;
  }
  pd_tensor_release(&t);
  return (void *)bad;
}

static void test_file_shrinks(void **state) {
  (void)state;
  save_npy(tpath("shrink.npy"), PD_F32, 2, (int64_t[]){4000, 16}, ramp); /* 64-byte rows after 128 */
  pd_dataset *ds = open_ok(tpath("shrink.npy"));
  assert_int_equal(truncate(tpath("shrink.npy"), 4096), 0); /* rows 0..61 stay whole */
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  int64_t rows[] = {7, 2500, 3};
  assert_int_equal(pd_dataset_read(ds, rows, 3, PD_F32, &t, &err), PD_ERR_RUNTIME);
  char want[512];
  snprintf(want, sizeof want,
           "%s changed size while reading (row 2500): the file was truncated or rewritten while this run used it",
           tpath("shrink.npy"));
  if (strcmp(err.msg, want)) fail_msg("expected \"%s\", got \"%s\"", want, err.msg);
  check_gather(ds, (int64_t[]){61, 0}, 2, PD_F64, ramp, 16); /* and the guard is undone */
  pthread_t th[4];
  for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, shrunk_reader, ds), 0);
  for (int i = 0; i < 4; i++) {
    void *bad;
    pthread_join(th[i], &bad);
    if (bad) fail_msg("thread %d: check %d failed", i, (int)(intptr_t)bad);
  }
  /* A SIGBUS outside a read (here: a mapping touched directly) still goes
   * to the handler there before, in the child the default (not cmocka's):
   * the process dies of it. */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    pd_file_image img;
    pd_error e = {0};
    signal(SIGBUS, SIG_DFL);
    if (pd_dataset_read(ds, rows, 1, PD_F32, &t, &e)) _exit(3); /* puts the guard's handler back */
    save_npy(tpath("shrink2.npy"), PD_F32, 2, (int64_t[]){4000, 16}, ramp);
    if (pd_file_image_open(tpath("shrink2.npy"), NULL, &img, &e) || truncate(tpath("shrink2.npy"), 4096)) _exit(3);
    volatile uint8_t v = img.data[200000];
    (void)v;
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) &&
      !(WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3))
    fail_msg("a SIGBUS outside the reads was swallowed: status 0x%x", status);
  pd_tensor_release(&t);
  pd_dataset_close(ds);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_npy_rows_and_gather),
      cmocka_unit_test(test_every_conversion),
      cmocka_unit_test(test_conversion_refusals),
      cmocka_unit_test(test_idx_rows),
      cmocka_unit_test(test_misaligned_npy),
      cmocka_unit_test(test_check_rows),
      cmocka_unit_test(test_refuses_files_without_rows),
      cmocka_unit_test(test_concurrent_reads),
      cmocka_unit_test(test_file_shrinks),
  };
  return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
