/* npy.c — the .npy format (numpy/lib/format.py): a magic string, a version,
 * a header length, a Python dict literal {'descr': ..., 'fortran_order': ...,
 * 'shape': ...} padded for alignment, then the raw array. The dict is parsed
 * as the small Python-literal grammar it is, never by fixed offsets. */
#include "io/npy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileutil.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c copies little-endian array data as is; a big-endian host needs byte swaps here"
#endif

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
static const char supported[] = "paddle-run reads float32, float64, int32, int64, uint8 little-endian";
/* numpy's spare room after the dict so the first dim can grow in place. */
enum { GROWTH_AXIS_MAX_DIGITS = 21, ARRAY_ALIGN = 64 };

/* Untrusted bytes shown in a message: printable ASCII as is, the rest as \xNN,
 * cut short when long. */
static const char *printable(const char *s, size_t n, char *buf, size_t size) {
  size_t o = 0;
  for (size_t i = 0; i < n && o + 8 < size; i++) {
    unsigned char c = (unsigned char)s[i];
    if (o + 12 >= size && i + 1 < n) {
      memcpy(buf + o, "...", 3);
      o += 3;
      break;
    }
    if (c >= 0x20 && c < 0x7f && c != '\\')
      buf[o++] = (char)c;
    else
      o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
  }
  buf[o] = '\0';
  return buf;
}

static const char *hex_bytes(const uint8_t *b, size_t n, char *buf, size_t size) {
  size_t o = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && o + 4 < size; i++) o += (size_t)snprintf(buf + o, size - o, "%s%02x", i ? " " : "", b[i]);
  return buf;
}

/* ---- the header dict ----------------------------------------------------------- */

typedef struct hparse {
  const char *name;
  const char *s; /* the dict text (not NUL-terminated) */
  size_t n, i;
  size_t base; /* file offset of s[0], for messages */
  pd_error *err;
} hparse;

static pd_status hp_fail(hparse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pd_status hp_fail(hparse *p, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return pd_errorf(p->err, PD_ERR_INPUT, "%s: bad .npy header at byte %zu: %s", p->name, p->base + p->i, msg);
}

/* What the parser found where it expected something else. */
static const char *found(const hparse *p, char *buf, size_t size) {
  if (p->i >= p->n) return "the end of the header";
  unsigned char c = (unsigned char)p->s[p->i];
  if (c >= 0x20 && c < 0x7f)
    snprintf(buf, size, "'%c'", c);
  else
    snprintf(buf, size, "byte 0x%02x", c);
  return buf;
}

/* Inside braces Python lets a literal span lines. */
static void skip_ws(hparse *p) {
  while (p->i < p->n) {
    char c = p->s[p->i];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f') break;
    p->i++;
  }
}

static bool peek(const hparse *p, char c) { return p->i < p->n && p->s[p->i] == c; }

static pd_status expect(hparse *p, char c, const char *what) {
  char fb[16];
  skip_ws(p);
  if (!peek(p, c)) return hp_fail(p, "expected '%c' %s, found %s", c, what, found(p, fb, sizeof fb));
  p->i++;
  return PD_OK;
}

/* A Python string literal in ' or " quotes; *str and *len give its raw text. */
static pd_status parse_string(hparse *p, const char **str, size_t *len, const char *what) {
  char fb[16];
  skip_ws(p);
  if (!peek(p, '\'') && !peek(p, '"')) return hp_fail(p, "expected %s, found %s", what, found(p, fb, sizeof fb));
  char q = p->s[p->i++];
  size_t start = p->i;
  while (p->i < p->n && p->s[p->i] != q) {
    if (p->s[p->i] == '\n') return hp_fail(p, "string not closed before the end of the line");
    if (p->s[p->i] == '\\') p->i++; /* \' does not close the string */
    p->i++;
  }
  if (p->i >= p->n) {
    p->i = start - 1;
    return hp_fail(p, "string not closed before the end of the header");
  }
  *str = p->s + start;
  *len = p->i - start;
  p->i++;
  return PD_OK;
}

static pd_status parse_dim(hparse *p, int64_t *out) {
  char fb[16];
  skip_ws(p);
  size_t at = p->i;
  bool neg = peek(p, '-');
  if (neg) p->i++;
  if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9')
    return hp_fail(p, "expected a dimension (an integer), found %s", found(p, fb, sizeof fb));
  int64_t v = 0;
  bool big = false;
  while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
    int d = p->s[p->i++] - '0';
    if (v > (INT64_MAX - d) / 10)
      big = true;
    else
      v = v * 10 + d;
  }
  if (peek(p, 'L') || peek(p, 'l')) p->i++; /* Python 2 wrote long ints as 3L */
  size_t end = p->i;
  p->i = at;
  char nb[64];
  printable(p->s + at, end - at, nb, sizeof nb);
  if (neg) return hp_fail(p, "dimension %s is negative", nb);
  if (big) return hp_fail(p, "dimension %s is too large", nb);
  if (end - at > 1 && p->s[at] == '0') return hp_fail(p, "dimension %s has a leading zero", nb);
  p->i = end;
  *out = v;
  return PD_OK;
}

