/* util.h — small helpers with no better home: reading a whole file, what
 * the CPU can run. */
#ifndef PD_UTIL_H
#define PD_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Reads all of `path` ("-" = stdin) into a malloc'd, NUL-terminated buffer;
 * a file (or stream, e.g. /dev/zero) longer than max_bytes is refused. */
pd_status pd_read_file(const char *path, size_t max_bytes, char **out, size_t *len, pd_error *err);

/* Whether a file could be created at `path` (its directory exists and is
 * writable; path is not a directory, socket, dangling symlink or one of
 * the run's inputs: pd_output_check), or a device or FIFO to write
 * through; creates nothing. */
pd_status pd_check_creatable(const char *path, pd_error *err);

/* The most a NetDesc text may hold: far above any real network. */
#define PD_NETDESC_MAX ((size_t)64 << 20)

/* The largest counts paddle-run takes from a flag, a NetDesc or a checkpoint
 * manifest: far beyond any real run, and small enough that every size and
 * step count computed from them fits its type (docs/training.md, "Limits"). */
#define PD_MAX_BATCH INT64_C(2147483647) /* rows in a batch: 2^31 - 1 */
#define PD_MAX_STEPS (INT64_C(1) << 53)  /* steps, epochs: a double holds them exactly */
#define PD_MAX_COUNT INT64_C(2147483647) /* --keep, desc --ranks, time's --iterations, --warmup */
#define PD_MAX_THREADS 4096              /* --threads */

/* Checked arithmetic: false on overflow (*out is then not the result). */
static inline bool pd_size_mul(size_t a, size_t b, size_t *out) { return !__builtin_mul_overflow(a, b, out); }
static inline bool pd_size_add(size_t a, size_t b, size_t *out) { return !__builtin_add_overflow(a, b, out); }
static inline bool pd_i64_mul(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }

/* malloc(n * size), NULL when the product overflows (or malloc fails);
 * at least one byte, so n == 0 is not a failure. */
void *pd_malloc_array(size_t n, size_t size);

/* The bytes of n elements of `size` each, or an "out of memory" error naming
 * `what` when the product does not fit in a size_t. */
pd_status pd_array_bytes(size_t n, size_t size, const char *what, size_t *bytes, pd_error *err);

/* This machine's physical memory in bytes; SIZE_MAX when it cannot be told. */
size_t pd_physical_memory(void);

/* `path` as seen from the directory of `base_file` (absolute paths and a
 * base in the current directory give `path` unchanged). Caller frees. */
char *pd_path_beside(const char *base_file, const char *path);

/* "nan", "inf" or "-inf" for a non-finite v (printf's %g gives "-nan" for
 * a NaN with its sign bit set, which a reader takes for something else). */
static inline const char *pd_nonfinite_str(double v) { return v != v ? "nan" : v > 0 ? "inf" : "-inf"; }

/* A malloc'd string of any length, formatted as printf would (NULL: out of
 * memory). For names, which are never cut short. */
char *pd_strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* FNV-1a hash of a string (the hash tables of names). */
uint64_t pd_hash_str(const char *s);

#endif
