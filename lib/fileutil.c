/* fileutil.c — whole-file images (mmap, pipes, gzip through zlib) and atomic
 * writes, for the npy, IDX and data set modules. Sizes always come from a
 * format's header and are checked against the bytes really there before any
 * large allocation. */
#include "fileutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libdeflate.h>
#include <zlib.h>

/* strerror is not thread-safe; the data set reader may run on a prefetch thread. */
const char *pd_errno_str(int e, char *buf, size_t size) {
  if (strerror_r(e, buf, size) != 0) snprintf(buf, size, "error %d", e);
  return buf;
}

/* A path the user can fix (missing, not allowed, not a directory) is input;
 * anything else (EIO, ENOSPC, ENOMEM) is a failure while running. */
pd_status pd_errno_status(int e) {
  switch (e) {
  case ENOENT:
  case EACCES:
  case EPERM:
  case EISDIR:
  case ENOTDIR:
  case ELOOP:
  case ENAMETOOLONG:
  case EROFS:
  case EEXIST:
    return PD_ERR_INPUT;
  default:
    return PD_ERR_RUNTIME;
  }
}

bool pd_is_gzip(const void *buf, size_t len) {
  const uint8_t *b = buf;
  return len >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

/* ---- gzip ---------------------------------------------------------------- */

/* One inflation in progress. zlib counts input in uInt, so large inputs are
 * fed in slices; `pos` is how much of src has been handed to zlib. */
typedef struct gz_state {
  z_stream zs;
  const char *name;
  const uint8_t *src;
  size_t len, pos;
  bool ended; /* the last member ended and every input byte was used */
} gz_state;

static size_t gz_consumed(const gz_state *g) { return g->pos - g->zs.avail_in; }

static pd_status gz_init(gz_state *g, const char *name, const void *src, size_t len, pd_error *err) {
  memset(g, 0, sizeof *g);
  g->name = name;
  g->src = src;
  g->len = len;
  if (inflateInit2(&g->zs, 15 + 16) != Z_OK) /* 16: gzip wrapper only */
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot start zlib: out of memory", name);
  return PD_OK;
}

/* Inflates into dst until `want` bytes came out or the stream ended (*got
 * says how many). Concatenated members (what `cat a.gz b.gz` makes) are one
 * stream, as gunzip treats them. */
static pd_status gz_fill(gz_state *g, uint8_t *dst, size_t want, size_t *got, pd_error *err) {
  *got = 0;
  while (*got < want && !g->ended) {
    if (g->zs.avail_in == 0 && g->pos < g->len) {
      size_t slice = g->len - g->pos;
      if (slice > UINT_MAX) slice = UINT_MAX;
      g->zs.next_in = (Bytef *)(g->src + g->pos); /* zlib does not write through it */
      g->zs.avail_in = (uInt)slice;
      g->pos += slice;
    }
    size_t chunk = want - *got;
    if (chunk > UINT_MAX) chunk = UINT_MAX;
    g->zs.next_out = dst + *got;
    g->zs.avail_out = (uInt)chunk;
    int rc = inflate(&g->zs, Z_NO_FLUSH);
    *got += chunk - g->zs.avail_out;
    if (rc == Z_STREAM_END) {
      size_t at = gz_consumed(g);
      if (at == g->len) {
        g->ended = true;
      } else if (pd_is_gzip(g->src + at, g->len - at)) {
        inflateReset(&g->zs); /* the next member */
      } else {
        return pd_errorf(err, PD_ERR_INPUT, "%s: %zu bytes of trailing data after the gzip stream, at byte %zu",
                         g->name, g->len - at, at);
      }
    } else if (rc == Z_BUF_ERROR) {
      /* No progress possible: the input ran out inside a member. */
      return pd_errorf(err, PD_ERR_INPUT,
                       "%s: gzip data is truncated: the compressed stream ends at byte %zu before its end", g->name,
                       g->len);
    } else if (rc == Z_MEM_ERROR) {
      return pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory inflating gzip data", g->name);
    } else if (rc != Z_OK) {
      return pd_errorf(err, PD_ERR_INPUT, "%s: corrupt gzip data near byte %zu: %s", g->name, gz_consumed(g),
                       g->zs.msg ? g->zs.msg : "inflate failed");
    }
  }
  return PD_OK;
}

pd_status pd_gunzip_head(const char *name, const void *src, size_t len, size_t max, uint8_t **out, size_t *out_len,
                         pd_error *err) {
  gz_state g;
  pd_status st = gz_init(&g, name, src, len, err);
  if (st) return st;
  uint8_t *buf = malloc(max ? max : 1);
  size_t got = 0;
  if (!buf) st = pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory", name);
  if (!st) st = gz_fill(&g, buf, max, &got, err);
  inflateEnd(&g.zs);
  if (st) {
    free(buf);
    return st;
  }
  *out = buf;
  *out_len = got;
  return PD_OK;
}

/* The fast path: libdeflate inflates whole members about twice as fast as
 * zlib (Fashion-MNIST's 47 MB of images: 69 ms against 140 ms here), but
 * only into a buffer of known size and with one word for every kind of bad
 * data. So it runs only once the header's promise is known and plausible,
 * and any trouble at all sends the file through the zlib path below, which
 * says exactly what is wrong. true: buf holds exactly `total` bytes and the
 * stream (every member) ended at the end of src. */
static bool gunzip_fast(const uint8_t *src, size_t len, uint8_t *buf, size_t total) {
  struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
  if (!d) return false;
  size_t at = 0, got = 0;
  bool ok = true;
  while (ok && at < len) {
    size_t in_used = 0, out_got = 0;
    ok = pd_is_gzip(src + at, len - at) &&
         libdeflate_gzip_decompress_ex(d, src + at, len - at, buf + got, total - got, &in_used, &out_got) ==
             LIBDEFLATE_SUCCESS &&
         in_used > 0;
    at += in_used;
    got += out_got;
  }
  libdeflate_free_decompressor(d);
  return ok && at == len && got == total;
}

/* Deflate cannot expand data more than 1032 to 1 (a 258-byte match in two
 * bits, whole), so a header promising more than that of the gzip data we
 * have is a lie: the fast path never allocates for it. */
#define PD_DEFLATE_MAX_RATIO 1032u

pd_status pd_gunzip(const char *name, const void *src, size_t len, pd_size_fn size_fn, uint8_t **out, size_t *out_len,
                    pd_error *err) {
  {
    uint8_t *head = NULL;
    size_t hlen = 0;
    uint64_t promise = 0;
    pd_error quiet = {0};
    bool fast = pd_gunzip_head(name, src, len, PD_HEAD_MAX, &head, &hlen, &quiet) == PD_OK &&
                size_fn(name, head, hlen, &promise, &quiet) == PD_OK && promise > 0 &&
                promise / PD_DEFLATE_MAX_RATIO <= len && promise <= SIZE_MAX;
    free(head);
    uint8_t *buf = fast ? malloc((size_t)promise) : NULL;
    if (buf && gunzip_fast(src, len, buf, (size_t)promise)) {
      *out = buf;
      *out_len = (size_t)promise;
      return PD_OK;
    }
    free(buf); /* bad or odd data: zlib below, slower, with the exact message */
  }
  gz_state g;
  pd_status st = gz_init(&g, name, src, len, err);
  if (st) return st;
  size_t cap = PD_HEAD_MAX, got = 0, n;
  uint8_t *buf = malloc(cap);
  uint64_t total = 0;
  if (!buf) {
    st = pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory", name);
    goto done;
  }
  /* The header first: it says how big the whole file is. */
  if ((st = gz_fill(&g, buf, cap, &got, err))) goto done;
  if ((st = size_fn(name, buf, got, &total, err))) goto done;
  if (total > SIZE_MAX) {
    st = pd_errorf(err, PD_ERR_INPUT, "%s: header promises %llu bytes, more than this machine can address", name,
                   (unsigned long long)total);
    goto done;
  }
  if (got > total) goto too_long;
  /* Grow with the data that really arrives (doubling, capped at the promise),
   * so a lying header over a small stream never costs its claimed size. */
  while (got < total && !g.ended) {
    size_t want = cap;
    if (got == cap) want = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
    if (want > total) want = (size_t)total;
    if (want != cap) {
      uint8_t *nb = realloc(buf, want);
      if (!nb) {
        st = pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory inflating %zu bytes", name, want);
        goto done;
      }
      buf = nb;
      cap = want;
    }
    if ((st = gz_fill(&g, buf + got, cap - got, &n, err))) goto done;
    got += n;
  }
  if (got < total) {
    st = pd_errorf(err, PD_ERR_INPUT, "%s: truncated: the header promises %llu bytes but the gzip data inflates to %zu",
                   name, (unsigned long long)total, got);
    goto done;
  }
  /* Run to the end of the stream: checks the CRC and that nothing follows. */
  while (!g.ended) {
    uint8_t extra;
    if ((st = gz_fill(&g, &extra, 1, &n, err))) goto done;
    if (n) goto too_long;
  }
  inflateEnd(&g.zs);
  *out = buf;
  *out_len = got;
  return PD_OK;
too_long:
  st = pd_errorf(err, PD_ERR_INPUT, "%s: the gzip data inflates to more than the %llu bytes its header promises", name,
                 (unsigned long long)total);
done:
  inflateEnd(&g.zs);
  free(buf);
  return st;
}

/* ---- file images ------------------------------------------------------------ */

static const uint8_t empty_file[1];

/* A pipe has no size to map; read it to its end. */
static pd_status read_all(const char *path, int fd, uint8_t **out, size_t *out_len, pd_error *err) {
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  char eb[128];
  if (!buf) return pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory", path);
  for (;;) {
    if (len == cap) {
      uint8_t *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        return pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory reading %zu bytes", path, len);
      }
      buf = nb;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      free(buf);
      return pd_errorf(err, pd_errno_status(e), "%s: cannot read: %s", path, pd_errno_str(e, eb, sizeof eb));
    }
    if (r == 0) break;
    len += (size_t)r;
  }
  *out = buf;
  *out_len = len;
  return PD_OK;
}