/* A tuple of ints: (), (3,), (2, 3), (2, 3,). */
static pd_status parse_shape(hparse *p, pd_npy_header *h) {
  char fb[16];
  skip_ws(p);
  if (!peek(p, '(')) return hp_fail(p, "'shape' must be a tuple like (2, 3), found %s", found(p, fb, sizeof fb));
  size_t open = p->i++;
  h->ndim = 0;
  skip_ws(p);
  if (peek(p, ')')) {
    p->i++;
    return PD_OK;
  }
  for (;;) {
    int64_t d = 0;
    pd_status st = parse_dim(p, &d);
    if (st) return st;
    if (h->ndim == PD_MAX_DIMS) {
      p->i = open;
      return hp_fail(p, "the shape has more than %d dimensions, the most paddle-run supports", PD_MAX_DIMS);
    }
    h->dims[h->ndim++] = d;
    skip_ws(p);
    if (peek(p, ',')) {
      p->i++;
      skip_ws(p);
      if (peek(p, ')')) break;
      continue;
    }
    if (peek(p, ')')) {
      if (h->ndim == 1)
        return hp_fail(p, "shape (%lld) is not a tuple; a 1-d shape is written (%lld,)", (long long)h->dims[0],
                       (long long)h->dims[0]);
      break;
    }
    return hp_fail(p, "expected ',' or ')' in the shape, found %s", found(p, fb, sizeof fb));
  }
  p->i++;
  return PD_OK;
}

static pd_status parse_bool(hparse *p, bool *out) {
  char fb[16];
  skip_ws(p);
  size_t at = p->i;
  while (p->i < p->n && (p->s[p->i] == '_' || (p->s[p->i] >= 'A' && p->s[p->i] <= 'Z') ||
                         (p->s[p->i] >= 'a' && p->s[p->i] <= 'z') || (p->s[p->i] >= '0' && p->s[p->i] <= '9')))
    p->i++;
  size_t n = p->i - at;
  if (n == 4 && memcmp(p->s + at, "True", 4) == 0)
    *out = true;
  else if (n == 5 && memcmp(p->s + at, "False", 5) == 0)
    *out = false;
  else {
    p->i = at;
    return hp_fail(p, "'fortran_order' must be True or False, found %s", found(p, fb, sizeof fb));
  }
  return PD_OK;
}

/* What an unsupported dtype is, in words ("float16", "Python objects"). */
static const char *describe_kind(char kind, long bits, char *buf, size_t size) {
  switch (kind) {
  case 'f':
    if (bits > 0) {
      snprintf(buf, size, "float%ld", bits);
      return buf;
    }
    return "float";
  case 'i':
    if (bits > 0) {
      snprintf(buf, size, "int%ld", bits);
      return buf;
    }
    return "int";
  case 'u':
    if (bits > 0) {
      snprintf(buf, size, "uint%ld", bits);
      return buf;
    }
    return "uint";
  case 'c':
    if (bits > 0) {
      snprintf(buf, size, "complex%ld", bits);
      return buf;
    }
    return "complex";
  case 'b':
  case '?':
    return "bool";
  case 'O':
    return "Python objects";
  case 'S':
  case 'a':
    return "byte strings";
  case 'U':
    return "unicode strings";
  case 'V':
    return "raw void records";
  case 'M':
    return "datetime";
  case 'm':
    return "timedelta";
  default:
    return NULL;
  }
}

