/* checkpoint.c — saving and opening checkpoints (see checkpoint.h). A save
 * builds the whole checkpoint in a hidden temp directory, fsyncs it, renames
 * it into place and then swings the `latest` symlink, so at every moment
 * `latest` names a complete checkpoint. Opening treats every byte as
 * untrusted: the manifest, the file names it gives, the symlink, the .npy files. */
#include "io/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#include "base/fileutil.h"
#include "io/npy.h"
#include "paddle.pb-c.h"
#include "text/textformat.h"
#include "base/util.h"

#define MANIFEST "manifest.pbtxt"
#define LATEST "latest"
#define LOCK_FILE ".lock" /* a hidden name: listing, loading and pruning pass it by */
#define TMP_PREFIX ".tmp-"
#define FORMAT_VERSION 1
#define MANIFEST_MAX ((size_t)16 << 20) /* ~100k variables; more is a lie */
#define PLAIN_FILES_MAX 1000000
#define RM_DEPTH_MAX 8    /* temp trees we delete are one level deep */
#define FILE_NAME_MAX 255 /* NAME_MAX on every file system we target */

/* ---- small helpers ------------------------------------------------------------ */

static pd_status os_error(pd_error *err, int e, const char *path, const char *what) {
  char eb[128];
  return pd_errorf(err, pd_errno_status(e), "%s: %s: %s", path, what, pd_errno_str(e, eb, sizeof eb));
}

static pd_status oom(pd_error *err) { return pd_errorf(err, PD_ERR_RUNTIME, "checkpoint: out of memory"); }

/* Appends text to a message already set. */
static void error_append(pd_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void error_append(pd_error *err, const char *fmt, ...) {
  if (!err) return;
  size_t n = strnlen(err->msg, sizeof err->msg);
  if (n + 1 >= sizeof err->msg) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg + n, sizeof err->msg - n, fmt, ap);
  va_end(ap);
}

/* dir + "/" + name, without doubling a slash after "/". */
static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir);
  return pd_strf("%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
}

/* The path without trailing slashes ("ckpt/" -> "ckpt"; "/" stays). */
static char *trim_slashes(const char *path) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') n--;
  return strndup(path, n);
}

/* fsync of a directory makes renames and creations in it durable. Some file
 * systems refuse it (EINVAL); only a real I/O error counts. */
static pd_status fsync_dir(const char *dir, pd_error *err) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return os_error(err, errno, dir, "cannot open directory to sync it");
  int rc = fsync(fd), e = errno;
  close(fd);
  if (rc != 0 && e != EINVAL && e != EROFS) return os_error(err, e, dir, "cannot sync directory");
  return PD_OK;
}

/* Removes name (under parent_fd) and, for a directory, everything in it,
 * never following symlinks. Returns 0, or -1 with errno. */
static int rm_at(int parent_fd, const char *name, int depth) {
  struct stat sb;
  if (fstatat(parent_fd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(sb.st_mode)) return unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT ? 0 : -1;
  if (depth >= RM_DEPTH_MAX) {
    errno = ENOTEMPTY;
    return -1;
  }
  int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return -1;
  }
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (rm_at(dirfd(d), de->d_name, depth + 1) != 0) rc = -1;
  }
  closedir(d);
  if (rc == 0 && unlinkat(parent_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) rc = -1;
  return rc;
}

static int rm_tree(const char *path) { return rm_at(AT_FDCWD, path, 0); }

/* mkdir -p. */
static pd_status make_dirs(const char *dir, pd_error *err) {
  char *p = strdup(dir);
  if (!p) return oom(err);
  pd_status st = PD_OK;
  for (char *s = p + 1;; s++) {
    if (*s != '/' && *s != '\0') continue;
    char c = *s;
    *s = '\0';
    struct stat sb;
    if (mkdir(p, 0777) != 0) {
      int e = errno;
      if (e != EEXIST) {
        st = os_error(err, e, dir, "cannot create directory");
      } else if (stat(p, &sb) != 0) {
        st = os_error(err, errno, dir, "cannot create directory");
      } else if (!S_ISDIR(sb.st_mode) && c == '\0') {
        st = pd_errorf(err, PD_ERR_INPUT, "%s: exists and is not a directory", dir);
      } /* a file in the middle: the next mkdir says ENOTDIR */
    }
    *s = c;
    if (st || c == '\0') break;
  }
  free(p);
  return st;
}

/* `latest`, when present, must be our symlink: anything else there means dir
 * is not a save directory (or someone put a file there), so we stay away. */
static pd_status check_latest_slot(const char *dir, pd_error *err) {
  char *latest = join(dir, LATEST);
  if (!latest) return oom(err);
  struct stat sb;
  pd_status st = PD_OK;
  if (lstat(latest, &sb) == 0 && !S_ISLNK(sb.st_mode))
    st = pd_errorf(err, PD_ERR_INPUT, "%s: exists and is not a symlink; refusing to save checkpoints in %s", latest,
                   dir);
  free(latest);
  return st;
}

/* The target of dir/latest into buf, or "" when there is none. */
static void read_latest(const char *dir, char *buf, size_t size) {
  buf[0] = '\0';
  char *latest = join(dir, LATEST);
  if (!latest) return;
  ssize_t n = readlink(latest, buf, size - 1);
  buf[n > 0 ? (size_t)n : 0] = '\0';
  if (n >= (ssize_t)size - 1) buf[0] = '\0'; /* too long to be ours */
  free(latest);
}

/* ---- names ---------------------------------------------------------------- */

static bool plain_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '@' || c == '-';
}

/* "a/b" -> "a%2Fb.npy"; a leading '.' is escaped too, so no file is hidden
 * and none is "." or "..". */
static char *escape_name(const char *name) {
  size_t n = strlen(name);
  char *out = malloc(n * 3 + 5);
  if (!out) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)name[i];
    if (plain_char(c) && !(i == 0 && c == '.')) {
      out[o++] = (char)c;
    } else {
      static const char hex[] = "0123456789ABCDEF";
      out[o++] = '%';
      out[o++] = hex[c >> 4];
      out[o++] = hex[c & 15];
    }
  }
  memcpy(out + o, ".npy", 5);
  return out;
}

char *pd_checkpoint_file_name(const char *var) { return escape_name(var); }

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The first len bytes of a file name with %XX decoded; a name that is not a
 * valid escape (a stray '%', or %00) is taken literally. */
static char *unescape_name(const char *s, size_t len) {
  char *out = malloc(len + 1);
  if (!out) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] != '%') {
      out[o++] = s[i];
      continue;
    }
    int hi = i + 2 < len ? hexval(s[i + 1]) : -1, lo = hi >= 0 ? hexval(s[i + 2]) : -1;
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
      memcpy(out, s, len); /* not our escaping: the name is the file name */
      out[len] = '\0';
      return out;
    }
    out[o++] = (char)(hi << 4 | lo);
    i += 2;
  }
  out[o] = '\0';
  return out;
}

