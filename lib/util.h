/* util.h — small helpers with no better home: reading a whole file. */
#ifndef PD_UTIL_H
#define PD_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Reads all of `path` ("-" = stdin) into a malloc'd, NUL-terminated buffer. */
pd_status pd_read_file(const char *path, char **out, size_t *len, pd_error *err);

/* `path` as seen from the directory of `base_file` (absolute paths and a
 * base in the current directory give `path` unchanged). Caller frees. */
char *pd_path_beside(const char *base_file, const char *path);

#endif
