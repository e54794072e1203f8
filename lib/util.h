/* util.h — small helpers with no better home: reading a whole file, what
 * the CPU can run. */
#ifndef PD_UTIL_H
#define PD_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

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

/* `path` as seen from the directory of `base_file` (absolute paths and a
 * base in the current directory give `path` unchanged). Caller frees. */
char *pd_path_beside(const char *base_file, const char *path);

/* Whether the CPU runs AVX-512F (the float kernels written for it check
 * this and fall back where it is false). Asked once, then cached.
 * PADDLE_RUN_AVX512=off says no (the tests run the fallbacks so). */
bool pd_cpu_avx512f(void);

#endif