static pd_status check_descr(hparse *p, const char *d, size_t n, pd_dtype *out) {
  char shown[96], kb[32];
  printable(d, n, shown, sizeof shown);
  char order = '=';
  size_t k = 0;
  if (n > 0 && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) order = d[k++];
  char kind = k < n ? d[k++] : '\0';
  long size = 0;
  bool digits = k < n;
  for (; k < n && size < 100000; k++) {
    if (d[k] < '0' || d[k] > '9') {
      digits = false;
      break;
    }
    size = size * 10 + (d[k] - '0');
  }
  if (k < n) digits = false;
  int dt = -1;
  if (digits) {
    if (kind == 'f' && size == 4)
      dt = PD_F32;
    else if (kind == 'f' && size == 8)
      dt = PD_F64;
    else if (kind == 'i' && size == 4)
      dt = PD_I32;
    else if (kind == 'i' && size == 8)
      dt = PD_I64;
    else if (kind == 'u' && size == 1)
      dt = PD_U8;
  }
  if (dt >= 0) {
    if (order == '>' && size > 1)
      return pd_errorf(p->err, PD_ERR_INPUT, "%s: dtype '%s' (big-endian) is not supported; %s", p->name, shown,
                       supported);
    *out = (pd_dtype)dt;
    return PD_OK;
  }
  const char *what = describe_kind(kind, digits && kind && strchr("fiuc", kind) ? size * 8 : 0, kb, sizeof kb);
  if (what)
    return pd_errorf(p->err, PD_ERR_INPUT, "%s: dtype '%s' (%s%s) is not supported; %s", p->name, shown,
                     order == '>' && size > 1 ? "big-endian " : "", what, supported);
  return pd_errorf(p->err, PD_ERR_INPUT, "%s: dtype '%s' is not supported; %s", p->name, shown, supported);
}

static pd_status parse_dict(hparse *p, pd_npy_header *h) {
  enum { DESCR, FORTRAN, SHAPE, NKEYS };
  static const char *const keys[NKEYS] = {"descr", "fortran_order", "shape"};
  bool seen[NKEYS] = {false, false, false}, fortran = false;
  char fb[16], kb[96];
  const char *descr = NULL;
  size_t descr_len = 0, descr_at = 0;
  pd_status st = expect(p, '{', "at the start of the header dict");
  if (st) return st;
  for (;;) {
    skip_ws(p);
    if (peek(p, '}')) break;
    size_t key_at = p->i;
    const char *key;
    size_t klen;
    if ((st = parse_string(p, &key, &klen, "a quoted key or '}'"))) return st;
    int k = 0;
    while (k < NKEYS && !(strlen(keys[k]) == klen && memcmp(keys[k], key, klen) == 0)) k++;
    if (k == NKEYS) {
      p->i = key_at;
      return hp_fail(p, "unexpected key '%s' (a .npy header has 'descr', 'fortran_order' and 'shape')",
                     printable(key, klen, kb, sizeof kb));
    }
    if (seen[k]) {
      p->i = key_at;
      return hp_fail(p, "key '%s' appears twice", keys[k]);
    }
    seen[k] = true;
    if ((st = expect(p, ':', k == DESCR ? "after 'descr'" : k == FORTRAN ? "after 'fortran_order'" : "after 'shape'")))
      return st;
    skip_ws(p);
    if (k == DESCR) {
      descr_at = p->i;
      if (peek(p, '['))
        return pd_errorf(p->err, PD_ERR_INPUT,
                         "%s: dtype is a structured dtype (a list of fields), which is not supported; %s", p->name,
                         supported);
      if ((st = parse_string(p, &descr, &descr_len, "a dtype string like '<f4' for 'descr'"))) return st;
    } else if (k == FORTRAN) {
      if ((st = parse_bool(p, &fortran))) return st;
    } else {
      if ((st = parse_shape(p, h))) return st;
    }
    skip_ws(p);
    if (peek(p, ',')) {
      p->i++;
      continue;
    }
    if (!peek(p, '}')) return hp_fail(p, "expected ',' or '}' after a value, found %s", found(p, fb, sizeof fb));
  }
  size_t close = p->i++;
  skip_ws(p);
  if (p->i < p->n) return hp_fail(p, "unexpected %s after the header dict", found(p, fb, sizeof fb));
  p->i = close;
  for (int k = 0; k < NKEYS; k++)
    if (!seen[k]) return hp_fail(p, "the header dict has no '%s' key", keys[k]);
  p->i = descr_at;
  if ((st = check_descr(p, descr, descr_len, &h->dtype))) return st;
  if (fortran) {
    /* Column-major differs from row-major only when two dims exceed 1. */
    int big = 0;
    for (int i = 0; i < h->ndim; i++) big += h->dims[i] > 1;
    if (big > 1)
      return pd_errorf(p->err, PD_ERR_INPUT,
                       "%s: the array is stored in Fortran (column-major) order (fortran_order: True); "
                       "paddle-run reads C-order arrays only: save numpy.ascontiguousarray(a)",
                       p->name);
  }
  return PD_OK;
}