/* ---- the decoded-data cache (fileutil.h) ------------------------------------ */

#define PD_CACHE_MIN ((size_t)1 << 20) /* compressed bytes worth caching */
#define PD_CACHE_DATA 4096             /* the decoded bytes start a page in */

typedef struct cache_head {
  char magic[16]; /* "paddle-run cache" */
  uint64_t dev, ino, size, mtime_s, mtime_ns;
  uint32_t crc, isize; /* the source's gzip trailer */
  uint64_t len;        /* decoded bytes */
} cache_head;

static const char cache_magic[16] = {'p', 'a', 'd', 'd', 'l', 'e', '-', 'r', 'u', 'n', ' ', 'c', 'a', 'c', 'h', 'e'};

/* The directory (created when mk) and the copy's path for the file sb. */
static bool cache_path(const struct stat *sb, bool mk, char *path, size_t size) {
  const char *dir = getenv("PADDLE_RUN_CACHE");
  char base[PATH_MAX];
  if (dir && (!*dir || strcmp(dir, "off") == 0)) return false;
  if (!dir) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    bool in_home = !(xdg && *xdg == '/');
    int n;
    if (!in_home)
      n = snprintf(base, sizeof base, "%s/paddle-run", xdg);
    else if (home && *home == '/')
      n = snprintf(base, sizeof base, "%s/.cache/paddle-run", home);
    else
      return false;
    if (n < 0 || (size_t)n >= sizeof base) return false;
    if (mk && in_home) { /* ~/.cache itself may be missing */
      char *slash = strrchr(base, '/');
      *slash = '\0';
      (void)mkdir(base, 0700);
      *slash = '/';
    }
    dir = base;
  }
  if (mk) (void)mkdir(dir, 0700);
  int n =
      snprintf(path, size, "%s/%llx-%llx.data", dir, (unsigned long long)sb->st_dev, (unsigned long long)sb->st_ino);
  return n > 0 && (size_t)n < size;
}

