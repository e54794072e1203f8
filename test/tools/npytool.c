/* npytool.c — a small CLI over lib/npy, lib/idx and lib/dataset for the
 * numpy cross-check (test/scripts/npy_numpy.py): numpy writes, we read and
 * print; we write, numpy reads; and the real Fashion-MNIST files are read
 * through the data set API. Errors go to stderr with paddle-run's exit codes.
 *
 *   npytool read FILE                  dtype, shape, every value (.npy, IDX, gzip)
 *   npytool header FILE                version, dtype, shape, data offset (.npy)
 *   npytool write FILE DTYPE [DIM...]  a pattern array (see pattern())
 *   npytool dataset FILE [DTYPE [BATCH]] rows, row shape, dtype; then all rows read
 *                                      in a shuffled order as DTYPE, with checksums */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/dataset.h"
#include "io/idx.h"
#include "io/npy.h"

static int fail(const pd_error *err) {
  fprintf(stderr, "npytool: %s\n", err->msg);
  return pd_exit_code(err->status);
}

static int usage(void) {
  fprintf(stderr, "usage: npytool read|header|write|dataset FILE ...\n");
  return 2;
}

static void print_value(const pd_tensor *t, int64_t i) {
  if (pd_dtype_is_float(t->dtype))
    printf("%.17g", pd_tensor_get(t, i));
  else if (t->dtype == PD_I64)
    printf("%lld", (long long)PD_DATA(t, int64_t)[i]);
  else
    printf("%.0f", pd_tensor_get(t, i));
}

static void print_tensor(const pd_tensor *t) {
  char db[256];
  printf("dtype %s\nshape %s\nvalues", pd_dtype_name(t->dtype), pd_dims_str(t->ndim, t->dims, db, sizeof db));
  int64_t n = pd_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    putchar(' ');
    print_value(t, i);
  }
  putchar('\n');
}

/* Element i of the pattern array; npy_numpy.py computes the same. */
static double pattern(pd_dtype dt, int64_t i) {
  if (dt == PD_U8) return (double)((i * 37 + 5) % 256);
  double v = (double)((i * 7) % 23) - 11;
  if (pd_dtype_is_float(dt)) v += 0.25 + 1e-3 * (double)i;
  if (dt == PD_I64) v *= 1e12;
  return v;
}

static int cmd_read(const char *path) {
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  FILE *f = fopen(path, "rb");
  int c0 = f ? getc(f) : EOF, c1 = f ? getc(f) : EOF;
  if (f) fclose(f);
  /* IDX starts with 00, gzip'd IDX is told apart after inflating: try npy first. */
  pd_status st;
  if (c0 == 0)
    st = pd_idx_read(path, &t, &err);
  else if (c0 == 0x1f && c1 == 0x8b) {
    st = pd_npy_read(path, &t, &err);
    if (st && strstr(err.msg, "not a .npy file")) st = pd_idx_read(path, &t, &err);
  } else
    st = pd_npy_read(path, &t, &err);
  if (st) return fail(&err);
  print_tensor(&t);
  pd_tensor_release(&t);
  return 0;
}

static int cmd_header(const char *path) {
  pd_npy_header h;
  pd_error err = {0};
  char db[256];
  if (pd_npy_read_header(path, &h, &err)) return fail(&err);
  printf("version %d.%d\ndtype %s\nshape %s\ndata_offset %llu\n", h.major, h.minor, pd_dtype_name(h.dtype),
         pd_dims_str(h.ndim, h.dims, db, sizeof db), (unsigned long long)h.data_offset);
  return 0;
}

static int cmd_write(const char *path, const char *dtype, int ndim, char **dimv) {
  pd_dtype dt;
  if (!pd_dtype_parse(dtype, &dt) || ndim > PD_MAX_DIMS) return usage();
  int64_t dims[PD_MAX_DIMS];
  for (int i = 0; i < ndim; i++) dims[i] = strtoll(dimv[i], NULL, 10);
  pd_tensor t;
  pd_tensor_init(&t, dt);
  pd_error err = {0};
  if (pd_tensor_set_dims(&t, ndim, dims, &err) || pd_tensor_alloc(&t, &err)) return fail(&err);
  for (int64_t i = 0; i < pd_tensor_numel(&t); i++) pd_tensor_set(&t, i, pattern(dt, i));
  pd_status st = pd_npy_write(path, &t, &err);
  pd_tensor_release(&t);
  return st ? fail(&err) : 0;
}

/* Reads every row once in a shuffled order (a fixed LCG permutation) and
 * prints sum, a row-weighted sum (so a row read from the wrong place shows),
 * min and max. */
static int cmd_dataset(const char *path, const char *dtype, int64_t batch) {
  pd_dtype want = PD_F64;
  if (dtype && !pd_dtype_parse(dtype, &want)) return usage();
  if (batch <= 0) return usage();
  pd_dataset *ds;
  pd_error err = {0};
  char db[256];
  if (pd_dataset_open(path, &ds, &err)) return fail(&err);
  int64_t rows = pd_dataset_rows(ds), re = 1;
  pd_dims_product(pd_dataset_row_ndim(ds), pd_dataset_row_dims(ds), &re);
  printf("format %s\nrows %lld\nrow_shape %s\ndtype %s\n", pd_dataset_format(ds), (long long)rows,
         pd_dims_str(pd_dataset_row_ndim(ds), pd_dataset_row_dims(ds), db, sizeof db),
         pd_dtype_name(pd_dataset_dtype(ds)));
  int64_t *perm = malloc((size_t)rows * sizeof *perm);
  for (int64_t i = 0; i < rows; i++) perm[i] = i;
  uint64_t s = 12345;
  for (int64_t i = rows - 1; i > 0; i--) { /* Fisher-Yates */
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    int64_t j = (int64_t)((s >> 33) % (uint64_t)(i + 1));
    int64_t tmp = perm[i];
    perm[i] = perm[j];
    perm[j] = tmp;
  }
  pd_tensor t;
  pd_tensor_init(&t, want);
  double sum = 0, wsum = 0, lo = 0, hi = 0;
  int rc = 0;
  for (int64_t b = 0; b < rows; b += batch) {
    int64_t n = rows - b < batch ? rows - b : batch;
    if (pd_dataset_read(ds, perm + b, n, want, &t, &err)) {
      rc = fail(&err);
      break;
    }
    for (int64_t i = 0; i < n; i++) {
      double rs = 0;
      for (int64_t j = 0; j < re; j++) {
        double v = pd_tensor_get(&t, i * re + j);
        rs += v;
        if ((b == 0 && i == 0 && j == 0) || v < lo) lo = v;
        if ((b == 0 && i == 0 && j == 0) || v > hi) hi = v;
      }
      sum += rs;
      wsum += rs * (double)(perm[b + i] % 97 + 1);
    }
  }
  if (!rc) printf("sum %.17g\nwsum %.17g\nmin %.17g\nmax %.17g\n", sum, wsum, lo, hi);
  pd_tensor_release(&t);
  free(perm);
  pd_dataset_close(ds);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 3) return usage();
  if (!strcmp(argv[1], "read")) return cmd_read(argv[2]);
  if (!strcmp(argv[1], "header")) return cmd_header(argv[2]);
  if (!strcmp(argv[1], "write") && argc >= 4) return cmd_write(argv[2], argv[3], argc - 4, argv + 4);
  if (!strcmp(argv[1], "dataset"))
    return cmd_dataset(argv[2], argc > 3 ? argv[3] : NULL, argc > 4 ? strtoll(argv[4], NULL, 10) : 1000);
  return usage();
}
