/* idx.c — reading IDX files (yann.lecun.com/exdb/mnist): header checks
 * against the real file size before anything is allocated, big-endian
 * element decoding, gzip through fileutil. */
#include "io/idx.h"

#include <stdlib.h>
#include <string.h>

#include "base/fileutil.h"

static const char types_msg[] = "expected 0x08 ubyte, 0x09 sbyte, 0x0B short, 0x0C int, 0x0D float or 0x0E double";

static bool type_info(int type, size_t *size, pd_dtype *dtype) {
  switch (type) {
  case PD_IDX_U8:
    *size = 1;
    *dtype = PD_U8;
    return true;
  case PD_IDX_I8:
    *size = 1;
    *dtype = PD_I32;
    return true;
  case PD_IDX_I16:
    *size = 2;
    *dtype = PD_I32;
    return true;
  case PD_IDX_I32:
    *size = 4;
    *dtype = PD_I32;
    return true;
  case PD_IDX_F32:
    *size = 4;
    *dtype = PD_F32;
    return true;
  case PD_IDX_F64:
    *size = 8;
    *dtype = PD_F64;
    return true;
  default:
    return false;
  }
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint64_t be64(const uint8_t *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }

pd_status pd_idx_parse_header(const char *name, const void *buf, size_t len, pd_idx_header *h, pd_error *err) {
  const uint8_t *b = buf;
  char db[160];
  memset(h, 0, sizeof *h);
  if (len == 0) return pd_errorf(err, PD_ERR_INPUT, "%s: the file is empty; expected an IDX file", name);
  if (b[0] != 0 || (len > 1 && b[1] != 0))
    return pd_errorf(err, PD_ERR_INPUT, "%s: not an IDX file: expected the magic 00 00 at byte 0, found %02x %02x",
                     name, b[0], len > 1 ? b[1] : 0);
  if (len < 4)
    return pd_errorf(err, PD_ERR_INPUT, "%s: truncated: the file ends after %zu bytes, inside the 4-byte IDX magic",
                     name, len);
  if (!type_info(b[2], &h->elem_size, &h->dtype))
    return pd_errorf(err, PD_ERR_INPUT, "%s: unknown IDX element type 0x%02X at byte 2 (%s)", name, b[2], types_msg);
  h->type = (pd_idx_type)b[2];
  if (b[3] == 0)
    return pd_errorf(err, PD_ERR_INPUT, "%s: the IDX header at byte 3 says 0 dimensions; expected at least 1", name);
  if (b[3] > PD_MAX_DIMS)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: the IDX header at byte 3 says %d dimensions; paddle-run supports at most %d", name, b[3],
                     PD_MAX_DIMS);
  h->ndim = b[3];
  h->data_offset = 4 + 4 * (uint64_t)h->ndim;
  if (len < h->data_offset)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: truncated: the header has %d dimensions (%llu bytes) but the file ends after %zu bytes", name,
                     h->ndim, (unsigned long long)h->data_offset, len);
  for (int i = 0; i < h->ndim; i++) h->dims[i] = be32(b + 4 + 4 * i);
  int64_t numel;
  if (!pd_dims_product(h->ndim, h->dims, &numel) || (uint64_t)numel > UINT64_MAX / h->elem_size)
    return pd_errorf(err, PD_ERR_INPUT, "%s: shape %s has more elements than fit in 64 bits", name,
                     pd_dims_str(h->ndim, h->dims, db, sizeof db));
  h->data_bytes = (uint64_t)numel * h->elem_size;
  return PD_OK;
}

pd_status pd_idx_file_size(const char *name, const uint8_t *head, size_t len, uint64_t *total, pd_error *err) {
  pd_idx_header h;
  pd_status st = pd_idx_parse_header(name, head, len, &h, err);
  if (st) return st;
  if (h.data_bytes > UINT64_MAX - h.data_offset)
    return pd_errorf(err, PD_ERR_INPUT, "%s: the array is too large", name);
  *total = h.data_offset + h.data_bytes;
  return PD_OK;
}

static const char *type_name(pd_idx_type t) {
  switch (t) {
  case PD_IDX_U8:
    return "ubyte";
  case PD_IDX_I8:
    return "sbyte";
  case PD_IDX_I16:
    return "short";
  case PD_IDX_I32:
    return "int";
  case PD_IDX_F32:
    return "float";
  case PD_IDX_F64:
    return "double";
  }
  return "?";
}