static cache_head cache_head_of(const struct stat *sb, const uint8_t *gz, size_t gz_len, uint64_t len) {
  cache_head h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, cache_magic, sizeof h.magic);
  h.dev = (uint64_t)sb->st_dev, h.ino = (uint64_t)sb->st_ino, h.size = (uint64_t)sb->st_size;
  h.mtime_s = (uint64_t)sb->st_mtim.tv_sec, h.mtime_ns = (uint64_t)sb->st_mtim.tv_nsec;
  const uint8_t *t = gz + gz_len - 8; /* gzip's trailer: CRC-32 and size mod 2^32, little-endian */
  h.crc = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
  h.isize = (uint32_t)t[4] | (uint32_t)t[5] << 8 | (uint32_t)t[6] << 16 | (uint32_t)t[7] << 24;
  h.len = len;
  return h;
}

/* img holds the mapped gzip file sb: replaces it with a checked copy from
 * the cache; false (img unchanged) when there is none that checks out. */
static bool cache_load(const char *name, const struct stat *sb, pd_size_fn size_fn, pd_file_image *img) {
  char path[PATH_MAX];
  if (!img->map_ || img->size < PD_CACHE_MIN || !cache_path(sb, false, path, sizeof path)) return false;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat cs;
  void *map = MAP_FAILED;
  if (fstat(fd, &cs) == 0 && S_ISREG(cs.st_mode) && (uint64_t)cs.st_size > PD_CACHE_DATA &&
      (uint64_t)cs.st_size <= SIZE_MAX)
    map = mmap(NULL, (size_t)cs.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return false;
  size_t map_len = (size_t)cs.st_size, len = map_len - PD_CACHE_DATA;
  const uint8_t *data = (const uint8_t *)map + PD_CACHE_DATA;
  cache_head want = cache_head_of(sb, img->data, img->size, len), got;
  memcpy(&got, map, sizeof got);
  uint64_t total = 0;
  pd_error quiet = {0};
  bool ok = memcmp(&want, &got, sizeof want) == 0 && (uint32_t)len == want.isize &&
            size_fn(name, data, len < PD_HEAD_MAX ? len : PD_HEAD_MAX, &total, &quiet) == PD_OK && total == len &&
            (uint32_t)libdeflate_crc32(0, data, len) == want.crc;
  if (!ok) {
    munmap(map, map_len);
    return false;
  }
  pd_file_image_close(img);
  img->map_ = map;
  img->map_len_ = map_len;
  img->data = data;
  img->size = len;
  img->inflated = img->cached = true;
  return true;
}

/* Keeps the decoded bytes of the gzip file sb (one member: the trailer's
 * CRC-32 covers them all) for the next run; quietly does nothing on any
 * trouble. An atomic write (a reader never sees a part) without fsync: a
 * copy torn by a crash fails its CRC and is rewritten. */
static void cache_store(const struct stat *sb, const uint8_t *gz, size_t gz_len, const uint8_t *buf, size_t len) {
  char path[PATH_MAX];
  if (!S_ISREG(sb->st_mode) || gz_len < PD_CACHE_MIN || !cache_path(sb, true, path, sizeof path)) return;
  cache_head h = cache_head_of(sb, gz, gz_len, len);
  if ((uint32_t)len != h.isize || (uint32_t)libdeflate_crc32(0, buf, len) != h.crc) return; /* several members */
  uint8_t page[PD_CACHE_DATA] = {0};
  memcpy(page, &h, sizeof h);
  pd_atomic_file f;
  pd_error quiet = {0};
  if (pd_atomic_begin(&f, path, &quiet) == PD_OK && pd_atomic_write(&f, page, sizeof page, &quiet) == PD_OK &&
      pd_atomic_write(&f, buf, len, &quiet) == PD_OK)
    (void)pd_atomic_commit_unsynced(&f, &quiet); /* each step cleans up after itself when it fails */
}

static pd_status maybe_inflate(const char *name, pd_size_fn size_fn, const struct stat *sb, pd_file_image *img,
                               pd_error *err) {
  if (!size_fn || !pd_is_gzip(img->data, img->size)) return PD_OK;
  if (sb && cache_load(name, sb, size_fn, img)) return PD_OK;
#ifdef MADV_POPULATE_READ
  /* every compressed byte is read once, in order: map them all in one call
   * rather than fault page by page */
  if (img->map_) (void)madvise(img->map_, img->map_len_, MADV_POPULATE_READ);
#endif
  uint8_t *buf;
  size_t len;
  pd_status st = pd_gunzip(name, img->data, img->size, size_fn, &buf, &len, err);
  if (st) {
    pd_file_image_close(img);
    return st;
  }
  if (sb && img->map_) cache_store(sb, img->data, img->size, buf, len);
  pd_file_image_close(img); /* the compressed bytes are no longer needed */
  img->heap_ = buf;
  img->data = buf;
  img->size = len;
  img->inflated = true;
  return PD_OK;
}

pd_status pd_file_image_open(const char *path, pd_size_fn size_fn, pd_file_image *img, pd_error *err) {
  memset(img, 0, sizeof *img);
  char eb[128];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0) {
    int e = errno;
    /* a Unix socket cannot be opened (ENXIO): the path is wrong, not the machine */
    if (e == ENXIO && stat(path, &sb) == 0 && S_ISSOCK(sb.st_mode))
      return pd_errorf(err, PD_ERR_INPUT, "%s: is a socket, expected a data file (a regular file or a pipe)", path);
    return pd_errorf(err, pd_errno_status(e), "%s: cannot open: %s", path, pd_errno_str(e, eb, sizeof eb));
  }
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot stat: %s", path, pd_errno_str(e, eb, sizeof eb));
  }
  pd_status st = PD_OK;
  if (S_ISDIR(sb.st_mode)) {
    st = pd_errorf(err, PD_ERR_INPUT, "%s: is a directory, expected a data file", path);
  } else if (S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode)) {
    st = read_all(path, fd, &img->heap_, &img->size, err);
    img->data = img->heap_;
  } else if (!S_ISREG(sb.st_mode)) {
    st = pd_errorf(err, PD_ERR_INPUT, "%s: is not a regular file or a pipe", path);
  } else if ((uint64_t)sb.st_size > SIZE_MAX) {
    st =
        pd_errorf(err, PD_ERR_INPUT, "%s: %lld bytes is too large to map on this machine", path, (long long)sb.st_size);
  } else if (sb.st_size == 0) {
    img->data = empty_file; /* mmap refuses length 0 */
  } else {
    /* Note: a file truncated by someone else while mapped raises SIGBUS on
     * access; that is outside what a reader can defend against. */
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      int e = errno;
      st = pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot mmap: %s", path, pd_errno_str(e, eb, sizeof eb));
    } else {
      img->map_ = map;
      img->map_len_ = (size_t)sb.st_size;
      img->data = map;
      img->size = (size_t)sb.st_size;
    }
  }
  close(fd);
  if (st) {
    pd_file_image_close(img);
    return st;
  }
  return maybe_inflate(path, size_fn, S_ISREG(sb.st_mode) ? &sb : NULL, img, err);
}

