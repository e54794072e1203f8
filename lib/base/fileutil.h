/* fileutil.h — file helpers shared by the data readers and writers: a
 * read-only image of a whole file (mmap'd, or inflated into memory when it is
 * gzip), gzip inflation bounded by what the format's header promises, and
 * atomic writes (temp file + fsync + rename) so no reader ever sees half a file. */
#ifndef PD_FILEUTIL_H
#define PD_FILEUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "base/error.h"

/* strerror, thread-safe, into buf. */
const char *pd_errno_str(int e, char *buf, size_t size);
/* The status an errno means: a path the user can fix is PD_ERR_INPUT, the
 * rest (EIO, ENOSPC, ...) PD_ERR_RUNTIME. */
pd_status pd_errno_status(int e);

/* gzip's magic bytes (1f 8b) at the start of buf. */
bool pd_is_gzip(const void *buf, size_t len);

/* The most decompressed bytes a format may need to see before it knows from
 * its header how long the whole file is (npy: 12 + a 64 KiB dict). */
#define PD_HEAD_MAX ((size_t)1 << 17)

/* Told the first `len` decompressed bytes of a file (all of them when the
 * stream is shorter than PD_HEAD_MAX), sets *total to the exact size the whole
 * decompressed file must have, or fails with the format's own message about
 * a bad or truncated header. `name` is the file name for messages. */
typedef pd_status (*pd_size_fn)(const char *name, const uint8_t *head, size_t len, uint64_t *total, pd_error *err);

/* Inflates gzip data (one or more members) into a new malloc'd buffer that
 * the caller frees. The size comes from the header through size_fn; the
 * buffer grows with the data actually inflated, so a header that lies costs
 * no memory, and a stream that inflates to more or fewer bytes than promised
 * (a decompression bomb, a truncated file) is refused. */
pd_status pd_gunzip(const char *name, const void *src, size_t len, pd_size_fn size_fn, uint8_t **out, size_t *out_len,
                    pd_error *err);

/* Inflates at most `max` bytes from the start of gzip data, for reading a
 * header without inflating the whole file. *out is malloc'd (caller frees). */
pd_status pd_gunzip_head(const char *name, const void *src, size_t len, size_t max, uint8_t **out, size_t *out_len,
                         pd_error *err);

/* A whole file as bytes. Regular files are mmap'd read-only, so a data set
 * need not fit in memory; pipes are read into memory (only where the caller
 * accepts them). When size_fn is given and the file is gzip, `data` is the
 * inflated file instead (in memory, or a mapped copy from the cache).
 * Reading from several threads at once is safe: nothing changes after open. */
typedef struct pd_file_image {
  const uint8_t *data;
  size_t size;
  bool inflated; /* data came out of gzip */
  bool cached;   /* ... through the decoded-data cache (below) */
  bool mapped;   /* data is a mapping of a file, which may shrink under it (SIGBUS) */
  /* private */
  void *map_;
  size_t map_len_;
  uint8_t *heap_;
  bool regular_;
  struct stat sb_; /* the source, when regular_ */
} pd_file_image;

/* The decoded-data cache: inflating a large gzip data file is most of a run's
 * start-up. When a regular gzip file of at least 1 MiB inflates cleanly as one
 * member, its decoded bytes are kept in the cache directory, named by the
 * file's device and inode; a later open maps that copy instead, after checking
 * it: its header must match the file's size, modification time and gzip
 * trailer (CRC-32, size), and the copy's CRC-32 must equal the trailer's.
 * Anything else (or no copy) inflates as before and rewrites the copy. The
 * directory is $PADDLE_RUN_CACHE, else $XDG_CACHE_HOME/paddle-run, else
 * $HOME/.cache/paddle-run; PADDLE_RUN_CACHE=off (or empty) turns the cache
 * off. The copies together stay under PADDLE_RUN_CACHE_MAX bytes (default
 * 2 GiB; K, M, G suffixes; the oldest copies go first to make room), and a
 * copy is never written when it would leave the file system with less than
 * PD_CACHE_FREE_MARGIN free. Failing to write a copy is never an error;
 * deleting the directory is always safe. */
#define PD_CACHE_MAX_DEFAULT ((uint64_t)2 << 30)
#define PD_CACHE_FREE_MARGIN ((uint64_t)1 << 30)

/* Opens a file that must be regular (a checkpoint's files, parameters, a
 * manifest): anything else (a FIFO, a socket, a device, a directory) is
 * refused as bad input before it is opened for reading, so a FIFO never
 * blocks the run. */