/* "step-" and 8+ digits; the step in *step. */
static bool parse_step_name(const char *name, int64_t *step) {
  if (strncmp(name, "step-", 5) != 0) return false;
  const char *d = name + 5;
  size_t n = strlen(d);
  if (n < 8) return false;
  int64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (d[i] < '0' || d[i] > '9') return false;
    if (v > (INT64_MAX - (d[i] - '0')) / 10) return false;
    v = v * 10 + (d[i] - '0');
  }
  *step = v;
  return true;
}

/* The pid at the end of ".tmp-...-PID", or 0. */
static long tmp_owner(const char *name) {
  if (strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0) return 0;
  const char *dash = strrchr(name, '-');
  if (!dash || !dash[1]) return 0;
  long v = 0;
  for (const char *p = dash + 1; *p; p++) {
    if (*p < '0' || *p > '9' || v > 100000000) return 0;
    v = v * 10 + (*p - '0');
  }
  return v;
}

static bool process_alive(long pid) { return kill((pid_t)pid, 0) == 0 || errno == EPERM; }

/* ---- writing ---------------------------------------------------------------- */

static pd_status write_all(int fd, const char *path, const void *buf, size_t len, uLong *crc, pd_error *err) {
  const unsigned char *p = buf;
  while (len > 0) {
    size_t chunk = len < ((size_t)1 << 30) ? len : (size_t)1 << 30;
    ssize_t w = write(fd, p, chunk);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return os_error(err, errno, path, "cannot write");
    if (w == 0) return pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot write: no progress", path);
    if (crc) *crc = crc32_z(*crc, p, (size_t)w);
    p += w;
    len -= (size_t)w;
  }
  return PD_OK;
}

/* Creates path (which must not exist), writes the pieces, fsyncs, closes. */
static pd_status write_new_file(const char *path, const void *a, size_t alen, const void *b, size_t blen, uLong *crc,
                                pd_error *err) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return os_error(err, errno, path, "cannot create");
  pd_status st = write_all(fd, path, a, alen, crc, err);
  if (!st && blen) st = write_all(fd, path, b, blen, crc, err);
  if (!st && fsync(fd) != 0) st = os_error(err, errno, path, "cannot sync");
  if (close(fd) != 0 && !st) st = os_error(err, errno, path, "cannot write");
  return st;
}

static pd_status write_var(const char *path, const pd_tensor *t, uint32_t *crc, uint64_t *bytes, pd_error *err) {
  char hdr[512];
  size_t hlen;
  pd_status st = pd_npy_encode_header(t->dtype, t->ndim, t->dims, hdr, sizeof hdr, &hlen, err);
  if (st) {
    pd_error_prefix(err, "%s", path);
    return st;
  }
  size_t n = pd_tensor_bytes(t);
  uLong c = crc32_z(0L, Z_NULL, 0);
  st = write_new_file(path, hdr, hlen, pd_tensor_data(t), n, &c, err);
  *crc = (uint32_t)c;
  *bytes = (uint64_t)hlen + n;
  return st;
}

/* Points dir/latest at target (a name inside dir) atomically. */
static pd_status set_latest(const char *dir, const char *target, pd_error *err) {
  char *tmp = pd_strf("%s/" TMP_PREFIX "latest-%ld", dir, (long)getpid());
  char *latest = join(dir, LATEST);
  pd_status st = PD_OK;
  if (!tmp || !latest) {
    st = oom(err);
    goto done;
  }
  unlink(tmp);
  if (symlink(target, tmp) != 0) {
    st = os_error(err, errno, latest, "cannot create symlink");
    goto done;
  }
  if (rename(tmp, latest) != 0) {
    st = os_error(err, errno, latest, "cannot update symlink");
    unlink(tmp);
    goto done;
  }
  st = fsync_dir(dir, err);
done:
  free(tmp);
  free(latest);
  return st;
}

/* Best effort: `latest` back to what it was before a failed save ("":
 * none). Also after a failed set_latest, whose rename may have happened. */
static void restore_latest(const char *dir, const char *old_target) {
  if (old_target[0]) {
    set_latest(dir, old_target, NULL);
  } else {
    char *latest = join(dir, LATEST);
    if (latest) unlink(latest);
    free(latest);
  }
}

/* Swaps two directory entries in one step (Linux renameat2 RENAME_EXCHANGE);
 * -1 with errno EINVAL/ENOSYS where the file system cannot. */
static int exchange(const char *a, const char *b) {
#ifdef SYS_renameat2
  return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 2 /* RENAME_EXCHANGE */);
#else
  (void)a, (void)b;
  errno = ENOSYS;
  return -1;
#endif
}

/* Moves the finished temp directory to final. When final already exists (an
 * earlier run saved this step), the two are exchanged atomically, so
 * `latest` -- whether it names final or another step -- is never without a
 * complete checkpoint, and never goes back to an older one; the old contents
 * end up at `aside`, to delete once `latest` names final (*moved_aside).
 * Where the file system cannot exchange, `latest` stays on a complete
 * checkpoint at every moment: first the new one (tmp), then the old one moved
 * aside (briefly older than the newest), and the caller points it at final. */
