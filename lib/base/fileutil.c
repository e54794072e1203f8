/* fileutil.c — whole-file images (mmap, pipes, gzip through zlib) and atomic
 * writes, for the npy, IDX and data set modules. Sizes always come from a
 * format's header and are checked against the bytes really there before any
 * large allocation. */
#include "base/fileutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
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
 * zlib, but only into a buffer of known size and with one word for every kind
 * of bad data. So it runs only once the header's promise is known and
 * plausible, and any trouble at all sends the file through the zlib path
 * below, which says exactly what is wrong. true: buf holds exactly `total`
 * bytes and the stream (every member) ended at the end of src. */
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

/* ---- inputs (fileutil.h) -------------------------------------------------------- */

typedef struct input_file {
  dev_t dev;
  ino_t ino;
  char *path;
} input_file;

static pthread_mutex_t inputs_lock = PTHREAD_MUTEX_INITIALIZER;
static input_file *inputs; /* the process's inputs, kept until it exits */
static size_t n_inputs, cap_inputs;

static atomic_bool tracking;

void pd_input_tracking(bool on) { atomic_store(&tracking, on); }

void pd_input_note(const char *path, const struct stat *sb) {
  if (!atomic_load(&tracking)) return;
  pthread_mutex_lock(&inputs_lock);
  bool known = false;
  for (size_t i = 0; i < n_inputs && !known; i++) known = inputs[i].dev == sb->st_dev && inputs[i].ino == sb->st_ino;
  if (!known && n_inputs == cap_inputs) {
    size_t nc = cap_inputs ? cap_inputs * 2 : 16;
    input_file *g = realloc(inputs, nc * sizeof *g);
    if (g) inputs = g, cap_inputs = nc;
  }
  char *copy = known || n_inputs == cap_inputs ? NULL : strdup(path);
  if (copy) inputs[n_inputs++] = (input_file){sb->st_dev, sb->st_ino, copy};
  pthread_mutex_unlock(&inputs_lock);
}

const char *pd_input_find(const struct stat *sb) {
  const char *hit = NULL;
  pthread_mutex_lock(&inputs_lock);
  for (size_t i = 0; i < n_inputs && !hit; i++)
    if (inputs[i].dev == sb->st_dev && inputs[i].ino == sb->st_ino) hit = inputs[i].path;
  pthread_mutex_unlock(&inputs_lock);
  return hit;
}

/* "a FIFO", "a socket", ... for messages. */
static const char *kind_of(mode_t m) {
  return S_ISDIR(m)    ? "a directory"
         : S_ISFIFO(m) ? "a FIFO (named pipe)"
         : S_ISSOCK(m) ? "a socket"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISLNK(m)  ? "a symlink"
                       : "a regular file";
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
  struct stat keep = img->sb_;
  pd_file_image_close(img);
  img->regular_ = true;
  img->sb_ = keep;
  img->map_ = map;
  img->map_len_ = map_len;
  img->data = data;
  img->size = len;
  img->inflated = img->cached = img->mapped = true;
  return true;
}

/* The cap on all copies together: PADDLE_RUN_CACHE_MAX (bytes, or with a K,
 * M or G suffix), else PD_CACHE_MAX_DEFAULT. */
static uint64_t cache_max(void) {
  const char *s = getenv("PADDLE_RUN_CACHE_MAX");
  if (!s || !*s) return PD_CACHE_MAX_DEFAULT;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift) end++;
  if (end == s || *end || errno || *s == '-') return PD_CACHE_MAX_DEFAULT;
  return v > (UINT64_MAX >> shift) ? UINT64_MAX : (uint64_t)v << shift;
}

typedef struct cache_entry {
  char name[64];
  uint64_t bytes;
  struct timespec mtime;
} cache_entry;

static int oldest_first(const void *a, const void *b) {
  const struct timespec *x = &((const cache_entry *)a)->mtime, *y = &((const cache_entry *)b)->mtime;
  return x->tv_sec != y->tv_sec     ? (x->tv_sec < y->tv_sec ? -1 : 1)
         : x->tv_nsec != y->tv_nsec ? (x->tv_nsec < y->tv_nsec ? -1 : 1)
                                    : 0;
}

