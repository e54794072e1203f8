/* dataset.c — rows of a .npy or IDX file, gathered into mini-batches with
 * dtype conversion. The file is opened through fileutil (mmap, or inflated
 * once when gzip); the header is checked against the real size at open, so
 * a read only ever touches bytes that are there. */
#include "io/dataset.h"

#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileutil.h"
#include "io/idx.h"
#include "io/npy.h"
#include "io/textdata.h"

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
  bool loaded;   /* data is there (else only the header was read: gzip not inflated yet) */
  pd_text *text; /* a text corpus's rows of one role (PD_TEXT_INPUT...), made by pd_text_row */
  int role;
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

/* The layout from the file's first len bytes: its whole content (whole), or
 * only the header of a gzip file not inflated yet. */
static pd_status setup(pd_dataset *ds, const uint8_t *b, size_t len, bool whole, pd_error *err) {
  const char *name = ds->path;
  int ndim;
  const int64_t *dims;
  uint64_t offset;
  pd_status st;
  pd_npy_header nh;
  pd_idx_header ih;
  if (len > 0 && b[0] == 0x93) {
    if ((st = pd_npy_parse_header(name, b, len, &nh, err)) ||
        (whole && (st = pd_npy_check_file_size(name, &nh, len, err))))
      return st;
    ds->dtype = nh.dtype;
    ds->elem_size = pd_dtype_size(nh.dtype);
    ndim = nh.ndim;
    dims = nh.dims;
    offset = nh.data_offset;
  } else if (len > 0 && b[0] == 0) {
    if ((st = pd_idx_parse_header(name, b, len, &ih, err)) ||
        (whole && (st = pd_idx_check_file_size(name, &ih, len, err))))
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
  /* The file's size checks (its own, or the header's promise that inflating
   * enforces) bound these products to size_t. */
  int64_t re = 1;
  pd_dims_product(ds->row_ndim, ds->row_dims, &re);
  ds->row_elems = (size_t)re;
  if (re == 0)
    return pd_errorf(err, PD_ERR_INPUT, "%s: rows are empty (shape %s): a row has no elements to read", name,
                     pd_dims_str(ndim, dims, db, sizeof db));
  ds->row_bytes = ds->row_elems * ds->elem_size;
  if (!whole) return PD_OK;
  ds->data = b + offset;
  /* Typed loads need aligned data; numpy aligns to 64, other writers may not. */
  ds->decode = (ds->is_idx && ds->idx_type != PD_IDX_U8) || (uintptr_t)ds->data % ds->elem_size != 0;
  ds->loaded = true;
  return PD_OK;
}

static pd_dataset *new_dataset(const char *path, pd_error *err) {
  pd_dataset *ds = calloc(1, sizeof *ds);
  if (!ds || !(ds->path = strdup(path))) {
    free(ds);
    pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory", path);
    return NULL;
  }
  return ds;
}

pd_status pd_dataset_open_header(const char *path, pd_dataset **out, pd_error *err) {
  *out = NULL;
  pd_dataset *ds = new_dataset(path, err);
  if (!ds) return PD_ERR_RUNTIME;
  pd_status st = pd_file_image_open_raw(path, true, &ds->img, err);
  if (!st && pd_is_gzip(ds->img.data, ds->img.size)) {
    /* Only the header now: what it says (rows, row shape) is checked
     * against the net and the other files before anything is inflated. */
    uint8_t *head = NULL;
    size_t n = 0;
    uint64_t total;
    st = pd_gunzip_head(path, ds->img.data, ds->img.size, PD_HEAD_MAX, &head, &n, err);
    if (!st) st = data_file_size(path, head, n, &total, err);
    if (!st) st = setup(ds, head, n, false, err);
    free(head);
  } else if (!st) {
    st = setup(ds, ds->img.data, ds->img.size, true, err);
  }
  if (st) {
    pd_dataset_close(ds);
    return st;
  }
  *out = ds;
  return PD_OK;
}

pd_status pd_dataset_load(pd_dataset *ds, pd_error *err) {
  if (ds->loaded) return PD_OK;
  int64_t rows = ds->rows;
  pd_status st = pd_file_image_inflate(ds->path, data_file_size, &ds->img, err);
  if (!st) st = setup(ds, ds->img.data, ds->img.size, true, err);
  if (!st && ds->rows != rows) /* the same bytes: cannot happen unless the file changed */
    st = pd_errorf(err, PD_ERR_INPUT, "%s: changed while being opened", ds->path);
  if (st) ds->loaded = false;
  return st;
}

pd_status pd_dataset_open(const char *path, pd_dataset **out, pd_error *err) {
  pd_status st = pd_dataset_open_header(path, out, err);
  if (!st && (st = pd_dataset_load(*out, err))) {
    pd_dataset_close(*out);
    *out = NULL;
  }
  return st;
}

pd_status pd_dataset_open_memory(const char *name, const void *buf, size_t len, pd_dataset **out, pd_error *err) {
  *out = NULL;
  pd_dataset *ds = new_dataset(name, err);
  if (!ds) return PD_ERR_RUNTIME;
  pd_status st = pd_file_image_from_memory(name, buf, len, data_file_size, &ds->img, err);
  if (!st) st = setup(ds, ds->img.data, ds->img.size, true, err);
  if (st) {
    pd_dataset_close(ds);
    return st;
  }
  *out = ds;
  return PD_OK;
}

pd_status pd_dataset_open_text(pd_text *text, int role, const char *name, pd_dataset **out, pd_error *err) {
  *out = NULL;
  pd_dataset *ds = new_dataset(name, err);
  if (!ds) return PD_ERR_RUNTIME;
  ds->text = pd_text_ref(text);
  ds->role = role;
  ds->dtype = role == PD_TEXT_KEEP ? PD_F32 : PD_I64;
  ds->elem_size = pd_dtype_size(ds->dtype);
  ds->rows = pd_text_rows(text);
  ds->row_ndim = 1;
  ds->row_dims[0] = role == PD_TEXT_KEEP ? 1 : pd_text_window(text);
  ds->row_elems = (size_t)ds->row_dims[0];
  ds->row_bytes = ds->row_elems * ds->elem_size;
  ds->decode = true; /* rows are made into the scratch buffer */
  ds->loaded = true;
  *out = ds;
  return PD_OK;
}

void pd_dataset_close(pd_dataset *ds) {
  if (!ds) return;
  pd_text_close(ds->text);
  pd_file_image_close(&ds->img);
  free(ds->path);
  free(ds);
}

const char *pd_dataset_path(const pd_dataset *ds) { return ds->path; }
const void *pd_dataset_bytes(const pd_dataset *ds, size_t *len) {
  if (ds->text) return pd_text_ids(ds->text, len);
  *len = (size_t)ds->rows * ds->row_bytes;
  return ds->data;
}
const char *pd_dataset_format(const pd_dataset *ds) { return ds->text ? "text" : ds->is_idx ? "IDX" : "npy"; }
const pd_text *pd_dataset_text(const pd_dataset *ds) { return ds->text; }
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

/* ---- reading mapped rows ------------------------------------------------------------
 * A mapped file that someone truncates under us raises SIGBUS on the first
 * access past its new end. The reads of mapped rows run guarded: a SIGBUS in
 * a thread inside the guard jumps back out of it, and the read fails with a
 * message naming the file and row. Any other SIGBUS goes to the handler that
 * was there before (the default: the process dies). Nothing is copied; the
 * cost is one sigaction call per batch and file. The handler runs with
 * SA_NODEFER, so jumping out of it leaves the thread's signal mask as it
 * was, and sigsetjmp need not save the mask (a system call per read). */

static _Thread_local sigjmp_buf *bus_jump; /* this thread's guard, while in one */
static struct sigaction bus_before;
static pthread_mutex_t bus_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_sigbus(int sig, siginfo_t *si, void *ctx) {
  if (bus_jump) siglongjmp(*bus_jump, 1);
  /* not ours: hand it on; returning re-runs the faulting access under it */
  sigaction(SIGBUS, &bus_before, NULL);
  (void)sig, (void)si, (void)ctx;
}

/* Puts on_sigbus in place unless it is there: checked at every guarded
 * read (one system call), since whoever installed a handler after ours
 * (a test framework, say) took it away. */
static void ensure_sigbus(void) {
  struct sigaction cur, sa;
  pthread_mutex_lock(&bus_lock);
  if (sigaction(SIGBUS, NULL, &cur) == 0 && !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus)) {
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &bus_before);
  }
  pthread_mutex_unlock(&bus_lock);
}