static pd_status install(const char *dir, const char *tmp, const char *tmp_name, const char *final, const char *aside,
                         const char *aside_name, const char *old, bool *moved_aside, pd_error *err) {
  *moved_aside = false;
  pd_status st;
  if (rename(tmp, final) == 0) {
    if ((st = fsync_dir(dir, err))) rename(final, tmp); /* back, for the caller to remove */
    return st;
  }
  if (errno != EEXIST && errno != ENOTEMPTY)
    return os_error(err, errno, final, "cannot rename the new checkpoint into place");
  struct stat sb;
  if (lstat(final, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return pd_errorf(err, PD_ERR_INPUT, "%s: exists and is not a checkpoint directory", final);
  rm_tree(aside);
  if (exchange(tmp, final) == 0) {
    /* final holds the new checkpoint, tmp the old one */
    if ((st = fsync_dir(dir, err))) {
      exchange(tmp, final);
      return st;
    }
    if (rename(tmp, aside) != 0) return os_error(err, errno, tmp, "cannot move the old checkpoint aside");
    *moved_aside = true;
    return PD_OK;
  }
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
    return os_error(err, errno, final, "cannot exchange the old checkpoint for the new one");
  if ((st = set_latest(dir, tmp_name, err))) {
    restore_latest(dir, old); /* the link may have moved before the failure */
    return st;
  }
  rm_tree(aside);
  if (rename(final, aside) != 0) {
    st = os_error(err, errno, final, "cannot move the old checkpoint aside");
    restore_latest(dir, old);
    return st;
  }
  if ((st = fsync_dir(dir, err)) || (st = set_latest(dir, aside_name, err))) {
    rename(aside, final);
    restore_latest(dir, old);
    return st;
  }
  if (rename(tmp, final) != 0) {
    st = os_error(err, errno, final, "cannot rename the new checkpoint into place");
    rename(aside, final);
    restore_latest(dir, old);
    return st;
  }
  if ((st = fsync_dir(dir, err))) { /* a failing disk: undo, best effort */
    rename(final, tmp);
    rename(aside, final);
    restore_latest(dir, old);
    return st;
  }
  *moved_aside = true;
  return PD_OK;
}

typedef struct step_entry {
  int64_t step;
  char *name;
} step_entry;

static int step_desc(const void *a, const void *b) {
  const step_entry *x = a, *y = b;
  if (x->step != y->step) return x->step < y->step ? 1 : -1;
  return strcmp(x->name, y->name);
}

/* After a save of `step`: deletes checkpoints with a lower step beyond the
 * newest keep-1, and temp entries of dead processes (and our own: one saver
 * per directory). Never the target of `latest`. Best effort: the checkpoint
 * is saved, so a failure to tidy up is not reported. */
static void prune(const char *dir, int64_t step, int keep) {
  char target[PATH_MAX];
  read_latest(dir, target, sizeof target);
  DIR *d = opendir(dir);
  if (!d) return;
  step_entry *older = NULL;
  size_t n = 0, cap = 0;
  long me = (long)getpid();
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *name = de->d_name;
    if (!strcmp(name, target)) continue;
    long owner = tmp_owner(name);
    if (owner > 0) {
      if (owner == me || !process_alive(owner)) rm_at(dirfd(d), name, 0);
      continue;
    }
    int64_t s;
    struct stat sb;
    if (!parse_step_name(name, &s) || s >= step) continue;
    if (fstatat(dirfd(d), name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(sb.st_mode)) continue;
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      step_entry *g = realloc(older, nc * sizeof *g);
      if (!g) break;
      older = g;
      cap = nc;
    }
    older[n].step = s;
    if (!(older[n].name = strdup(name))) break;
    n++;
  }
  closedir(d);
  if (n) qsort(older, n, sizeof *older, step_desc);
  for (size_t i = 0; i < n; i++) {
    if (i + 1 >= (size_t)keep) {
      /* Renamed first, so a kill mid-delete leaves a temp name, not a
       * half-empty checkpoint that looks real. */
      char *from = join(dir, older[i].name);
      char *to = pd_strf("%s/" TMP_PREFIX "del-%s-%ld", dir, older[i].name, me);
      if (from && to && rename(from, to) == 0) rm_tree(to);
      free(from);
      free(to);
    }
    free(older[i].name);
  }
  free(older);
}

pd_status pd_checkpoint_check_writable(const char *dir, pd_error *err) {
  if (!dir || !dir[0]) return pd_errorf(err, PD_ERR_INPUT, "checkpoint directory: empty path");
  char *d = trim_slashes(dir);
  if (!d) return oom(err);
  pd_status st = make_dirs(d, err);
  if (!st) st = check_latest_slot(d, err);
  if (!st) {
    /* access() says yes to root on a read-only mount; creating a file is
     * the only honest test. */
    char *probe = pd_strf("%s/" TMP_PREFIX "probe-%ld", d, (long)getpid());
    if (!probe) {
      st = oom(err);
    } else {
      unlink(probe);
      int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd < 0) {
        st = os_error(err, errno, d, "directory is not writable");
      } else {
        if (write(fd, "", 1) != 1) st = os_error(err, errno, d, "directory is not writable");
        close(fd);
        unlink(probe);
      }
      free(probe);
    }
  }
  free(d);
  return st;
}

/* ---- one writer per directory ------------------------------------------------ */

struct pd_ckpt_lock {
  int fd;
  char *path;
};

/* The pid the holder wrote into the lock file, or 0. */
static long lock_holder(int fd) {
  char buf[32];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char *end;
  long pid = strtol(buf, &end, 10);
  return pid > 0 && (*end == '\n' || *end == '\0') ? pid : 0;
}

pd_status pd_checkpoint_lock(const char *dir, pd_ckpt_lock **out, pd_error *err) {
  *out = NULL;
  if (!dir || !dir[0]) return pd_errorf(err, PD_ERR_INPUT, "checkpoint directory: empty path");
  char *d = trim_slashes(dir);
  char *path = d ? join(d, LOCK_FILE) : NULL;
  pd_ckpt_lock *l = calloc(1, sizeof *l);
  pd_status st = PD_OK;
  if (!d || !path || !l) {
    st = oom(err);
    goto done;
  }
  /* A holder removes the file as it lets go, so the file we locked may be
   * gone or replaced by then: it is ours only while the path still names it. */
  for (int attempt = 0;; attempt++) {
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
      st = os_error(err, errno, path, "cannot open the lock file");
      break;
    }
    int e = flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno;
    /* a file system without locks (some network mounts): saved unguarded, as before */
    if (e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS) e = 0;
    if (e) {
      long pid = e == EWOULDBLOCK ? lock_holder(fd) : 0;
      close(fd);
      if (e != EWOULDBLOCK) {
        st = os_error(err, e, path, "cannot lock");
      } else if (pid) {
        st = pd_errorf(err, PD_ERR_INPUT,
                       "--save %s: another process (pid %ld) is saving checkpoints there; wait for it to end or "
                       "save into another directory",
                       d, pid);
      } else {
        st = pd_errorf(err, PD_ERR_INPUT,
                       "--save %s: another process is saving checkpoints there (it holds %s); wait for it to end or "
                       "save into another directory",
                       d, path);
      }
      break;
    }
    struct stat held, named;
    if (fstat(fd, &held) == 0 && stat(path, &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      char pid[32];
      int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
      if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        st = os_error(err, errno, path, "cannot write the lock file");
        close(fd);
        break;
      }
      l->fd = fd;
      l->path = path;
      path = NULL;
      *out = l;
      l = NULL;
      break;
    }
    close(fd);
    if (attempt == 100) {
      st = pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot lock: the file keeps being replaced", path);
      break;
    }
  }
done:
  free(l);
  free(path);
  free(d);
  return st;
}

void pd_checkpoint_unlock(pd_ckpt_lock *l) {
  if (!l) return;
  unlink(l->path); /* still holding it, so nobody else has it */
  close(l->fd);
  free(l->path);
  free(l);
}

pd_status pd_checkpoint_dir_holds(const char *dir, char *what, size_t size, pd_error *err) {
  what[0] = '\0';
  char *d = trim_slashes(dir);
  if (!d) return oom(err);
  char target[PATH_MAX];
  read_latest(d, target, sizeof target);
  if (target[0]) snprintf(what, size, "%s/%s -> %s", d, LATEST, target);
  free(d);
  return PD_OK;
}