pd_status pd_idx_check_file_size(const char *name, const pd_idx_header *h, uint64_t file_size, pd_error *err) {
  char db[160];
  if (file_size < h->data_offset) file_size = h->data_offset; /* a header read from a prefix */
  uint64_t have = file_size - h->data_offset;
  if (have == h->data_bytes) return PD_OK;
  pd_dims_str(h->ndim, h->dims, db, sizeof db);
  if (have < h->data_bytes)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: truncated: shape %s of %s needs %llu bytes of data from byte %llu, but the file has %llu",
                     name, db, type_name(h->type), (unsigned long long)h->data_bytes,
                     (unsigned long long)h->data_offset, (unsigned long long)have);
  return pd_errorf(err, PD_ERR_INPUT,
                   "%s: the file is longer than its header says: shape %s of %s needs %llu bytes of data from "
                   "byte %llu, but the file has %llu",
                   name, db, type_name(h->type), (unsigned long long)h->data_bytes, (unsigned long long)h->data_offset,
                   (unsigned long long)have);
}

void pd_idx_decode(pd_idx_type type, const void *src, size_t n, void *dst) {
  const uint8_t *s = src;
  switch (type) {
  case PD_IDX_U8:
    memcpy(dst, src, n);
    break;
  case PD_IDX_I8:
    for (size_t i = 0; i < n; i++) ((int32_t *)dst)[i] = (int8_t)s[i];
    break;
  case PD_IDX_I16:
    for (size_t i = 0; i < n; i++) ((int32_t *)dst)[i] = (int16_t)(uint16_t)(s[2 * i] << 8 | s[2 * i + 1]);
    break;
  case PD_IDX_I32:
    for (size_t i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)be32(s + 4 * i);
    break;
  case PD_IDX_F32:
    for (size_t i = 0; i < n; i++) {
      uint32_t u = be32(s + 4 * i);
      memcpy((float *)dst + i, &u, 4);
    }
    break;
  case PD_IDX_F64:
    for (size_t i = 0; i < n; i++) {
      uint64_t u = be64(s + 8 * i);
      memcpy((double *)dst + i, &u, 8);
    }
    break;
  }
}

static pd_status parse_plain(const char *name, const uint8_t *b, size_t len, pd_tensor *out, pd_error *err) {
  pd_idx_header h;
  pd_status st = pd_idx_parse_header(name, b, len, &h, err);
  if (!st) st = pd_idx_check_file_size(name, &h, len, err);
  if (st) return st;
  out->dtype = h.dtype;
  if ((st = pd_tensor_set_dims(out, h.ndim, h.dims, err))) return st;
  if ((st = pd_tensor_alloc(out, err))) return st;
  pd_idx_decode(h.type, b + h.data_offset, (size_t)(h.data_bytes / h.elem_size), pd_tensor_data(out));
  return PD_OK;
}

pd_status pd_idx_parse(const char *name, const void *buf, size_t len, pd_tensor *out, pd_error *err) {
  pd_file_image img; /* borrows buf, or holds it inflated when it is gzip */
  pd_status st = pd_file_image_from_memory(name, buf, len, pd_idx_file_size, &img, err);
  if (st) return st;
  st = parse_plain(name, img.data, img.size, out, err);
  pd_file_image_close(&img);
  return st;
}

pd_status pd_idx_read(const char *path, pd_tensor *out, pd_error *err) {
  pd_file_image img;
  pd_status st = pd_file_image_open(path, pd_idx_file_size, &img, err);
  if (st) return st;
  st = parse_plain(path, img.data, img.size, out, err);
  pd_file_image_close(&img);
  return st;
}

pd_status pd_idx_read_header(const char *path, pd_idx_header *h, pd_error *err) {
  pd_file_image img;
  pd_status st = pd_file_image_open(path, NULL, &img, err);
  if (st) return st;
  if (pd_is_gzip(img.data, img.size)) {
    uint8_t *head;
    size_t n;
    st = pd_gunzip_head(path, img.data, img.size, 4 + 4 * PD_MAX_DIMS, &head, &n, err);
    if (!st) {
      st = pd_idx_parse_header(path, head, n, h, err);
      free(head);
    }
  } else {
    st = pd_idx_parse_header(path, img.data, img.size, h, err);
    if (!st) st = pd_idx_check_file_size(path, h, img.size, err);
  }
  pd_file_image_close(&img);
  return st;
}