/* Whether a copy of `need` bytes may go into the cache directory `dir` (as
 * `self`, which it replaces): it must fit under the cap together with the
 * other copies, of which the oldest are removed to make room, and leave the
 * file system PD_CACHE_FREE_MARGIN free. */
static bool cache_make_room(const char *dir, const char *self, uint64_t need) {
  uint64_t max = cache_max();
  if (need > max) return false;
  struct statvfs vs;
  if (statvfs(dir, &vs) != 0 || (uint64_t)vs.f_bavail * vs.f_frsize < need + PD_CACHE_FREE_MARGIN) return false;
  DIR *d = opendir(dir);
  if (!d) return false;
  cache_entry *e = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  struct dirent *de;
  bool ok = true;
  while (ok && (de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name);
    struct stat sb;
    if (de->d_name[0] == '.' || len < 6 || len >= sizeof e->name || strcmp(de->d_name + len - 5, ".data") != 0 ||
        strcmp(de->d_name, self) == 0 || fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(sb.st_mode))
      continue;
    if (n == cap) {
      cache_entry *g = realloc(e, (cap = cap ? cap * 2 : 16) * sizeof *g);
      if (!(ok = g != NULL)) break;
      e = g;
    }
    memcpy(e[n].name, de->d_name, len + 1);
    e[n].bytes = (uint64_t)sb.st_size;
    e[n].mtime = sb.st_mtim;
    total += e[n++].bytes;
  }
  if (ok && total + need > max) {
    qsort(e, n, sizeof *e, oldest_first);
    for (size_t i = 0; i < n && total + need > max; i++)
      if (unlinkat(dirfd(d), e[i].name, 0) == 0) total -= e[i].bytes;
    ok = total + need <= max;
  }
  closedir(d);
  free(e);
  return ok;
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
  char *slash = strrchr(path, '/');
  *slash = '\0';
  bool room = cache_make_room(path, slash + 1, PD_CACHE_DATA + (uint64_t)len);
  *slash = '/';
  if (!room) return;
  uint8_t page[PD_CACHE_DATA] = {0};
  memcpy(page, &h, sizeof h);
  pd_atomic_file f;
  pd_error quiet = {0};
  if (pd_atomic_begin(&f, path, &quiet) == PD_OK && pd_atomic_write(&f, page, sizeof page, &quiet) == PD_OK &&
      pd_atomic_write(&f, buf, len, &quiet) == PD_OK)
    (void)pd_atomic_commit_unsynced(&f, &quiet); /* each step cleans up after itself when it fails */
}

pd_status pd_file_image_inflate(const char *name, pd_size_fn size_fn, pd_file_image *img, pd_error *err) {
  if (!size_fn || !pd_is_gzip(img->data, img->size)) return PD_OK;
  const struct stat *sb = img->regular_ ? &img->sb_ : NULL;
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
  bool regular = img->regular_;
  struct stat keep = img->sb_;
  pd_file_image_close(img); /* the compressed bytes are no longer needed */
  img->regular_ = regular;
  img->sb_ = keep;
  img->heap_ = buf;
  img->data = buf;
  img->size = len;
  img->inflated = true;
  return PD_OK;
}

/* Opens path for reading without blocking on a FIFO and without opening
 * anything but a regular file (or, with pipes, a pipe): a device is never
 * opened at all (opening some has effects), and the type is checked again
 * on the open descriptor. */