static pd_status check_save_args(const pd_ckpt_var *vars, int n, const pd_ckpt_state *state, int keep, pd_error *err) {
  char db[160];
  if (!state) return pd_errorf(err, PD_ERR_INPUT, "checkpoint: no training state given");
  if (n < 0 || (n > 0 && !vars)) return pd_errorf(err, PD_ERR_INPUT, "checkpoint: bad variable count %d", n);
  if (keep < 1) return pd_errorf(err, PD_ERR_INPUT, "checkpoint: keep must be >= 1, got %d", keep);
  if (state->step < 0 || state->epoch < 0 || state->batch_in_epoch < 0 || state->batch_size < 0)
    return pd_errorf(err, PD_ERR_INPUT, "checkpoint: step, epoch and batch must be >= 0, got %lld, %lld, %lld",
                     (long long)state->step, (long long)state->epoch, (long long)state->batch_in_epoch);
  if (state->n_rng && !state->rng_state) return pd_errorf(err, PD_ERR_INPUT, "checkpoint: rng_state missing");
  for (int i = 0; i < n; i++) {
    const char *name = vars[i].name;
    const pd_tensor *t = vars[i].t;
    if (!name || !name[0]) return pd_errorf(err, PD_ERR_INPUT, "checkpoint: variable #%d has no name", i);
    if (strlen(name) * 3 + 4 > FILE_NAME_MAX) {
      char *esc = escape_name(name);
      size_t len = esc ? strlen(esc) : SIZE_MAX;
      free(esc);
      if (len > FILE_NAME_MAX)
        return pd_errorf(
            err, PD_ERR_INPUT,
            "checkpoint: variable \"%.60s...\" has too long a name for a file (%zu bytes escaped, at most %d)", name,
            len, FILE_NAME_MAX);
    }
    if (!t) return pd_errorf(err, PD_ERR_INPUT, "checkpoint: variable \"%s\" has no tensor", name);
    if ((unsigned)t->dtype >= PD_NUM_DTYPES)
      return pd_errorf(err, PD_ERR_INPUT, "checkpoint: variable \"%s\" has an unknown dtype %d", name, (int)t->dtype);
    if (t->place.kind != PD_CPU)
      return pd_errorf(err, PD_ERR_INPUT, "checkpoint: variable \"%s\" is not on the CPU; copy it there first", name);
    int64_t numel = pd_tensor_numel(t);
    size_t bytes = pd_tensor_bytes(t);
    if (t->ndim < 0 || t->ndim > PD_MAX_DIMS || numel < 0 || bytes == SIZE_MAX)
      return pd_errorf(err, PD_ERR_INPUT, "checkpoint: variable \"%s\" has no concrete shape (%s)", name,
                       pd_dims_str(t->ndim, t->dims, db, sizeof db));
    if (bytes > 0 && (!t->storage || !t->storage->data || t->storage->cap < bytes))
      return pd_errorf(err, PD_ERR_INPUT, "checkpoint: variable \"%s\" of shape %s has no data", name,
                       pd_dims_str(t->ndim, t->dims, db, sizeof db));
    for (int j = 0; j < i; j++)
      if (!strcmp(vars[j].name, name))
        return pd_errorf(err, PD_ERR_INPUT, "checkpoint: variable \"%s\" is given twice (#%d and #%d)", name, j, i);
  }
  return PD_OK;
}

/* Writes every file of the checkpoint into the (new, empty) directory tmp:
 * the variables, then the manifest, each fsync'd, then the directory. */
static pd_status write_contents(const char *tmp, const pd_ckpt_var *vars, int n, const pd_ckpt_state *state,
                                pd_error *err) {
  Paddle__CheckpointManifest m = PADDLE__CHECKPOINT_MANIFEST__INIT;
  Paddle__CheckpointFile *files = calloc((size_t)n + 1, sizeof *files);
  Paddle__CheckpointFile **fp = calloc((size_t)n + 1, sizeof *fp);
  int64_t *shapes = calloc((size_t)n * PD_MAX_DIMS + 1, sizeof *shapes);
  pd_buf text = {0};
  pd_status st = PD_OK;
  if (!files || !fp || !shapes) {
    st = oom(err);
    goto done;
  }
  for (int i = 0; i < n; i++) {
    const pd_tensor *t = vars[i].t;
    Paddle__CheckpointFile *f = &files[i];
    paddle__checkpoint_file__init(f);
    fp[i] = f;
    f->var = (char *)vars[i].name;
    if (!(f->file = escape_name(vars[i].name))) {
      st = oom(err);
      goto done;
    }
    char *path = join(tmp, f->file);
    if (!path) {
      st = oom(err);
      goto done;
    }
    f->has_dtype = 1;
    f->dtype = (Paddle__DataType)t->dtype;
    f->n_shape = (size_t)t->ndim;
    f->shape = shapes + (size_t)i * PD_MAX_DIMS;
    memcpy(f->shape, t->dims, sizeof(int64_t) * (size_t)t->ndim);
    f->has_crc32 = f->has_bytes = 1;
    st = write_var(path, t, &f->crc32, &f->bytes, err);
    free(path);
    if (st) goto done;
  }
  m.has_format_version = 1;
  m.format_version = FORMAT_VERSION;
  m.net = (char *)state->net;
  m.has_step = m.has_epoch = m.has_batch_in_epoch = m.has_seed = m.has_lr = 1;
  m.step = state->step;
  m.epoch = state->epoch;
  m.batch_in_epoch = state->batch_in_epoch;
  m.optimizer = (char *)state->optimizer;
  m.seed = state->seed;
  m.lr = state->lr;
  m.has_batch_size = state->batch_size > 0;
  m.batch_size = state->batch_size;
  m.n_rng_state = state->n_rng;
  m.rng_state = (uint64_t *)state->rng_state;
  m.has_plateau_lr = m.has_plateau_bad = state->has_plateau;
  m.has_plateau_best = state->has_plateau && isfinite(state->plateau_best);
  m.plateau_lr = state->plateau_lr, m.plateau_best = state->plateau_best, m.plateau_bad = state->plateau_bad;
  m.has_vocab = state->n_vocab > 0;
  m.vocab.len = state->n_vocab;
  m.vocab.data = (uint8_t *)state->vocab;
  m.n_file = (size_t)n;
  m.file = fp;
  if (pd_buf_printf(&text,
                    "# paddle-run checkpoint (paddle.CheckpointManifest); crc32 is zlib's, of the whole file\n")) {
    st = oom(err);
    goto done;
  }
  if ((st = pd_text_print(&m.base, 0, &text, err))) goto done;
  char *mpath = join(tmp, MANIFEST);
  if (!mpath) {
    st = oom(err);
    goto done;
  }
  st = write_new_file(mpath, text.data, text.len, NULL, 0, NULL, err);
  free(mpath);
  if (!st) st = fsync_dir(tmp, err);
done:
  if (files)
    for (int i = 0; i < n; i++) free(files[i].file);
  free(files);
  free(fp);
  free(shapes);
  pd_buf_free(&text);
  return st;
}