pd_status pd_file_image_from_memory(const char *name, const void *buf, size_t len, pd_size_fn size_fn,
                                    pd_file_image *img, pd_error *err) {
  memset(img, 0, sizeof *img);
  img->data = len ? buf : empty_file;
  img->size = len;
  return maybe_inflate(name, size_fn, NULL, img, err);
}

void pd_file_image_close(pd_file_image *img) {
  if (img->map_) munmap(img->map_, img->map_len_);
  free(img->heap_);
  memset(img, 0, sizeof *img);
}

/* ---- atomic writes ------------------------------------------------------------ */

static atomic_uint tmp_counter;

pd_status pd_atomic_begin(pd_atomic_file *f, const char *path, pd_error *err) {
  f->fd = -1;
  f->tmp = NULL;
  f->path = NULL;
  char eb[128];
  size_t n = strlen(path);
  if (n == 0) return pd_errorf(err, PD_ERR_INPUT, "cannot write a file with an empty name");
  if (path[n - 1] == '/') return pd_errorf(err, PD_ERR_INPUT, "%s: is a directory name, expected a file", path);
  const char *slash = strrchr(path, '/');
  size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0; /* keeps the '/' */
  const char *base = path + dirlen;
  size_t cap = n + 64;
  f->path = strdup(path);
  f->tmp = malloc(cap);
  if (!f->path || !f->tmp) {
    pd_atomic_abort(f);
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory", path);
  }
  /* A hidden name beside the target (so rename stays in one file system),
   * created O_EXCL with mode 0666 so the umask applies as for any new file. */
  for (int tries = 0; tries < 100; tries++) {
    unsigned k = atomic_fetch_add(&tmp_counter, 1);
    snprintf(f->tmp, cap, "%.*s.%s.tmp-%ld-%u", (int)dirlen, path, base, (long)getpid(), k);
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (f->fd >= 0 || errno != EEXIST) break;
  }
  if (f->fd < 0) {
    int e = errno;
    free(f->tmp);
    f->tmp = NULL; /* nothing was created */
    pd_atomic_abort(f);
    return pd_errorf(err, pd_errno_status(e), "%s: cannot create: %s", path, pd_errno_str(e, eb, sizeof eb));
  }
  return PD_OK;
}

