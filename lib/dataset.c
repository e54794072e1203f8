/* dataset.c — rows of a .npy or IDX file, gathered into mini-batches with
 * dtype conversion. The file is opened through fileutil (mmap, or inflated
 * once when gzip); the header is checked against the real size at open, so
 * a read only ever touches bytes that are there. */
#include "dataset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileutil.h"
#include "idx.h"
#include "npy.h"

struct pd_dataset {
  char *path;
  pd_file_image img;
  bool is_idx;
  pd_idx_type idx_type; /* when is_idx */
  const uint8_t *data;  /* the first row */
  size_t elem_size;     /* bytes per element in the file */
  bool decode;          /* rows go through a scratch buffer: big-endian or misaligned */
  pd_dtype dtype;
  int64_t rows;
  int row_ndim;
  int64_t row_dims[PD_MAX_DIMS];
  size_t row_elems, row_bytes;
};

static pd_status not_data_file(const char *name, const uint8_t *b, size_t len, pd_error *err) {
  if (len == 0) return pd_errorf(err, PD_ERR_INPUT, "%s: the file is empty; expected a .npy or IDX file", name);
  char hb[32];
  size_t o = 0;
  for (size_t i = 0; i < len && i < 4; i++) o += (size_t)snprintf(hb + o, sizeof hb - o, "%s%02x", i ? " " : "", b[i]);
  return pd_errorf(err, PD_ERR_INPUT,
                   "%s: not a .npy or IDX file: it starts with bytes %s (a .npy file starts with \\x93NUMPY, "
                   "an IDX file with 00 00)",
                   name, hb);
}

/* Told apart by the first byte: \x93 for .npy, 0 for IDX. */
static pd_status data_file_size(const char *name, const uint8_t *head, size_t len, uint64_t *total, pd_error *err) {
  if (len > 0 && head[0] == 0x93) return pd_npy_file_size(name, head, len, total, err);
  if (len > 0 && head[0] == 0) return pd_idx_file_size(name, head, len, total, err);
  return not_data_file(name, head, len, err);
}

static pd_status setup(pd_dataset *ds, pd_error *err) {
  const char *name = ds->path;
  const uint8_t *b = ds->img.data;
  size_t len = ds->img.size;
  int ndim;
  const int64_t *dims;
  uint64_t offset;
  pd_status st;
  pd_npy_header nh;
  pd_idx_header ih;
  if (len > 0 && b[0] == 0x93) {
    if ((st = pd_npy_parse_header(name, b, len, &nh, err)) || (st = pd_npy_check_file_size(name, &nh, len, err)))
      return st;
    ds->dtype = nh.dtype;
    ds->elem_size = pd_dtype_size(nh.dtype);
    ndim = nh.ndim;
    dims = nh.dims;
    offset = nh.data_offset;
  } else if (len > 0 && b[0] == 0) {
    if ((st = pd_idx_parse_header(name, b, len, &ih, err)) || (st = pd_idx_check_file_size(name, &ih, len, err)))
      return st;
    ds->is_idx = true;
    ds->idx_type = ih.type;
    ds->dtype = ih.dtype;
    ds->elem_size = ih.elem_size;
    ndim = ih.ndim;
    dims = ih.dims;
    offset = ih.data_offset;
  } else {
    return not_data_file(name, b, len, err);
  }
  char db[160];
  if (ndim == 0)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: holds a single value (shape []), not rows; a data file's first dimension counts its rows",
                     name);
  if (dims[0] == 0)
    return pd_errorf(err, PD_ERR_INPUT, "%s: no rows (shape %s)", name, pd_dims_str(ndim, dims, db, sizeof db));
  ds->rows = dims[0];
  ds->row_ndim = ndim - 1;
  memcpy(ds->row_dims, dims + 1, (size_t)(ndim - 1) * sizeof *dims);
  /* The whole array is in the file, so these products fit in size_t. */
  int64_t re = 1;
  pd_dims_product(ds->row_ndim, ds->row_dims, &re);
  ds->row_elems = (size_t)re;
  if (re == 0)
    return pd_errorf(err, PD_ERR_INPUT, "%s: rows are empty (shape %s): a row has no elements to read", name,
                     pd_dims_str(ndim, dims, db, sizeof db));
  ds->row_bytes = ds->row_elems * ds->elem_size;
  ds->data = b + offset;
  /* Typed loads need aligned data; numpy aligns to 64, other writers may not. */
  ds->decode = (ds->is_idx && ds->idx_type != PD_IDX_U8) || (uintptr_t)ds->data % ds->elem_size != 0;
  return PD_OK;
}

static pd_status finish_open(pd_dataset *ds, pd_status st, pd_dataset **out, pd_error *err) {
  if (!st) st = setup(ds, err);
  if (st) {
    pd_dataset_close(ds);
    return st;
  }
  *out = ds;
  return PD_OK;
}

pd_status pd_dataset_open(const char *path, pd_dataset **out, pd_error *err) {
  *out = NULL;
  pd_dataset *ds = calloc(1, sizeof *ds);
  if (!ds || !(ds->path = strdup(path))) {
    free(ds);
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory", path);
  }
  return finish_open(ds, pd_file_image_open(path, data_file_size, &ds->img, err), out, err);
}