/* Row r's bytes in the file's dtype: in place, or decoded (IDX) or copied
 * into scratch where the dataset needs that (scratch is NULL otherwise). */
static const void *row_at(const pd_dataset *ds, int64_t r, void *scratch) {
  if (ds->text) {
    pd_text_row(ds->text, ds->role, r, scratch);
    return scratch;
  }
  const void *src = ds->data + (size_t)r * ds->row_bytes;
  if (!scratch) return src;
  if (ds->is_idx)
    pd_idx_decode(ds->idx_type, src, ds->row_elems, scratch);
  else
    memcpy(scratch, src, ds->row_bytes);
  return scratch;
}

/* Gathers and converts rows (see pd_dataset_read); *at is the batch
 * position being read, for the message when the file shrinks. */
static pd_status gather(const pd_dataset *ds, const int64_t *rows, int64_t n, pd_dtype want, uint8_t *dst,
                        size_t dst_row, void *scratch, volatile int64_t *at, pd_error *err) {
  for (int64_t i = 0; i < n; i++) {
    *at = i;
    const void *src = row_at(ds, rows[i], scratch);
    int64_t bad = convert(ds->dtype, src, ds->row_elems, want, dst + (size_t)i * dst_row);
    if (bad >= 0) return bad_value(ds, rows[i], bad, src, want, err);
  }
  return PD_OK;
}

