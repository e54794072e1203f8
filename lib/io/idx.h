/* idx.h — IDX files (the MNIST / Fashion-MNIST format), plain or gzip:
 * two zero bytes, an element type, the number of dims, the dims as
 * big-endian uint32, then big-endian elements. Read only. Element types map
 * to our dtypes: ubyte -> uint8; sbyte, short, int -> int32; float ->
 * float32; double -> float64. Safe to call from several threads at once. */
#ifndef PD_IDX_H
#define PD_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/tensor.h"

typedef enum pd_idx_type {
  PD_IDX_U8 = 0x08,
  PD_IDX_I8 = 0x09,
  PD_IDX_I16 = 0x0B,
  PD_IDX_I32 = 0x0C,
  PD_IDX_F32 = 0x0D,
  PD_IDX_F64 = 0x0E,
} pd_idx_type;

typedef struct pd_idx_header {
  pd_idx_type type;
  size_t elem_size; /* bytes per element in the file */
  pd_dtype dtype;   /* what the elements become */
  int ndim;
  int64_t dims[PD_MAX_DIMS];
  uint64_t data_offset; /* 4 + 4 * ndim */
  uint64_t data_bytes;  /* product of dims x elem_size */
} pd_idx_header;

/* Parses the header at the start of buf (the file's first len bytes; the
 * data need not be there). `name` is the file name used in messages. */
pd_status pd_idx_parse_header(const char *name, const void *buf, size_t len, pd_idx_header *h, pd_error *err);

/* Parses a whole IDX file in memory (plain or gzip) into out
 * (pd_tensor_init'ed); the data size must match the header exactly. */
pd_status pd_idx_parse(const char *name, const void *buf, size_t len, pd_tensor *out, pd_error *err);

/* Reads an IDX file (gzip detected by its magic bytes, not its name). */
pd_status pd_idx_read(const char *path, pd_tensor *out, pd_error *err);

/* Reads only the header; for an uncompressed file also checks the file size. */
pd_status pd_idx_read_header(const char *path, pd_idx_header *h, pd_error *err);

/* Converts n big-endian elements of the file's type to h->dtype's native
 * form (uint8, int32, float32 or float64). */
void pd_idx_decode(pd_idx_type type, const void *src, size_t n, void *dst);

/* Checks that a file of file_size bytes holds exactly the data the header
 * describes (the message says truncated, or longer than its header says). */
pd_status pd_idx_check_file_size(const char *name, const pd_idx_header *h, uint64_t file_size, pd_error *err);

/* The exact size an IDX file with this header must have; a pd_size_fn. */
pd_status pd_idx_file_size(const char *name, const uint8_t *head, size_t len, uint64_t *total, pd_error *err);

#endif