pd_status pd_dataset_open_memory(const char *name, const void *buf, size_t len, pd_dataset **out, pd_error *err) {
  *out = NULL;
  pd_dataset *ds = calloc(1, sizeof *ds);
  if (!ds || !(ds->path = strdup(name))) {
    free(ds);
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory", name);
  }
  return finish_open(ds, pd_file_image_from_memory(name, buf, len, data_file_size, &ds->img, err), out, err);
}

void pd_dataset_close(pd_dataset *ds) {
  if (!ds) return;
  pd_file_image_close(&ds->img);
  free(ds->path);
  free(ds);
}

const char *pd_dataset_path(const pd_dataset *ds) { return ds->path; }
const void *pd_dataset_bytes(const pd_dataset *ds, size_t *len) {
  *len = (size_t)ds->rows * ds->row_bytes;
  return ds->data;
}
const char *pd_dataset_format(const pd_dataset *ds) { return ds->is_idx ? "IDX" : "npy"; }
int64_t pd_dataset_rows(const pd_dataset *ds) { return ds->rows; }
int pd_dataset_row_ndim(const pd_dataset *ds) { return ds->row_ndim; }
const int64_t *pd_dataset_row_dims(const pd_dataset *ds) { return ds->row_dims; }
pd_dtype pd_dataset_dtype(const pd_dataset *ds) { return ds->dtype; }

pd_status pd_dataset_check_rows(const pd_dataset *ds, const char *var, int ndim, const int64_t *dims, pd_error *err) {
  if (ndim < 0) return PD_OK; /* shape not known: nothing to check */
  int64_t a[PD_MAX_DIMS], b[PD_MAX_DIMS];
  int na = 0, nb = 0;
  for (int i = 0; i < ds->row_ndim; i++)
    if (ds->row_dims[i] != 1) a[na++] = ds->row_dims[i];
  for (int i = 0; i < ndim && nb < PD_MAX_DIMS; i++)
    if (dims[i] != 1) b[nb++] = dims[i];
  bool fit = na == nb;
  for (int i = 0; fit && i < na; i++) fit = b[i] == -1 || a[i] == b[i];
  if (fit) return PD_OK;
  char fb[160], vb[160];
  return pd_errorf(err, PD_ERR_INPUT, "%s: rows have shape %s, but variable \"%s\" wants rows of shape %s", ds->path,
                   pd_dims_str(ds->row_ndim, ds->row_dims, fb, sizeof fb), var, pd_dims_str(ndim, dims, vb, sizeof vb));
}

/* ---- conversion ------------------------------------------------------------------ */

/* Kept as functions so the compiler does not warn about comparisons that are
 * always true for some of the types the macros below expand to. */
static inline bool int_fits(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }
/* hi_excl is 2^k, exact in a double; NaN fails every comparison. */
static inline bool float_fits(double v, double lo, double hi_excl) { return v >= lo && v < hi_excl && v == trunc(v); }

#define TO_FLOAT(ST, DT)                            \
  do {                                              \
    const ST *s = src;                              \
    DT *d = dst;                                    \
    for (size_t i = 0; i < n; i++) d[i] = (DT)s[i]; \
  } while (0)
#define INT_TO_INT(ST, DT, LO, HI)                             \
  do {                                                         \
    const ST *s = src;                                         \
    DT *d = dst;                                               \
    for (size_t i = 0; i < n; i++) {                           \
      if (!int_fits((int64_t)s[i], LO, HI)) return (int64_t)i; \
      d[i] = (DT)s[i];                                         \
    }                                                          \
  } while (0)
#define FLOAT_TO_INT(ST, DT, LO, HI_EXCL)                            \
  do {                                                               \
    const ST *s = src;                                               \
    DT *d = dst;                                                     \
    for (size_t i = 0; i < n; i++) {                                 \
      if (!float_fits((double)s[i], LO, HI_EXCL)) return (int64_t)i; \
      d[i] = (DT)s[i];                                               \
    }                                                                \
  } while (0)
#define ANY_TO_INT(DT, LO, HI)                                    \
  do {                                                            \
    switch (from) {                                               \
    case PD_F32:                                                  \
      FLOAT_TO_INT(float, DT, (double)(LO), (double)(HI) + 1.0);  \
      break;                                                      \
    case PD_F64:                                                  \
      FLOAT_TO_INT(double, DT, (double)(LO), (double)(HI) + 1.0); \
      break;                                                      \
    case PD_I32:                                                  \
      INT_TO_INT(int32_t, DT, LO, HI);                            \
      break;                                                      \
    case PD_I64:                                                  \
      INT_TO_INT(int64_t, DT, LO, HI);                            \
      break;                                                      \
    case PD_U8:                                                   \
      INT_TO_INT(uint8_t, DT, LO, HI);                            \
      break;                                                      \
    }                                                             \
  } while (0)