pd_status pd_checkpoint_save(const char *dir, const pd_ckpt_var *vars, int n, const pd_ckpt_state *state, int keep,
                             char *saved_path, size_t saved_size, pd_error *err) {
  if (!dir || !dir[0]) return pd_errorf(err, PD_ERR_INPUT, "checkpoint directory: empty path");
  pd_status st = check_save_args(vars, n, state, keep, err);
  if (st) return st;
  char *d = trim_slashes(dir);
  long pid = (long)getpid();
  char final_name[64], tmp_name[96], aside_name[96];
  snprintf(final_name, sizeof final_name, "step-%08lld", (long long)state->step);
  snprintf(tmp_name, sizeof tmp_name, TMP_PREFIX "%s-%ld", final_name, pid);
  snprintf(aside_name, sizeof aside_name, TMP_PREFIX "old-%s-%ld", final_name, pid);
  char *final = d ? join(d, final_name) : NULL;
  char *tmp = d ? join(d, tmp_name) : NULL;
  char *aside = d ? join(d, aside_name) : NULL;
  bool tmp_made = false, moved_aside = false;
  char prev[PATH_MAX]; /* what `latest` pointed at before */
  if (!final || !tmp || !aside) {
    st = oom(err);
    goto done;
  }
  if (saved_path && saved_size <= strlen(final)) {
    st = pd_errorf(err, PD_ERR_RUNTIME, "%s: path too long for the caller's buffer (%zu bytes)", final, saved_size);
    goto done;
  }
  if ((st = make_dirs(d, err)) || (st = check_latest_slot(d, err))) goto done;
  read_latest(d, prev, sizeof prev);
  rm_tree(tmp); /* left by an earlier process that had our pid */
  if (mkdir(tmp, 0777) != 0) {
    st = os_error(err, errno, tmp, "cannot create directory");
    goto done;
  }
  tmp_made = true;
  if ((st = write_contents(tmp, vars, n, state, err))) goto done;
  if ((st = install(d, tmp, tmp_name, final, aside, aside_name, prev, &moved_aside, err))) goto done;
  tmp_made = false; /* it is final now */
  if ((st = set_latest(d, final_name, err))) {
    /* The new checkpoint is complete but `latest` could not follow; take
     * it back out so the directory is as it was. After a replace, `latest`
     * stays on the old one, moved aside. */
    if (moved_aside) {
      error_append(err, "; %s is saved but %s/%s may still point at the one it replaced", final, d, LATEST);
    } else {
      restore_latest(d, prev);
      if (rename(final, aside) == 0) rm_tree(aside);
      error_append(err, "; checkpoint %s not saved", final);
    }
    goto done;
  }
  if (moved_aside) rm_tree(aside);
  prune(d, state->step, keep);
  if (saved_path) snprintf(saved_path, saved_size, "%s", final);
done:
  if (st && tmp_made) {
    rm_tree(tmp);
    error_append(err, "; checkpoint %s not saved", final);
  }
  free(d);
  free(final);
  free(tmp);
  free(aside);
  return st;
}

/* ---- opening ---------------------------------------------------------------- */

struct pd_checkpoint {
  char *dir;
  bool has_manifest;
  pd_ckpt_state state;
  char *net, *optimizer;
  uint64_t *rng;
  uint8_t *vocab;
  pd_ckpt_file *files;
  size_t n;
  const char **names;    /* files[i].var, in order */
  pd_ckpt_file **sorted; /* by var, for look-ups */
};

static int by_var(const void *a, const void *b) {
  return strcmp((*(pd_ckpt_file *const *)a)->var, (*(pd_ckpt_file *const *)b)->var);
}
static int by_file(const void *a, const void *b) {
  return strcmp((*(pd_ckpt_file *const *)a)->file, (*(pd_ckpt_file *const *)b)->file);
}

void pd_checkpoint_close(pd_checkpoint *ck) {
  if (!ck) return;
  for (size_t i = 0; i < ck->n; i++) {
    free((char *)ck->files[i].var);
    free((char *)ck->files[i].file);
    free((char *)ck->files[i].path);
  }
  free(ck->files);
  free(ck->names);
  free(ck->sorted);
  free(ck->net);
  free(ck->optimizer);
  free(ck->rng);
  free(ck->vocab);
  free(ck->dir);
  free(ck);
}

/* Builds the name list and the sorted index once files[] is filled. */
static pd_status index_files(pd_checkpoint *ck, pd_error *err) {
  ck->names = calloc(ck->n + 1, sizeof *ck->names);
  ck->sorted = calloc(ck->n + 1, sizeof *ck->sorted);
  if (!ck->names || !ck->sorted) return oom(err);
  for (size_t i = 0; i < ck->n; i++) {
    ck->names[i] = ck->files[i].var;
    ck->sorted[i] = &ck->files[i];
  }
  qsort(ck->sorted, ck->n, sizeof *ck->sorted, by_var);
  return PD_OK;
}

static uint32_t crc_of(const uint8_t *p, size_t n) { return (uint32_t)crc32_z(crc32_z(0L, Z_NULL, 0), p, n); }

static pd_status check_shape(const pd_ckpt_file *f, pd_dtype dtype, int ndim, const int64_t *dims, const char *said_by,
                             pd_error *err) {
  if (dtype == f->dtype && pd_dims_equal(ndim, dims, f->ndim, f->dims)) return PD_OK;
  char a[160], b[160];
  return pd_errorf(err, PD_ERR_INPUT, "%s: holds %s %s, but %s says %s %s", f->path, pd_dtype_name(dtype),
                   pd_dims_str(ndim, dims, a, sizeof a), said_by, pd_dtype_name(f->dtype),
                   pd_dims_str(f->ndim, f->dims, b, sizeof b));
}

/* A file the manifest lists: a regular file (not a symlink: nothing may
 * lead outside the directory) of the recorded size and crc32 whose npy
 * header agrees with the manifest. */
static pd_status verify_file(const pd_ckpt_file *f, bool has_bytes, pd_error *err) {
  struct stat sb;
  if (lstat(f->path, &sb) != 0) {
    int e = errno;
    if (e == ENOENT)
      return pd_errorf(err, PD_ERR_INPUT, "%s: missing (variable \"%s\" in %s)", f->path, f->var, MANIFEST);
    return os_error(err, e, f->path, "cannot open");
  }
  if (!S_ISREG(sb.st_mode))
    return pd_errorf(err, PD_ERR_INPUT, "%s: not a regular file (variable \"%s\" in %s)", f->path, f->var, MANIFEST);
  if (has_bytes && (uint64_t)sb.st_size != f->bytes)
    return pd_errorf(err, PD_ERR_INPUT, "%s: %lld bytes, but %s says %llu (file truncated or changed)", f->path,
                     (long long)sb.st_size, MANIFEST, (unsigned long long)f->bytes);
  pd_file_image img;
  pd_status st = pd_file_image_open(f->path, NULL, &img, err);
  if (st) return st;
  if (f->has_crc32) {
    uint32_t got = crc_of(img.data, img.size);
    if (got != f->crc32)
      st = pd_errorf(err, PD_ERR_INPUT, "%s: checksum mismatch (file changed or corrupt): expected 0x%08x, got 0x%08x",
                     f->path, (unsigned)f->crc32, (unsigned)got);
  }
  pd_npy_header h;
  if (!st) st = pd_npy_parse_header(f->path, img.data, img.size, &h, err);
  if (!st) st = pd_npy_check_file_size(f->path, &h, img.size, err);
  if (!st) st = check_shape(f, h.dtype, h.ndim, h.dims, MANIFEST, err);
  pd_file_image_close(&img);
  return st;
}

/* Reads a small text file (at most max bytes) without following a symlink.
 * O_NONBLOCK: a FIFO in its place opens at once (and is refused below)
 * instead of waiting for a writer forever. */
