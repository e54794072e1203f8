/* util.c — reading a whole file (or stdin) for the text-format commands. */
#include "base/util.h"

#include "base/fileutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

pd_status pd_read_file(const char *path, size_t max_bytes, char **out, size_t *len, pd_error *err) {
  *out = NULL;
  *len = 0;
  bool is_stdin = strcmp(path, "-") == 0;
  struct stat sb;
  /* a file, or a pipe (`<(...)`, read like stdin); never a device or
   * socket, whose reading could have no end or effects */
  if (!is_stdin && stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISFIFO(sb.st_mode))
    return pd_errorf(err, PD_ERR_INPUT, "%s: is %s, not a file; refusing to read it", path,
                     S_ISDIR(sb.st_mode)    ? "a directory"
                     : S_ISSOCK(sb.st_mode) ? "a socket"
                     : S_ISCHR(sb.st_mode)  ? "a character device"
                                            : "a block device");
  FILE *f = is_stdin ? stdin : fopen(path, "rb");
  if (!f) return pd_errorf(err, PD_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
  if (!is_stdin && fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode)) pd_input_note(path, &sb);
  char *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n + 1 >= cap) {
      size_t ncap = cap ? cap * 2 : 65536;
      char *nb = realloc(buf, ncap);
      if (!nb) {
        free(buf);
        if (!is_stdin) fclose(f);
        return pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory", path);
      }
      buf = nb;
      cap = ncap;
    }
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) break;
    if (n > max_bytes) {
      free(buf);
      if (!is_stdin) fclose(f);
      return pd_errorf(err, PD_ERR_INPUT, "%s: longer than %zu MiB; not a file paddle-run reads whole", path,
                       max_bytes >> 20);
    }
  }
  bool bad = ferror(f);
  if (!is_stdin) fclose(f);
  if (bad) {
    free(buf);
    return pd_errorf(err, PD_ERR_INPUT, "%s: read error", path);
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return PD_OK;
}

char *pd_path_beside(const char *base_file, const char *path) {
  const char *slash = strrchr(base_file, '/');
  if (path[0] == '/' || !slash) return strdup(path);
  size_t dir = (size_t)(slash - base_file), n = strlen(path);
  char *out = malloc(dir + 1 + n + 1);
  if (!out) return NULL;
  memcpy(out, base_file, dir);
  out[dir] = '/';
  memcpy(out + dir + 1, path, n + 1);
  return out;
}

pd_status pd_check_creatable(const char *path, pd_error *err) {
  pd_output_kind kind;
  char *dest = NULL;
  pd_status st = pd_output_check(path, "cannot save", &kind, &dest, err);
  if (st || kind == PD_OUT_THROUGH) {
    free(dest);
    return st; /* a device or FIFO is there to be written through */
  }
  /* a new or replaced file goes into dest's directory */
  const char *slash = strrchr(dest, '/');
  char dir[4096];
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == dest)
    snprintf(dir, sizeof dir, "/");
  else
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - dest), dest);
  free(dest);
  /* the messages match what the writer itself would say */
  struct stat sb;
  int e = 0;
  if (stat(dir, &sb) != 0)
    e = errno;
  else if (!S_ISDIR(sb.st_mode))
    e = ENOTDIR;
  else if (access(dir, W_OK) != 0)
    e = errno;
  if (e) return pd_errorf(err, PD_ERR_INPUT, "%s: cannot create: %s", path, strerror(e));
  return PD_OK;
}

void *pd_malloc_array(size_t n, size_t size) {
  size_t bytes;
  if (!pd_size_mul(n, size, &bytes)) return NULL;
  return malloc(bytes ? bytes : 1);
}

pd_status pd_array_bytes(size_t n, size_t size, const char *what, size_t *bytes, pd_error *err) {
  if (pd_size_mul(n, size, bytes)) return PD_OK;
  return pd_errorf(err, PD_ERR_RUNTIME,
                   "out of memory: %s would take %zu x %zu bytes, more than an address space holds", what, n, size);
}

size_t pd_physical_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  size_t bytes;
  if (pages <= 0 || page <= 0 || !pd_size_mul((size_t)pages, (size_t)page, &bytes)) return SIZE_MAX;
  return bytes;
}

uint64_t pd_hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

char *pd_strf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = n < 0 ? NULL : malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}