pd_status pd_dataset_read(const pd_dataset *ds, const int64_t *rows, int64_t n, pd_dtype want, pd_tensor *out,
                          pd_error *err) {
  if ((unsigned)want >= PD_NUM_DTYPES)
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot read rows as dtype %d", ds->path, (int)want);
  if (!ds->loaded) return pd_errorf(err, PD_ERR_RUNTIME, "%s: read before pd_dataset_load", ds->path);
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
  volatile int64_t at = 0;
  if (!ds->img.mapped) {
    st = gather(ds, rows, n, want, dst, dst_row, scratch, &at, err);
  } else {
    ensure_sigbus();
    sigjmp_buf jump;
    if (sigsetjmp(jump, 0) == 0) { /* 0: SA_NODEFER left the mask alone */
      bus_jump = &jump;
      st = gather(ds, rows, n, want, dst, dst_row, scratch, &at, err);
      bus_jump = NULL;
    } else {
      bus_jump = NULL;
      st = pd_errorf(err, PD_ERR_RUNTIME,
                     "%s changed size while reading (row %lld): the file was truncated or rewritten while this run "
                     "used it",
                     ds->path, (long long)rows[at]);
    }
  }
  free(scratch);
  return st;
}

/* Whether any of n elements is NaN or Inf, by their exponent bits (an
 * integer test that vectorises; isfinite() does not here). */
static bool any_nonfinite_f32(const uint32_t *u, size_t n) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; i++) bad |= (u[i] & 0x7f800000u) == 0x7f800000u;
  return bad != 0;
}
static bool any_nonfinite_f64(const uint64_t *u, size_t n) {
  uint64_t bad = 0;
  for (size_t i = 0; i < n; i++) bad |= (u[i] & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
  return bad != 0;
}

bool pd_dataset_find_nonfinite(const pd_dataset *ds, const int64_t *rows, int64_t n, int64_t *at, int64_t *elem,
                               double *value) {
  if (ds->dtype != PD_F32 && ds->dtype != PD_F64) return false;
  if (!rows) n = ds->rows;
  size_t decoded = ds->row_elems * pd_dtype_size(ds->dtype);
  void *scratch = ds->decode ? malloc(decoded > ds->row_bytes ? decoded : ds->row_bytes) : NULL;
  if (ds->decode && !scratch) return false;
  bool found = false;
  for (int64_t i = 0; i < n && !found; i++) {
    int64_t r = rows ? rows[i] : i;
    if (r < 0 || r >= ds->rows) continue;
    const void *src = row_at(ds, r, scratch);
    bool f32 = ds->dtype == PD_F32;
    if (f32 ? !any_nonfinite_f32(src, ds->row_elems) : !any_nonfinite_f64(src, ds->row_elems)) continue;
    for (size_t j = 0; j < ds->row_elems; j++) {
      double v = f32 ? ((const float *)src)[j] : ((const double *)src)[j];
      if (!isfinite(v)) {
        *at = i, *elem = (int64_t)j, *value = v, found = true;
        break;
      }
    }
  }
  free(scratch);
  return found;
}