/* ---- reading ------------------------------------------------------------------------ */

pd_status pd_npy_parse_header(const char *name, const void *buf, size_t len, pd_npy_header *h, pd_error *err) {
  const uint8_t *b = buf;
  char hb[64], db[160];
  memset(h, 0, sizeof *h);
  if (len == 0) return pd_errorf(err, PD_ERR_INPUT, "%s: the file is empty; expected a .npy file", name);
  size_t m = len < sizeof npy_magic ? len : sizeof npy_magic;
  if (memcmp(b, npy_magic, m) != 0)
    return pd_errorf(err, PD_ERR_INPUT, "%s: not a .npy file: expected the magic \\x93NUMPY at byte 0, found bytes %s",
                     name, hex_bytes(b, m, hb, sizeof hb));
  if (len < 10)
    return pd_errorf(err, PD_ERR_INPUT, "%s: truncated: the file ends after %zu bytes, inside the .npy preamble", name,
                     len);
  h->major = b[6];
  h->minor = b[7];
  if (h->major < 1 || h->major > 3 || h->minor != 0)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: .npy format version %d.%d (bytes 6-7) is not supported; paddle-run reads 1.0, 2.0 and 3.0",
                     name, h->major, h->minor);
  size_t pre = h->major == 1 ? 10 : 12;
  if (len < pre)
    return pd_errorf(err, PD_ERR_INPUT, "%s: truncated: the file ends after %zu bytes, inside the .npy preamble", name,
                     len);
  uint32_t hlen = h->major == 1 ? (uint32_t)(b[8] | b[9] << 8)
                                : (uint32_t)b[8] | (uint32_t)b[9] << 8 | (uint32_t)b[10] << 16 | (uint32_t)b[11] << 24;
  if (hlen > PD_NPY_HEADER_MAX)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: header length %lu (at byte 8) is more than the %d bytes paddle-run accepts", name,
                     (unsigned long)hlen, PD_NPY_HEADER_MAX);
  if (len - pre < hlen)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: truncated: the header is %lu bytes long from byte %zu, but the file ends after %zu bytes",
                     name, (unsigned long)hlen, pre, len);
  /* Versions 1 and 2 are latin-1, 3 is utf-8; either way the structure is
   * ASCII and other bytes can only sit inside strings, which we compare raw. */
  hparse p = {name, (const char *)b + pre, hlen, 0, pre, err};
  pd_status st = parse_dict(&p, h);
  if (st) return st;
  int64_t numel;
  if (!pd_dims_product(h->ndim, h->dims, &numel) || (uint64_t)numel > UINT64_MAX / pd_dtype_size(h->dtype))
    return pd_errorf(err, PD_ERR_INPUT, "%s: shape %s has more elements than fit in 64 bits", name,
                     pd_dims_str(h->ndim, h->dims, db, sizeof db));
  h->data_offset = pre + hlen;
  h->data_bytes = (uint64_t)numel * pd_dtype_size(h->dtype);
  return PD_OK;
}