static pd_status read_small_file(const char *path, size_t max, char **out, size_t *len, pd_error *err) {
  *out = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && errno == ELOOP) return pd_errorf(err, PD_ERR_INPUT, "%s: is a symlink; expected a regular file", path);
  if (fd < 0 && errno == ENXIO) return pd_errorf(err, PD_ERR_INPUT, "%s: not a regular file (it is a socket)", path);
  if (fd < 0) return os_error(err, errno, path, "cannot open");
  struct stat sb;
  pd_status st = PD_OK;
  if (fstat(fd, &sb) != 0) {
    st = os_error(err, errno, path, "cannot stat");
  } else if (!S_ISREG(sb.st_mode)) {
    st = pd_errorf(err, PD_ERR_INPUT, "%s: not a regular file (it is %s)", path,
                   S_ISFIFO(sb.st_mode)   ? "a FIFO"
                   : S_ISSOCK(sb.st_mode) ? "a socket"
                   : S_ISDIR(sb.st_mode)  ? "a directory"
                                          : "a device");
  } else if ((uint64_t)sb.st_size > max) {
    st = pd_errorf(err, PD_ERR_INPUT, "%s: %lld bytes is too large for a checkpoint manifest (at most %zu)", path,
                   (long long)sb.st_size, max);
  } else {
    pd_input_note(path, &sb); /* no output of this run may replace it */
  }
  char *buf = NULL;
  size_t n = 0;
  if (!st && !(buf = malloc((size_t)sb.st_size + 1))) st = oom(err);
  while (!st && n < (size_t)sb.st_size) { /* a file that grows meanwhile is cut at its size */
    ssize_t r = read(fd, buf + n, (size_t)sb.st_size - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) st = os_error(err, errno, path, "cannot read");
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  if (st) {
    free(buf);
    return st;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return PD_OK;
}

/* Context for manifest messages that point at the source. */
typedef struct mfile {
  const char *path;
  const char *src;
  size_t len;
  pd_srcmap map;
} mfile;

static pd_status mfail(const mfile *mf, pd_error *err, const void *msg, const char *field, size_t index,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static pd_status mfail(const mfile *mf, pd_error *err, const void *msg, const char *field, size_t index,
                       const char *fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  int line = 0, col = 0;
  const ProtobufCFieldDescriptor *fd =
      field ? protobuf_c_message_descriptor_get_field_by_name(((const ProtobufCMessage *)msg)->descriptor, field)
            : NULL;
  if ((fd && pd_srcmap_find(&mf->map, msg, fd, index, &line, &col)) ||
      pd_srcmap_find(&mf->map, msg, NULL, 0, &line, &col))
    return pd_error_at(err, PD_ERR_INPUT, mf->path, mf->src, mf->len, line, col, "%s", text);
  return pd_errorf(err, PD_ERR_INPUT, "%s: %s", mf->path, text);
}

/* A file name from a manifest must name a file inside the directory. */
static const char *bad_file_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0) return "is empty";
  if (s[0] == '/') return "is an absolute path; it must be a plain name inside the checkpoint directory";
  if (strchr(s, '/')) return "contains '/'; it must be a plain name inside the checkpoint directory";
  if (s[0] == '.') return "starts with '.'; it must be a plain name inside the checkpoint directory";
  if (n > FILE_NAME_MAX) return "is too long";
  if (n < 5 || strcmp(s + n - 4, ".npy") != 0) return "does not end in .npy";
  return NULL;
}

/* The counters: >= 0, and no more than train itself ever reaches. */
static pd_status check_counters(const mfile *mf, const Paddle__CheckpointManifest *m, pd_error *err) {
  static const char *const counters[] = {"step", "epoch", "batch_in_epoch", "batch_size"};
  const int64_t values[] = {m->step, m->epoch, m->batch_in_epoch, m->batch_size};
  for (int i = 0; i < 4; i++)
    if (values[i] < 0)
      return mfail(mf, err, m, counters[i], 0, "%s must be >= 0, got %lld", counters[i], (long long)values[i]);
    else if (values[i] > PD_MAX_STEPS) /* what train itself never goes beyond */
      return mfail(mf, err, m, counters[i], 0, "%s must be at most %lld, got %lld", counters[i],
                   (long long)PD_MAX_STEPS, (long long)values[i]);
  return PD_OK;
}

/* The training state, copied out of the manifest (which is freed). */
static pd_status copy_state(pd_checkpoint *ck, const Paddle__CheckpointManifest *m, pd_error *err) {
  ck->state.step = m->step;
  ck->state.epoch = m->epoch;
  ck->state.batch_in_epoch = m->batch_in_epoch;
  ck->state.batch_size = m->batch_size;
  ck->state.seed = m->seed;
  ck->state.lr = m->lr;
  ck->state.has_plateau = m->has_plateau_lr;
  ck->state.plateau_lr = m->plateau_lr;
  ck->state.plateau_best = m->has_plateau_best ? m->plateau_best : INFINITY;
  ck->state.plateau_bad = m->plateau_bad;
  if ((m->net && !(ck->net = strdup(m->net))) || (m->optimizer && !(ck->optimizer = strdup(m->optimizer))) ||
      (m->n_rng_state && !(ck->rng = malloc(m->n_rng_state * sizeof *ck->rng))))
    return oom(err);
  if (m->n_rng_state) memcpy(ck->rng, m->rng_state, m->n_rng_state * sizeof *ck->rng);
  if (m->has_vocab && m->vocab.len) {
    bool seen[256] = {false}, twice = m->vocab.len > 256;
    for (size_t i = 0; i < m->vocab.len && !twice; i++) twice = seen[m->vocab.data[i]], seen[m->vocab.data[i]] = true;
    if (twice) /* ids must map back to bytes one to one */
      return pd_errorf(err, PD_ERR_INPUT, "%s/%s: vocab holds a byte twice; it lists each byte of the vocabulary once",
                       ck->dir, MANIFEST);
    if (!(ck->vocab = malloc(m->vocab.len))) return oom(err);
    memcpy(ck->vocab, m->vocab.data, m->vocab.len);
    ck->state.vocab = ck->vocab;
    ck->state.n_vocab = m->vocab.len;
  }
  ck->state.net = ck->net;
  ck->state.optimizer = ck->optimizer;
  ck->state.rng_state = ck->rng;
  ck->state.n_rng = m->n_rng_state;
  return PD_OK;
}

/* Entry i (from 0) of the manifest's file list, checked on its own. */
static pd_status check_entry(const mfile *mf, const Paddle__CheckpointFile *e, size_t i, pd_error *err) {
  const char *why;
  if (!e->var[0]) return mfail(mf, err, e, "var", 0, "file #%zu: empty variable name", i + 1);
  if ((why = bad_file_name(e->file)))
    return mfail(mf, err, e, "file", 0, "file #%zu (variable \"%s\"): file name \"%s\" %s", i + 1, e->var, e->file,
                 why);
  if ((unsigned)e->dtype >= PD_NUM_DTYPES)
    return mfail(mf, err, e, "dtype", 0, "file #%zu (variable \"%s\"): unknown dtype %d", i + 1, e->var, (int)e->dtype);
  if (e->n_shape > PD_MAX_DIMS)
    return mfail(mf, err, e, "shape", PD_MAX_DIMS, "file #%zu (variable \"%s\"): %zu dims; at most %d", i + 1, e->var,
                 e->n_shape, PD_MAX_DIMS);
  int64_t numel;
  for (size_t j = 0; j < e->n_shape; j++)
    if (e->shape[j] < 0)
      return mfail(mf, err, e, "shape", j, "file #%zu (variable \"%s\"): dim %zu is %lld; dims must be >= 0", i + 1,
                   e->var, j, (long long)e->shape[j]);
  if (!pd_dims_product((int)e->n_shape, e->shape, &numel) ||
      (uint64_t)numel > UINT64_MAX / pd_dtype_size((pd_dtype)e->dtype))
    return mfail(mf, err, e, "shape", 0, "file #%zu (variable \"%s\"): shape has more elements than fit in 64 bits",
                 i + 1, e->var);
  return PD_OK;
}