static pd_status open_input(const char *path, bool pipes, int *fd_out, struct stat *sb, pd_error *err) {
  char eb[128];
  struct stat pre;
  *fd_out = -1;
  if (stat(path, &pre) != 0) {
    int e = errno;
    return pd_errorf(err, pd_errno_status(e), "%s: cannot open: %s", path, pd_errno_str(e, eb, sizeof eb));
  }
  bool pipe_ok = pipes && S_ISFIFO(pre.st_mode);
  if (S_ISDIR(pre.st_mode)) return pd_errorf(err, PD_ERR_INPUT, "%s: is a directory, expected a file", path);
  if (!S_ISREG(pre.st_mode) && !pipe_ok)
    return pd_errorf(err, PD_ERR_INPUT, "%s: is %s, not a regular file%s; refusing to read it", path,
                     kind_of(pre.st_mode), pipes ? " or a pipe" : "");
  /* A pipe the caller asked for is opened as `cat` would (waiting for its
   * writer); anything else never waits: if it turned into a FIFO since the
   * stat, O_NONBLOCK returns at once and the fstat below refuses it. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | (pipe_ok ? 0 : O_NONBLOCK));
  if (fd < 0) {
    int e = errno;
    return pd_errorf(err, pd_errno_status(e), "%s: cannot open: %s", path, pd_errno_str(e, eb, sizeof eb));
  }
  if (fstat(fd, sb) != 0) {
    int e = errno;
    close(fd);
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot stat: %s", path, pd_errno_str(e, eb, sizeof eb));
  }
  if (!S_ISREG(sb->st_mode) && !(pipes && S_ISFIFO(sb->st_mode))) {
    close(fd);
    return pd_errorf(err, PD_ERR_INPUT, "%s: is %s, not a regular file%s; refusing to read it", path,
                     kind_of(sb->st_mode), pipes ? " or a pipe" : "");
  }
  if (S_ISREG(sb->st_mode)) pd_input_note(path, sb);
  *fd_out = fd;
  return PD_OK;
}

pd_status pd_file_image_open_raw(const char *path, bool pipes, pd_file_image *img, pd_error *err) {
  memset(img, 0, sizeof *img);
  char eb[128];
  int fd;
  struct stat sb;
  pd_status st = open_input(path, pipes, &fd, &sb, err);
  if (st) return st;
  if (S_ISFIFO(sb.st_mode)) {
    st = read_all(path, fd, &img->heap_, &img->size, err);
    img->data = img->heap_;
  } else if ((uint64_t)sb.st_size > SIZE_MAX) {
    st =
        pd_errorf(err, PD_ERR_INPUT, "%s: %lld bytes is too large to map on this machine", path, (long long)sb.st_size);
  } else if (sb.st_size == 0) {
    img->data = empty_file; /* mmap refuses length 0 */
  } else {
    /* A file truncated by someone else while mapped raises SIGBUS on access:
     * `mapped` tells a reader to guard its reads (dataset.c does). */
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      int e = errno;
      st = pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot mmap: %s", path, pd_errno_str(e, eb, sizeof eb));
    } else {
      img->map_ = map;
      img->map_len_ = (size_t)sb.st_size;
      img->data = map;
      img->size = (size_t)sb.st_size;
      img->mapped = true;
    }
  }
  close(fd);
  if (st) {
    pd_file_image_close(img);
    return st;
  }
  if (S_ISREG(sb.st_mode)) {
    img->regular_ = true;
    img->sb_ = sb;
  }
  return PD_OK;
}

pd_status pd_file_image_open(const char *path, pd_size_fn size_fn, pd_file_image *img, pd_error *err) {
  pd_status st = pd_file_image_open_raw(path, false, img, err);
  return st ? st : pd_file_image_inflate(path, size_fn, img, err);
}

pd_status pd_file_image_from_memory(const char *name, const void *buf, size_t len, pd_size_fn size_fn,
                                    pd_file_image *img, pd_error *err) {
  memset(img, 0, sizeof *img);
  img->data = len ? buf : empty_file;
  img->size = len;
  return pd_file_image_inflate(name, size_fn, img, err);
}

void pd_file_image_close(pd_file_image *img) {
  if (img->map_) munmap(img->map_, img->map_len_);
  free(img->heap_);
  memset(img, 0, sizeof *img);
}

/* ---- outputs ------------------------------------------------------------------ */