pd_status pd_npy_file_size(const char *name, const uint8_t *head, size_t len, uint64_t *total, pd_error *err) {
  pd_npy_header h;
  pd_status st = pd_npy_parse_header(name, head, len, &h, err);
  if (st) return st;
  if (h.data_bytes > UINT64_MAX - h.data_offset)
    return pd_errorf(err, PD_ERR_INPUT, "%s: the array is too large", name);
  *total = h.data_offset + h.data_bytes;
  return PD_OK;
}

/* The data after the header must be exactly what the header describes. */
pd_status pd_npy_check_file_size(const char *name, const pd_npy_header *h, uint64_t file_size, pd_error *err) {
  char db[160];
  if (file_size < h->data_offset) file_size = h->data_offset; /* a header read from a prefix */
  uint64_t have = file_size - h->data_offset;
  if (have == h->data_bytes) return PD_OK;
  pd_dims_str(h->ndim, h->dims, db, sizeof db);
  if (have < h->data_bytes)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: truncated: shape %s %s needs %llu bytes of data from byte %llu, but the file has %llu", name,
                     db, pd_dtype_name(h->dtype), (unsigned long long)h->data_bytes, (unsigned long long)h->data_offset,
                     (unsigned long long)have);
  return pd_errorf(err, PD_ERR_INPUT,
                   "%s: the file is longer than its header says: shape %s %s needs %llu bytes of data from "
                   "byte %llu, but the file has %llu",
                   name, db, pd_dtype_name(h->dtype), (unsigned long long)h->data_bytes,
                   (unsigned long long)h->data_offset, (unsigned long long)have);
}

static pd_status parse_plain(const char *name, const uint8_t *b, size_t len, pd_tensor *out, pd_error *err) {
  pd_npy_header h;
  pd_status st = pd_npy_parse_header(name, b, len, &h, err);
  if (!st) st = pd_npy_check_file_size(name, &h, len, err);
  if (st) return st;
  /* Only now, with the size known to be real, touch the tensor. */
  out->dtype = h.dtype;
  if ((st = pd_tensor_set_dims(out, h.ndim, h.dims, err))) return st;
  if ((st = pd_tensor_alloc(out, err))) return st;
  if (h.data_bytes) memcpy(pd_tensor_data(out), b + h.data_offset, (size_t)h.data_bytes);
  return PD_OK;
}

pd_status pd_npy_parse(const char *name, const void *buf, size_t len, pd_tensor *out, pd_error *err) {
  pd_file_image img; /* borrows buf, or holds it inflated when it is gzip */
  pd_status st = pd_file_image_from_memory(name, buf, len, pd_npy_file_size, &img, err);
  if (st) return st;
  st = parse_plain(name, img.data, img.size, out, err);
  pd_file_image_close(&img);
  return st;
}

pd_status pd_npy_read(const char *path, pd_tensor *out, pd_error *err) {
  pd_file_image img;
  pd_status st = pd_file_image_open(path, pd_npy_file_size, &img, err);
  if (st) return st;
  st = parse_plain(path, img.data, img.size, out, err);
  pd_file_image_close(&img);
  return st;
}

pd_status pd_npy_read_header(const char *path, pd_npy_header *h, pd_error *err) {
  pd_file_image img;
  pd_status st = pd_file_image_open(path, NULL, &img, err); /* mapped, not read */
  if (st) return st;
  if (pd_is_gzip(img.data, img.size)) {
    uint8_t *head;
    size_t n;
    st = pd_gunzip_head(path, img.data, img.size, PD_HEAD_MAX, &head, &n, err);
    if (!st) {
      st = pd_npy_parse_header(path, head, n, h, err);
      free(head);
    }
  } else {
    st = pd_npy_parse_header(path, img.data, img.size, h, err);
    if (!st) st = pd_npy_check_file_size(path, h, img.size, err);
  }
  pd_file_image_close(&img);
  return st;
}