/* Every entry checked and copied into ck->files, before touching the disk. */
static pd_status read_entries(pd_checkpoint *ck, const mfile *mf, const Paddle__CheckpointManifest *m, pd_error *err) {
  ck->files = calloc(m->n_file + 1, sizeof *ck->files);
  if (!ck->files) return oom(err);
  for (size_t i = 0; i < m->n_file; i++) {
    const Paddle__CheckpointFile *e = m->file[i];
    pd_ckpt_file *f = &ck->files[i];
    pd_status st = check_entry(mf, e, i, err);
    if (st) return st;
    f->var = strdup(e->var);
    f->file = strdup(e->file);
    f->path = join(ck->dir, e->file);
    ck->n = i + 1; /* so close() frees what was allocated */
    if (!f->var || !f->file || !f->path) return oom(err);
    f->dtype = (pd_dtype)e->dtype;
    f->ndim = (int)e->n_shape;
    if (e->n_shape) memcpy(f->dims, e->shape, e->n_shape * sizeof *f->dims);
    f->has_crc32 = e->has_crc32;
    f->crc32 = e->crc32;
    f->bytes = e->bytes;
  }
  return PD_OK;
}

/* A variable or a file listed twice, found by sorting: a lying manifest
 * may list a million entries. */
static pd_status check_duplicates(pd_checkpoint *ck, const mfile *mf, const Paddle__CheckpointManifest *m,
                                  pd_error *err) {
  pd_ckpt_file **tmp = calloc(ck->n + 1, sizeof *tmp);
  if (!tmp) return oom(err);
  pd_status st = PD_OK;
  for (int pass = 0; pass < 2 && !st; pass++) {
    for (size_t i = 0; i < ck->n; i++) tmp[i] = &ck->files[i];
    qsort(tmp, ck->n, sizeof *tmp, pass ? by_file : by_var);
    for (size_t i = 1; i < ck->n; i++) {
      if ((pass ? by_file : by_var)(&tmp[i - 1], &tmp[i]) != 0) continue;
      size_t a = (size_t)(tmp[i - 1] - ck->files), b = (size_t)(tmp[i] - ck->files);
      if (a > b) {
        size_t t = a;
        a = b;
        b = t;
      }
      st = pass ? mfail(mf, err, m->file[b], "file", 0, "file #%zu uses file \"%s\" again (after file #%zu)", b + 1,
                        ck->files[b].file, a + 1)
                : mfail(mf, err, m->file[b], "var", 0, "file #%zu lists variable \"%s\" again (after file #%zu)", b + 1,
                        ck->files[b].var, a + 1);
      break;
    }
  }
  free(tmp);
  return st;
}

/* Each file on disk against its entry; its size where the entry gives none. */
static pd_status verify_files(pd_checkpoint *ck, const Paddle__CheckpointManifest *m, pd_error *err) {
  for (size_t i = 0; i < ck->n; i++) {
    const Paddle__CheckpointFile *e = m->file[i];
    pd_status st = verify_file(&ck->files[i], e->has_bytes, err);
    if (st) return st;
    if (!e->has_bytes) {
      struct stat sb;
      if (stat(ck->files[i].path, &sb) == 0) ck->files[i].bytes = (uint64_t)sb.st_size;
    }
  }
  return PD_OK;
}

static pd_status load_manifest(pd_checkpoint *ck, pd_error *err) {
  mfile mf = {0};
  char *path = join(ck->dir, MANIFEST), *text = NULL;
  Paddle__CheckpointManifest *m = NULL;
  pd_status st;
  if (!path) return oom(err);
  mf.path = path;
  if ((st = read_small_file(path, MANIFEST_MAX, &text, &mf.len, err))) goto done;
  mf.src = text;
  if ((st = pd_text_parse(&paddle__checkpoint_manifest__descriptor, text, mf.len, path, (ProtobufCMessage **)&m,
                          &mf.map, err)))
    goto done;
  if (m->has_format_version && m->format_version != FORMAT_VERSION) {
    st = mfail(&mf, err, m, "format_version", 0,
               "checkpoint format %d is not supported; this paddle-run reads format %d (written by a newer version?)",
               (int)m->format_version, FORMAT_VERSION);
    goto done;
  }
  if ((st = check_counters(&mf, m, err)) || (st = copy_state(ck, m, err)) || (st = read_entries(ck, &mf, m, err)) ||
      (st = check_duplicates(ck, &mf, m, err)) || (st = verify_files(ck, m, err)))
    goto done;
  st = index_files(ck, err);
done:
  if (m) protobuf_c_message_free_unpacked(&m->base, NULL);
  pd_srcmap_free(&mf.map);
  free(text);
  free(path);
  return st;
}

/* A directory of NAME.npy files with no manifest: every file is a variable,
 * named by its unescaped file name; the headers are checked now. */
static pd_status load_plain(pd_checkpoint *ck, pd_error *err) {
  DIR *d = opendir(ck->dir);
  if (!d) return os_error(err, errno, ck->dir, "cannot open directory");
  size_t cap = 0;
  bool has_steps = false;
  pd_status st = PD_OK;
  struct dirent *de;
  while (!st && (de = readdir(d)) != NULL) {
    const char *name = de->d_name;
    size_t len = strlen(name);
    int64_t s;
    if (parse_step_name(name, &s)) has_steps = true;
    if (name[0] == '.' || len <= 4 || strcmp(name + len - 4, ".npy") != 0) continue;
    struct stat sb;
    if (fstatat(dirfd(d), name, &sb, 0) != 0 || !S_ISREG(sb.st_mode)) continue;
    if (ck->n == PLAIN_FILES_MAX) {
      st = pd_errorf(err, PD_ERR_INPUT, "%s: more than %d .npy files", ck->dir, PLAIN_FILES_MAX);
      break;
    }
    if (ck->n == cap) {
      size_t nc = cap ? cap * 2 : 32;
      pd_ckpt_file *g = realloc(ck->files, nc * sizeof *g);
      if (!g) {
        st = oom(err);
        break;
      }
      ck->files = g;
      cap = nc;
    }
    pd_ckpt_file *f = &ck->files[ck->n++];
    memset(f, 0, sizeof *f);
    f->var = unescape_name(name, len - 4);
    f->file = strdup(name);
    f->path = join(ck->dir, name);
    f->bytes = (uint64_t)sb.st_size;
    if (!f->var || !f->file || !f->path) st = oom(err);
  }
  closedir(d);
  if (st) return st;
  if (ck->n == 0)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: no %s, no %s symlink and no .npy files: not a checkpoint or parameter directory%s", ck->dir,
                     MANIFEST, LATEST, has_steps ? " (it holds step-* directories; name one of them)" : "");
  return PD_OK;
}

static int plain_by_var(const void *a, const void *b) {
  return strcmp(((const pd_ckpt_file *)a)->var, ((const pd_ckpt_file *)b)->var);
}

