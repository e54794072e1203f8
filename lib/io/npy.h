/* npy.h — NumPy .npy files: read (format versions 1.0, 2.0, 3.0; also
 * gzip-compressed) and write (1.0, or 2.0 when the header needs it, byte for
 * byte what numpy.save writes). Little-endian C-order float32, float64,
 * int32, int64 and uint8 only; anything else is refused with a message that
 * says what the file holds. Every function here is safe to call from
 * several threads at once. */
#ifndef PD_NPY_H
#define PD_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/tensor.h"

/* The longest header dict we accept. numpy's own limit is 10000 bytes; ours
 * has room to spare yet keeps a lying length field from costing memory. */
#define PD_NPY_HEADER_MAX 65536

typedef struct pd_npy_header {
  int major, minor; /* format version */
  pd_dtype dtype;
  int ndim;
  int64_t dims[PD_MAX_DIMS];
  uint64_t data_offset; /* where the array data starts: magic + length + dict */
  uint64_t data_bytes;  /* product of dims x dtype size */
} pd_npy_header;

/* Parses the header at the start of buf, which holds the file's first len
 * bytes (at least the whole header; the data need not be there). `name` is
 * the file name used in messages. */
pd_status pd_npy_parse_header(const char *name, const void *buf, size_t len, pd_npy_header *h, pd_error *err);

/* Parses a whole .npy file in memory (plain or gzip) into out, which must
 * have been pd_tensor_init'ed; the data size must match the header exactly.
 * The file reader uses this, and so does the fuzzer. */
pd_status pd_npy_parse(const char *name, const void *buf, size_t len, pd_tensor *out, pd_error *err);

/* Reads a .npy (or .npy.gz) file into out (pd_tensor_init'ed by the caller;
 * its storage is reused when large enough). */
pd_status pd_npy_read(const char *path, pd_tensor *out, pd_error *err);

/* Reads only the header, for shapes without data (and streaming readers).
 * For an uncompressed file also checks that the file size matches it. */
pd_status pd_npy_read_header(const char *path, pd_npy_header *h, pd_error *err);

/* The bytes numpy.save writes before the data of an array of this dtype and
 * shape, into buf (cap bytes; 512 is always enough for PD_MAX_DIMS dims). */
pd_status pd_npy_encode_header(pd_dtype dtype, int ndim, const int64_t *dims, char *buf, size_t cap, size_t *len,
                               pd_error *err);

/* Writes t (on the CPU, with a known shape) to path atomically: a crash or
 * an error leaves either the old file or the complete new one. */
pd_status pd_npy_write(const char *path, const pd_tensor *t, pd_error *err);

/* Checks that a file of file_size bytes holds exactly the data the header
 * describes (the message says truncated, or longer than its header says). */
pd_status pd_npy_check_file_size(const char *name, const pd_npy_header *h, uint64_t file_size, pd_error *err);

/* The exact size a .npy file with this header must have (data_offset +
 * data_bytes); a pd_size_fn for pd_gunzip and pd_file_image_open. */
pd_status pd_npy_file_size(const char *name, const uint8_t *head, size_t len, uint64_t *total, pd_error *err);

#endif