/* ---- writing ------------------------------------------------------------------------ */

static const char *const descrs[PD_NUM_DTYPES] = {"<f4", "<f8", "<i4", "<i8", "|u1"};

pd_status pd_npy_encode_header(pd_dtype dtype, int ndim, const int64_t *dims, char *buf, size_t cap, size_t *len,
                               pd_error *err) {
  char dict[512];
  if ((unsigned)dtype >= PD_NUM_DTYPES) return pd_errorf(err, PD_ERR_INPUT, "cannot save dtype %d", (int)dtype);
  if (ndim < 0 || ndim > PD_MAX_DIMS)
    return pd_errorf(err, PD_ERR_INPUT, "cannot save a tensor whose shape is not known");
  for (int i = 0; i < ndim; i++)
    if (dims[i] < 0) return pd_errorf(err, PD_ERR_INPUT, "cannot save a tensor whose shape is not known");
  /* Exactly numpy's _write_array_header: sorted keys, repr() of the shape,
   * spare spaces for growing the first dim, then _wrap_header's padding. */
  size_t n = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descrs[dtype]);
  for (int i = 0; i < ndim; i++)
    n += (size_t)snprintf(dict + n, sizeof dict - n, "%s%lld", i ? ", " : "", (long long)dims[i]);
  n += (size_t)snprintf(dict + n, sizeof dict - n, "%s), }", ndim == 1 ? "," : "");
  if (ndim > 0) {
    char d0[32];
    int digits = snprintf(d0, sizeof d0, "%lld", (long long)dims[0]);
    for (int i = digits; i < GROWTH_AXIS_MAX_DIGITS; i++) dict[n++] = ' ';
  }
  size_t hlen = n + 1; /* the final '\n' */
  size_t pre = 10;
  size_t pad = ARRAY_ALIGN - (pre + hlen) % ARRAY_ALIGN;
  int major = 1;
  if (hlen + pad > 65535) { /* the v1 length field is 16 bits */
    major = 2;
    pre = 12;
    pad = ARRAY_ALIGN - (pre + hlen) % ARRAY_ALIGN;
  }
  size_t total = pre + hlen + pad;
  if (total > cap) return pd_errorf(err, PD_ERR_RUNTIME, "npy header buffer too small (%zu < %zu)", cap, total);
  size_t field = hlen + pad;
  memcpy(buf, npy_magic, 6);
  buf[6] = (char)major;
  buf[7] = 0;
  for (size_t i = 0; i < pre - 8; i++) buf[8 + i] = (char)(field >> (8 * i) & 0xff);
  memcpy(buf + pre, dict, n);
  memset(buf + pre + n, ' ', pad);
  buf[total - 1] = '\n';
  *len = total;
  return PD_OK;
}

pd_status pd_npy_write(const char *path, const pd_tensor *t, pd_error *err) {
  char hdr[512], db[160];
  size_t hlen;
  if (t->place.kind != PD_CPU)
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: the tensor is not on the CPU; copy it there before saving", path);
  pd_status st = pd_npy_encode_header(t->dtype, t->ndim, t->dims, hdr, sizeof hdr, &hlen, err);
  if (st) {
    pd_error_prefix(err, "%s", path);
    return st;
  }
  size_t bytes = pd_tensor_bytes(t);
  if (bytes == SIZE_MAX)
    return pd_errorf(err, PD_ERR_INPUT, "%s: a tensor of shape %s is too large to save", path,
                     pd_dims_str(t->ndim, t->dims, db, sizeof db));
  if (bytes > 0 && (!t->storage || !t->storage->data || t->storage->cap < bytes))
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: the tensor of shape %s has no data to save", path,
                     pd_dims_str(t->ndim, t->dims, db, sizeof db));
  pd_atomic_file f;
  if ((st = pd_atomic_begin(&f, path, err))) return st;
  if ((st = pd_atomic_write(&f, hdr, hlen, err))) return st;
  if (bytes && (st = pd_atomic_write(&f, pd_tensor_data(t), bytes, err))) return st;
  return pd_atomic_commit(&f, err);
}