pd_status pd_atomic_write(pd_atomic_file *f, const void *buf, size_t len, pd_error *err) {
  const uint8_t *p = buf;
  char eb[128];
  if (f->fd < 0) return pd_errorf(err, PD_ERR_RUNTIME, "write to a file that is not open");
  while (len > 0) {
    ssize_t w = write(f->fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      int e = errno;
      pd_status st = pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot write: %s", f->path, pd_errno_str(e, eb, sizeof eb));
      pd_atomic_abort(f);
      return st;
    }
    p += w;
    len -= (size_t)w;
  }
  return PD_OK;
}

/* Closes the temp file and renames it over the target; with durable, an
 * fsync of the file first and of the directory after. */
static pd_status atomic_commit(pd_atomic_file *f, bool durable, pd_error *err) {
  char eb[128];
  if (f->fd < 0) return pd_errorf(err, PD_ERR_RUNTIME, "commit of a file that is not open");
  /* fsync before rename: otherwise a crash can leave the new name pointing
   * at a file whose data never reached the disk. */
  int rc = durable ? fsync(f->fd) : 0;
  int e = errno;
  if (close(f->fd) != 0 && rc == 0) {
    rc = -1;
    e = errno;
  }
  f->fd = -1;
  if (rc == 0 && rename(f->tmp, f->path) != 0) {
    rc = -1;
    e = errno;
  }
  if (rc != 0) {
    pd_status st = pd_errorf(err, pd_errno_status(e) == PD_ERR_INPUT ? PD_ERR_INPUT : PD_ERR_RUNTIME,
                             "%s: cannot save: %s", f->path, pd_errno_str(e, eb, sizeof eb));
    pd_atomic_abort(f);
    return st;
  }
  free(f->tmp);
  f->tmp = NULL;
  /* Make the rename itself durable. Some file systems refuse fsync on a
   * directory (EINVAL); only a real I/O error is worth failing for. */
  char *slash = strrchr(f->path, '/');
  if (!durable) {
    /* rc is 0: the rename went through */
  } else if (slash) {
    if (slash == f->path) slash++; /* "/name": the directory is "/" */
    char save = *slash;
    *slash = '\0';
    int dfd = open(f->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    *slash = save;
    rc = dfd >= 0 ? fsync(dfd) : 0;
    e = errno;
    if (dfd >= 0) close(dfd);
  } else {
    int dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    rc = dfd >= 0 ? fsync(dfd) : 0;
    e = errno;
    if (dfd >= 0) close(dfd);
  }
  pd_status st = PD_OK;
  if (rc != 0 && e == EIO)
    st = pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot sync its directory: %s", f->path, pd_errno_str(e, eb, sizeof eb));
  free(f->path);
  f->path = NULL;
  return st;
}

pd_status pd_atomic_commit(pd_atomic_file *f, pd_error *err) { return atomic_commit(f, true, err); }

pd_status pd_atomic_commit_unsynced(pd_atomic_file *f, pd_error *err) { return atomic_commit(f, false, err); }

void pd_atomic_abort(pd_atomic_file *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
  if (f->tmp) unlink(f->tmp);
  free(f->tmp);
  free(f->path);
  f->tmp = NULL;
  f->path = NULL;
}

pd_status pd_write_file_atomic(const char *path, const void *buf, size_t len, pd_error *err) {
  pd_atomic_file f;
  pd_status st = pd_atomic_begin(&f, path, err);
  if (!st) st = pd_atomic_write(&f, buf, len, err);
  if (!st) st = pd_atomic_commit(&f, err);
  return st;
}