static pd_status finish_plain(pd_checkpoint *ck, pd_error *err) {
  qsort(ck->files, ck->n, sizeof *ck->files, plain_by_var);
  for (size_t i = 1; i < ck->n; i++)
    if (!strcmp(ck->files[i - 1].var, ck->files[i].var))
      return pd_errorf(err, PD_ERR_INPUT, "%s: files %s and %s both hold variable \"%s\"", ck->dir,
                       ck->files[i - 1].file, ck->files[i].file, ck->files[i].var);
  for (size_t i = 0; i < ck->n; i++) {
    pd_ckpt_file *f = &ck->files[i];
    pd_npy_header h;
    pd_status st = pd_npy_read_header(f->path, &h, err);
    if (st) return st;
    f->dtype = h.dtype;
    f->ndim = h.ndim;
    memcpy(f->dims, h.dims, sizeof f->dims);
  }
  return index_files(ck, err);
}

/* Follows dir/latest, which must name a directory inside dir. */
static pd_status follow_latest(const char *dir, const char *latest, char **out, pd_error *err) {
  struct stat sb;
  char target[PATH_MAX];
  if (lstat(latest, &sb) != 0) return os_error(err, errno, latest, "cannot open");
  if (!S_ISLNK(sb.st_mode))
    return pd_errorf(err, PD_ERR_INPUT, "%s: not a symlink; expected a link to a checkpoint directory in %s", latest,
                     dir);
  ssize_t n = readlink(latest, target, sizeof target);
  if (n < 0) return os_error(err, errno, latest, "cannot read symlink");
  if ((size_t)n >= sizeof target) return pd_errorf(err, PD_ERR_INPUT, "%s: symlink target too long", latest);
  target[n] = '\0';
  if (n == 0 || strchr(target, '/') || !strcmp(target, ".") || !strcmp(target, ".."))
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: points at \"%s\", which is not a checkpoint directory inside %s; only a plain name "
                     "(step-NNNNNNNN) is followed",
                     latest, target, dir);
  char *path = join(dir, target);
  if (!path) return oom(err);
  pd_status st = PD_OK;
  if (lstat(path, &sb) != 0) {
    int e = errno;
    st = e == ENOENT ? pd_errorf(err, PD_ERR_INPUT, "%s: points at %s, which does not exist", latest, target)
                     : os_error(err, e, path, "cannot open");
  } else if (!S_ISDIR(sb.st_mode)) {
    st = pd_errorf(err, PD_ERR_INPUT, "%s: points at %s, which is not a directory", latest, target);
  }
  if (!st) {
    char *mp = join(path, MANIFEST);
    if (!mp) {
      st = oom(err);
    } else if (lstat(mp, &sb) != 0) {
      st = pd_errorf(err, PD_ERR_INPUT, "%s: points at %s, which has no %s (not a complete checkpoint)", latest, target,
                     MANIFEST);
    }
    free(mp);
  }
  if (st) {
    free(path);
    return st;
  }
  *out = path;
  return PD_OK;
}

pd_status pd_checkpoint_open(const char *path, pd_checkpoint **out, pd_error *err) {
  *out = NULL;
  if (!path || !path[0]) return pd_errorf(err, PD_ERR_INPUT, "checkpoint: empty path");
  pd_checkpoint *ck = calloc(1, sizeof *ck);
  char *base = trim_slashes(path), *manifest = NULL, *latest = NULL;
  pd_status st = PD_OK;
  struct stat sb;
  if (!ck || !base) {
    st = oom(err);
    goto done;
  }
  if (stat(base, &sb) != 0) {
    st = os_error(err, errno, base, "cannot open checkpoint");
    goto done;
  }
  if (!S_ISDIR(sb.st_mode)) {
    st = pd_errorf(err, PD_ERR_INPUT, "%s: not a directory; expected a checkpoint or parameter directory", base);
    goto done;
  }
  manifest = join(base, MANIFEST);
  latest = join(base, LATEST);
  if (!manifest || !latest) {
    st = oom(err);
    goto done;
  }
  if (lstat(manifest, &sb) == 0) {
    ck->dir = base;
    base = NULL;
    ck->has_manifest = true;
    st = load_manifest(ck, err);
  } else if (lstat(latest, &sb) == 0) {
    if (!(st = follow_latest(base, latest, &ck->dir, err))) {
      ck->has_manifest = true;
      st = load_manifest(ck, err);
    }
  } else {
    ck->dir = base;
    base = NULL;
    if (!(st = load_plain(ck, err))) st = finish_plain(ck, err);
  }
done:
  free(base);
  free(manifest);
  free(latest);
  if (st) {
    pd_checkpoint_close(ck);
    return st;
  }
  *out = ck;
  return PD_OK;
}

const char *pd_checkpoint_dir(const pd_checkpoint *ck) { return ck->dir; }
bool pd_checkpoint_has_manifest(const pd_checkpoint *ck) { return ck->has_manifest; }
const pd_ckpt_state *pd_checkpoint_state(const pd_checkpoint *ck) { return &ck->state; }

const char *const *pd_checkpoint_vars(const pd_checkpoint *ck, size_t *n) {
  *n = ck->n;
  return ck->names;
}

const pd_ckpt_file *pd_checkpoint_find(const pd_checkpoint *ck, const char *var) {
  pd_ckpt_file key = {.var = var}, *kp = &key;
  pd_ckpt_file **hit = ck->n ? bsearch(&kp, ck->sorted, ck->n, sizeof *ck->sorted, by_var) : NULL;
  return hit ? *hit : NULL;
}

pd_status pd_checkpoint_read(const pd_checkpoint *ck, const char *var, pd_tensor *out, pd_error *err) {
  const pd_ckpt_file *f = pd_checkpoint_find(ck, var);
  if (!f) {
    const char *near = pd_suggest(var, ck->names, ck->n);
    return pd_errorf(err, PD_ERR_INPUT, "%s: no variable \"%s\"%s%s%s", ck->dir, var, near ? " (did you mean \"" : "",
                     near ? near : "", near ? "\"?)" : "");
  }
  /* Checked again: the file may have changed since open. */
  pd_file_image img;
  pd_status st = pd_file_image_open(f->path, NULL, &img, err);
  if (st) return st;
  if (f->has_crc32) {
    uint32_t got = crc_of(img.data, img.size);
    if (got != f->crc32)
      st = pd_errorf(err, PD_ERR_INPUT, "%s: checksum mismatch (file changed or corrupt): expected 0x%08x, got 0x%08x",
                     f->path, (unsigned)f->crc32, (unsigned)got);
  }
  if (!st) st = pd_npy_parse(f->path, img.data, img.size, out, err);
  pd_file_image_close(&img);
  if (!st)
    st = check_shape(f, out->dtype, out->ndim, out->dims, ck->has_manifest ? MANIFEST : "its header at open", err);
  return st;
}

bool pd_checkpoint_is_in(const pd_checkpoint *ck, const char *dir) {
  char *parent = join(ck->dir, "..");
  struct stat a, b;
  bool in = parent && stat(parent, &a) == 0 && stat(dir, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
  free(parent);
  return in;
}