pd_status pd_output_check(const char *path, const char *verb, pd_output_kind *kind, char **dest, pd_error *err) {
  char eb[128];
  struct stat lsb, sb;
  if (dest) *dest = NULL;
  *kind = PD_OUT_NEW;
  if (lstat(path, &lsb) != 0) goto found; /* nothing there (a bad directory is the writer's to report) */
  if (stat(path, &sb) != 0) {
    int e = errno;
    if (S_ISLNK(lsb.st_mode) && e == ENOENT)
      return pd_errorf(err, PD_ERR_INPUT, "%s: %s: it is a symlink to a missing file; not replacing the symlink", path,
                       verb);
    return pd_errorf(err, pd_errno_status(e), "%s: %s: %s", path, verb, pd_errno_str(e, eb, sizeof eb));
  }
  if (S_ISDIR(sb.st_mode))
    return pd_errorf(err, PD_ERR_INPUT, "%s: %s: %s", path, verb, pd_errno_str(EISDIR, eb, sizeof eb));
  if (!S_ISREG(sb.st_mode) && !S_ISCHR(sb.st_mode) && !S_ISFIFO(sb.st_mode))
    return pd_errorf(err, PD_ERR_INPUT, "%s: %s: it is %s, not a file to write", path, verb, kind_of(sb.st_mode));
  const char *in = pd_input_find(&sb);
  if (in)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: %s: it is one of this run's inputs (%s); an output never replaces an input", path, verb, in);
  *kind = S_ISREG(sb.st_mode) ? PD_OUT_REPLACE : PD_OUT_THROUGH;
  if (S_ISLNK(lsb.st_mode) && S_ISREG(sb.st_mode) && dest) {
    /* replace the file the symlink leads to, in its own directory */
    if (!(*dest = realpath(path, NULL))) {
      int e = errno;
      return pd_errorf(err, pd_errno_status(e), "%s: %s: %s", path, verb, pd_errno_str(e, eb, sizeof eb));
    }
    return PD_OK;
  }
found:
  if (dest && !(*dest = strdup(path))) return pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory", path);
  return PD_OK;
}

pd_status pd_output_open_stream(const char *what, const char *path, bool append, FILE **out, pd_error *err) {
  *out = NULL;
  pd_output_kind kind;
  const char *verb = "cannot open for writing";
  pd_status st = pd_output_check(path, verb, &kind, NULL, err);
  FILE *f = st ? NULL : fopen(path, append ? "a" : "w");
  /* stdio writes a stream itself: for a FIFO whose reader may leave,
   * SIGPIPE stays blocked in this thread from now on, so a write fails
   * with EPIPE, which the stream's checks report, instead of ending the
   * process (the signal stays pending, never delivered) */
  if (f && kind == PD_OUT_THROUGH) {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
  }
  if (!st && !f) {
    int e = errno;
    char eb[128];
    st = pd_errorf(err, pd_errno_status(e), "%s: %s: %s", path, verb, pd_errno_str(e, eb, sizeof eb));
  }
  if (st && what && err) { /* "--log PATH: ..." */
    size_t w = strlen(what) + 1, n = strnlen(err->msg, sizeof err->msg - 1);
    if (n + w >= sizeof err->msg) n = sizeof err->msg - 1 - w;
    memmove(err->msg + w, err->msg, n);
    memcpy(err->msg, what, w - 1);
    err->msg[w - 1] = ' ';
    err->msg[n + w] = '\0';
  }
  *out = f;
  return st;
}

/* ---- atomic writes ------------------------------------------------------------ */

static atomic_uint tmp_counter;