pd_status pd_file_image_open(const char *path, pd_size_fn size_fn, pd_file_image *img, pd_error *err);
/* The file's bytes as they are on disk (not inflated), for reading a header
 * before deciding to inflate; `pipes` also accepts a pipe or FIFO (read to
 * its end, blocking like `cat` until its writer comes). */
pd_status pd_file_image_open_raw(const char *path, bool pipes, pd_file_image *img, pd_error *err);
/* Inflates an image opened raw when it is gzip (through the cache, for a
 * regular file); nothing when it is not. On failure the image is closed. */
pd_status pd_file_image_inflate(const char *name, pd_size_fn size_fn, pd_file_image *img, pd_error *err);
/* The same over bytes already in memory; the image borrows buf (which must
 * outlive it) unless it had to inflate it. */
pd_status pd_file_image_from_memory(const char *name, const void *buf, size_t len, pd_size_fn size_fn,
                                    pd_file_image *img, pd_error *err);
void pd_file_image_close(pd_file_image *img);

/* ---- inputs and outputs ----
 * Once tracking is on (the command-line tool turns it on for its one run),
 * every file read is noted (by device and inode: another name or a hard link
 * is the same file), so that no output overwrites an input (e.g. `train --log
 * net.pbtxt`). Off by default: a long-lived caller may well rewrite a file
 * it read before. */
void pd_input_tracking(bool on);
void pd_input_note(const char *path, const struct stat *sb);
/* The path an input was opened by, when sb is one of this process's inputs. */
const char *pd_input_find(const struct stat *sb);

/* What an output path is, before anything is written to it. */
typedef enum pd_output_kind {
  PD_OUT_NEW,     /* nothing there yet: created */
  PD_OUT_REPLACE, /* a regular file (maybe through symlinks): replaced atomically */
  PD_OUT_THROUGH, /* a character device or FIFO: written through, never renamed over */
} pd_output_kind;

/* Checks an output path: refuses (PD_ERR_INPUT, "PATH: VERB: why") a
 * directory, a socket, a block device, a symlink to nothing, and a file that
 * is one of the run's inputs. *dest (caller frees; may be NULL) is where a
 * new or replaced file goes: `path` itself, or the file a symlink leads to
 * (the symlink stays). */
pd_status pd_output_check(const char *path, const char *verb, pd_output_kind *kind, char **dest, pd_error *err);

/* A stream output (a log): checked as above, then opened for writing
 * (a regular file is truncated, or appended to with `append`; a device or
 * FIFO written through, with SIGPIPE blocked in the calling thread from
 * then on, so a reader that leaves is an EPIPE error, not the process's
 * end). The messages start with `what` (e.g. "--log"; may be NULL) and the
 * path. */
pd_status pd_output_open_stream(const char *what, const char *path, bool append, FILE **out, pd_error *err);

/* Atomic write: bytes go to a hidden temp file in the target's directory;
 * commit fsyncs it, renames it over `path` and fsyncs the directory. Any
 * failure (or abort) removes the temp file, so `path` holds either its old
 * contents or the complete new ones, never a part. A symlink is followed
 * (the file it leads to is replaced; the link stays); a character device or
 * FIFO (/dev/null, /dev/stdout, a named pipe) is written through, with every
 * error reported (/dev/full: "No space left on device"); other special files
 * and inputs of the run are refused (pd_output_check). */
typedef struct pd_atomic_file {
  int fd;
  char *path; /* as given, for messages */
  char *tmp;  /* NULL when writing through */
  /* private */
  char *dest_; /* the file renamed over */
  bool fifo_;
} pd_atomic_file;

pd_status pd_atomic_begin(pd_atomic_file *f, const char *path, pd_error *err);
/* On failure the temp file is already removed (no abort needed). */
pd_status pd_atomic_write(pd_atomic_file *f, const void *buf, size_t len, pd_error *err);
pd_status pd_atomic_commit(pd_atomic_file *f, pd_error *err);
/* The same without the fsyncs: while the machine runs, no reader sees a
 * part, but after a crash the file may hold less than was written. For
 * caches that check what they read (the decoded-data cache). */
pd_status pd_atomic_commit_unsynced(pd_atomic_file *f, pd_error *err);
/* Drops the temp file; safe to call after a failed write or commit. */
void pd_atomic_abort(pd_atomic_file *f);

/* begin + write + commit for a buffer already in memory. */
pd_status pd_write_file_atomic(const char *path, const void *buf, size_t len, pd_error *err);

#endif