#define ANY_TO_FLOAT(DT)     \
  do {                       \
    switch (from) {          \
    case PD_F32:             \
      TO_FLOAT(float, DT);   \
      break;                 \
    case PD_F64:             \
      TO_FLOAT(double, DT);  \
      break;                 \
    case PD_I32:             \
      TO_FLOAT(int32_t, DT); \
      break;                 \
    case PD_I64:             \
      TO_FLOAT(int64_t, DT); \
      break;                 \
    case PD_U8:              \
      TO_FLOAT(uint8_t, DT); \
      break;                 \
    }                        \
  } while (0)

/* Converts n elements; returns the index of the first one that does not
 * fit an integer target (not a whole number, or out of range), or -1. */
static int64_t convert(pd_dtype from, const void *src, size_t n, pd_dtype to, void *dst) {
  if (from == to) {
    memcpy(dst, src, n * pd_dtype_size(to));
    return -1;
  }
  switch (to) {
  case PD_F32:
    ANY_TO_FLOAT(float);
    break;
  case PD_F64:
    ANY_TO_FLOAT(double);
    break;
  /* (double)INT64_MAX + 1.0 rounds to 2^63 exactly, the bound we want. */
  case PD_I32:
    ANY_TO_INT(int32_t, INT32_MIN, INT32_MAX);
    break;
  case PD_I64:
    ANY_TO_INT(int64_t, INT64_MIN, INT64_MAX);
    break;
  case PD_U8:
    ANY_TO_INT(uint8_t, 0, 255);
    break;
  }
  return -1;
}

static pd_status bad_value(const pd_dataset *ds, int64_t row, int64_t elem, const void *src, pd_dtype want,
                           pd_error *err) {
  const char *wn = pd_dtype_name(want);
  double v;
  switch (ds->dtype) {
  case PD_F32:
    v = ((const float *)src)[elem];
    break;
  case PD_F64:
    v = ((const double *)src)[elem];
    break;
  case PD_I32:
    return pd_errorf(err, PD_ERR_INPUT, "%s: row %lld, element %lld is %ld, out of the range of %s", ds->path,
                     (long long)row, (long long)elem, (long)((const int32_t *)src)[elem], wn);
  case PD_I64:
    return pd_errorf(err, PD_ERR_INPUT, "%s: row %lld, element %lld is %lld, out of the range of %s", ds->path,
                     (long long)row, (long long)elem, (long long)((const int64_t *)src)[elem], wn);
  default:
    return pd_errorf(err, PD_ERR_INPUT, "%s: row %lld, element %lld is out of the range of %s", ds->path,
                     (long long)row, (long long)elem, wn);
  }
  const char *why = isnan(v) ? "not a number" : v != trunc(v) ? "not a whole number" : "out of its range";
  return pd_errorf(err, PD_ERR_INPUT, "%s: row %lld, element %lld is %.9g, which cannot be read as %s: %s", ds->path,
                   (long long)row, (long long)elem, v, wn, why);
}

pd_status pd_dataset_read(const pd_dataset *ds, const int64_t *rows, int64_t n, pd_dtype want, pd_tensor *out,
                          pd_error *err) {
  if ((unsigned)want >= PD_NUM_DTYPES)
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot read rows as dtype %d", ds->path, (int)want);
  if (n < 0 || (n > 0 && !rows))
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot read %lld rows", ds->path, (long long)n);
  /* Check every index before writing anything. */
  for (int64_t i = 0; i < n; i++)
    if (rows[i] < 0 || rows[i] >= ds->rows)
      return pd_errorf(err, PD_ERR_INPUT, "%s: row %lld (batch position %lld) is out of range; the file has %lld rows",
                       ds->path, (long long)rows[i], (long long)i, (long long)ds->rows);
  size_t dst_row = ds->row_elems * pd_dtype_size(want);
  if ((uint64_t)n > SIZE_MAX / dst_row)
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: a batch of %lld rows is too large", ds->path, (long long)n);
  int64_t dims[PD_MAX_DIMS];
  dims[0] = n;
  memcpy(dims + 1, ds->row_dims, (size_t)ds->row_ndim * sizeof *dims);
  out->dtype = want;
  pd_status st = pd_tensor_set_dims(out, 1 + ds->row_ndim, dims, err);
  if (!st) st = pd_tensor_alloc(out, err);
  if (st) return st;
  void *scratch = NULL;
  if (ds->decode) {
    scratch = malloc(ds->row_elems * pd_dtype_size(ds->dtype));
    if (!scratch) return pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory reading a row", ds->path);
  }
  uint8_t *dst = pd_tensor_data(out);
  for (int64_t i = 0; i < n; i++) {
    const void *src = ds->data + (size_t)rows[i] * ds->row_bytes;
    if (scratch) {
      if (ds->is_idx)
        pd_idx_decode(ds->idx_type, src, ds->row_elems, scratch);
      else
        memcpy(scratch, src, ds->row_bytes);
      src = scratch;
    }
    int64_t bad = convert(ds->dtype, src, ds->row_elems, want, dst + (size_t)i * dst_row);
    if (bad >= 0) {
      st = bad_value(ds, rows[i], bad, src, want, err);
      break;
    }
  }
  free(scratch);
  return st;
}