pd_status pd_atomic_begin(pd_atomic_file *f, const char *path, pd_error *err) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  char eb[128];
  size_t n = strlen(path);
  if (n == 0) return pd_errorf(err, PD_ERR_INPUT, "cannot write a file with an empty name");
  if (path[n - 1] == '/') return pd_errorf(err, PD_ERR_INPUT, "%s: is a directory name, expected a file", path);
  pd_output_kind kind;
  char *dest = NULL;
  pd_status st = pd_output_check(path, "cannot save", &kind, &dest, err);
  if (st) return st;
  f->dest_ = dest;
  if (!(f->path = strdup(path))) {
    pd_atomic_abort(f);
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory", path);
  }
  if (kind == PD_OUT_THROUGH) {
    /* a device or FIFO: never renamed over; plain writes, each checked (a
     * FIFO waits here for its reader, as a shell's `>` does) */
    f->fd = open(path, O_WRONLY | O_CLOEXEC);
    if (f->fd < 0) {
      int e = errno;
      pd_atomic_abort(f);
      return pd_errorf(err, pd_errno_status(e), "%s: cannot open for writing: %s", path,
                       pd_errno_str(e, eb, sizeof eb));
    }
    struct stat sb;
    if (fstat(f->fd, &sb) != 0 || (!S_ISCHR(sb.st_mode) && !S_ISFIFO(sb.st_mode))) {
      pd_atomic_abort(f); /* it changed meanwhile; nothing was written */
      return pd_errorf(err, PD_ERR_INPUT, "%s: cannot save: it changed while being opened", path);
    }
    f->fifo_ = S_ISFIFO(sb.st_mode);
    return PD_OK;
  }
  const char *slash = strrchr(dest, '/');
  size_t dirlen = slash ? (size_t)(slash - dest) + 1 : 0; /* keeps the '/' */
  const char *base = dest + dirlen;
  size_t cap = strlen(dest) + 64;
  if (!(f->tmp = malloc(cap))) {
    pd_atomic_abort(f);
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory", path);
  }
  /* A hidden name beside the target (so rename stays in one file system),
   * created O_EXCL with mode 0666 so the umask applies as for any new file. */
  for (int tries = 0; tries < 100; tries++) {
    unsigned k = atomic_fetch_add(&tmp_counter, 1);
    snprintf(f->tmp, cap, "%.*s.%s.tmp-%ld-%u", (int)dirlen, dest, base, (long)getpid(), k);
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

/* write(2) to a FIFO whose reader went away raises SIGPIPE, which would end
 * the process; held blocked around the write, EPIPE is an error like any. */
static ssize_t write_no_sigpipe(int fd, const void *p, size_t len) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigset_t pending;
  sigpending(&pending);
  bool was_pending = sigismember(&pending, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t w = write(fd, p, len);
  int e = errno;
  /* Linux raises it even for a write cut short (some bytes went, then the
   * reader left); the next write says EPIPE */
  sigpending(&pending);
  if (!was_pending && sigismember(&pending, SIGPIPE)) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = e;
  return w;
}

pd_status pd_atomic_write(pd_atomic_file *f, const void *buf, size_t len, pd_error *err) {
  const uint8_t *p = buf;
  char eb[128];
  if (f->fd < 0) return pd_errorf(err, PD_ERR_RUNTIME, "write to a file that is not open");
  while (len > 0) {
    ssize_t w = f->fifo_ ? write_no_sigpipe(f->fd, p, len) : write(f->fd, p, len);
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
 * fsync of the file first and of the directory after. Written through (a
 * device, a FIFO): only the close, whose error is reported too. */
static pd_status atomic_commit(pd_atomic_file *f, bool durable, pd_error *err) {
  char eb[128];
  if (f->fd < 0) return pd_errorf(err, PD_ERR_RUNTIME, "commit of a file that is not open");
  if (!f->tmp) {
    int rc = close(f->fd), e = errno;
    f->fd = -1;
    pd_status st =
        rc == 0 ? PD_OK
                : pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot write: %s", f->path, pd_errno_str(e, eb, sizeof eb));
    pd_atomic_abort(f);
    return st;
  }
  /* fsync before rename: otherwise a crash can leave the new name pointing
   * at a file whose data never reached the disk. */
  int rc = durable ? fsync(f->fd) : 0;
  int e = errno;
  if (close(f->fd) != 0 && rc == 0) {
    rc = -1;
    e = errno;
  }
  f->fd = -1;
  if (rc == 0 && rename(f->tmp, f->dest_) != 0) {
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
  char *slash = strrchr(f->dest_, '/');
  if (!durable) {
    /* rc is 0: the rename went through */
  } else if (slash) {
    if (slash == f->dest_) slash++; /* "/name": the directory is "/" */
    char save = *slash;
    *slash = '\0';
    int dfd = open(f->dest_, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
  pd_atomic_abort(f); /* frees the names; nothing is left to remove */
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
  free(f->dest_);
  f->tmp = f->path = f->dest_ = NULL;
}

pd_status pd_write_file_atomic(const char *path, const void *buf, size_t len, pd_error *err) {
  pd_atomic_file f;
  pd_status st = pd_atomic_begin(&f, path, err);
  if (!st) st = pd_atomic_write(&f, buf, len, err);
  if (!st) st = pd_atomic_commit(&f, err);
  return st;
}
