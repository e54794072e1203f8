/* textdata.c — text corpora as windows of ids (see textdata.h). */
#include "io/textdata.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileutil.h"
#include "base/util.h"

typedef struct text_file {
  char *name;
  size_t base;   /* where its ids start in ids */
  size_t lo, hi; /* this part's bytes of the file */
  int64_t first; /* its first window's number among all windows */
  int64_t nwin;
} text_file;

struct pd_text {
  int refs;
  text_file *files;
  int nfiles;
  uint8_t *ids;
  size_t nids;
  bool has_vocab;
  uint8_t vocab[256];
  int nvocab;
  int64_t streams, window, per_stream; /* per_stream: windows in each stream */
};

/* "'a'" or "0x0a" for a message. */
static const char *byte_str(uint8_t b, char *buf, size_t size) {
  if (b >= 0x20 && b < 0x7f && b != '\'')
    snprintf(buf, size, "'%c'", b);
  else
    snprintf(buf, size, "0x%02x", b);
  return buf;
}

static int hexval(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

pd_status pd_vocab_parse(const char *name, const uint8_t *buf, size_t len, int16_t map[256], uint8_t bytes[256], int *n,
                         pd_error *err) {
  int line_of[256];
  for (int i = 0; i < 256; i++) map[i] = -1;
  *n = 0;
  size_t i = 0;
  for (int line = 1; i < len; line++) {
    size_t start = i, end = i;
    while (end < len && buf[end] != '\n') end++;
    size_t l = end - start;
    const uint8_t *s = buf + start;
    int b = -1;
    if (l == 0)
      return pd_errorf(err, PD_ERR_INPUT,
                       "%s:%d:1: an empty line; each line holds one byte (itself, or \\n \\t \\r \\\\ \\xHH)", name,
                       line);
    if (s[0] != '\\') {
      if (l > 1)
        return pd_errorf(err, PD_ERR_INPUT, "%s:%d:2: more than one byte on a line; each line holds one byte", name,
                         line);
      b = s[0];
    } else if (l == 2 && (s[1] == 'n' || s[1] == 't' || s[1] == 'r' || s[1] == '\\')) {
      b = s[1] == 'n' ? '\n' : s[1] == 't' ? '\t' : s[1] == 'r' ? '\r' : '\\';
    } else if (l == 4 && s[1] == 'x' && hexval(s[2]) >= 0 && hexval(s[3]) >= 0) {
      b = hexval(s[2]) * 16 + hexval(s[3]);
    } else {
      return pd_errorf(err, PD_ERR_INPUT, "%s:%d:1: a bad escape; use \\n \\t \\r \\\\ or \\xHH (two hex digits)", name,
                       line);
    }
    if (map[b] >= 0) {
      char bb[16];
      return pd_errorf(err, PD_ERR_INPUT, "%s:%d:1: byte %s is already id %d (line %d)", name, line,
                       byte_str((uint8_t)b, bb, sizeof bb), map[b], line_of[b]);
    }
    map[b] = (int16_t)*n;
    line_of[b] = line;
    bytes[(*n)++] = (uint8_t)b;
    i = end + 1;
  }
  if (*n == 0) return pd_errorf(err, PD_ERR_INPUT, "%s: the vocabulary is empty; give one byte a line", name);
  return PD_OK;
}

pd_status pd_vocab_write(const char *path, const uint8_t *bytes, int n, pd_error *err) {
  FILE *f = fopen(path, "wb");
  if (!f) return pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot write: %s", path, strerror(errno));
  for (int i = 0; i < n; i++) {
    uint8_t b = bytes[i];
    if (b == '\n')
      fputs("\\n\n", f);
    else if (b == '\t')
      fputs("\\t\n", f);
    else if (b == '\r')
      fputs("\\r\n", f);
    else if (b == '\\')
      fputs("\\\\\n", f);
    else if (b < 0x20 || b >= 0x7f)
      fprintf(f, "\\x%02x\n", b);
    else
      fprintf(f, "%c\n", b);
  }
  bool bad = ferror(f) != 0;
  if (fclose(f) != 0) bad = true;
  return bad ? pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot write: %s", path, strerror(errno)) : PD_OK;
}

pd_text *pd_text_ref(pd_text *t) {
  t->refs++;
  return t;
}

void pd_text_close(pd_text *t) {
  if (!t || --t->refs > 0) return;
  for (int i = 0; i < t->nfiles; i++) free(t->files[i].name);
  free(t->files);
  free(t->ids);
  free(t);
}

/* The file's bytes as ids, appended; a byte outside the vocabulary is bad
 * input naming file, line:col and offset. */
static pd_status add_file(pd_text *t, const char *name, const uint8_t *buf, size_t len, const int16_t *map,
                          const char *vocab_name, pd_error *err) {
  text_file *nf = realloc(t->files, sizeof *nf * (size_t)(t->nfiles + 1));
  if (!nf) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  t->files = nf;
  uint8_t *ni = realloc(t->ids, t->nids + len + 1);
  if (!ni) return pd_errorf(err, PD_ERR_RUNTIME, "%s: out of memory for %zu bytes", name, len);
  t->ids = ni;
  for (size_t i = 0; i < len; i++) {
    int16_t id = map ? map[buf[i]] : buf[i];
    if (id < 0) {
      size_t line = 1, col = 1;
      for (size_t k = 0; k < i; k++) buf[k] == '\n' ? (line++, col = 1) : col++;
      char bb[16];
      return pd_errorf(err, PD_ERR_INPUT, "%s:%zu:%zu: byte %s at offset %zu is not in the vocabulary %s", name, line,
                       col, byte_str(buf[i], bb, sizeof bb), i, vocab_name);
    }
    t->ids[t->nids + i] = (uint8_t)id;
  }
  text_file *f = &t->files[t->nfiles];
  memset(f, 0, sizeof *f);
  if (!(f->name = strdup(name))) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  f->base = t->nids;
  f->hi = len;
  t->nids += len;
  t->nfiles++;
  return PD_OK;
}

/* Each file's part, its windows, and the streams. */
static pd_status layout(pd_text *t, const pd_text_opts *o, pd_error *err) {
  int64_t T = o->window, total = 0;
  size_t longest = 0;
  for (int i = 0; i < t->nfiles; i++) {
    text_file *f = &t->files[i];
    size_t len = f->hi, tail = (size_t)((double)len * o->held_out);
    if (tail > len) tail = len;
    f->lo = o->eval_part ? len - tail : 0;
    f->hi = o->eval_part ? len : len - tail;
    size_t n = f->hi - f->lo;
    if (n > longest) longest = n;
    f->nwin = n >= (size_t)T + 1 ? (int64_t)((n - 1) / (size_t)T) : 0;
    f->first = total;
    total += f->nwin;
  }
  t->per_stream = total / o->streams;
  if (t->per_stream > 0) return PD_OK;
  const char *part = o->held_out > 0 ? (o->eval_part ? "held-out part" : "training part") : "text";
  return pd_errorf(err, PD_ERR_INPUT,
                   "%s%s: the %s makes %lld window%s of %lld+1 bytes, fewer than the %lld streams (one a batch row) "
                   "need: give at least %lld bytes of %s (%lld streams x %lld + 1, in one file; the longest has %zu)%s",
                   t->files[0].name, t->nfiles > 1 ? " and the other files" : "", part, (long long)total,
                   total == 1 ? "" : "s", (long long)T, (long long)o->streams, (long long)(o->streams * T + 1), part,
                   (long long)o->streams, (long long)T, longest,
                   o->held_out > 0 ? "; held_out decides the parts' sizes" : "");
}

static pd_status check_opts(const pd_text_opts *o, pd_error *err) {
  if (o->streams <= 0 || o->window <= 0 || o->window > (int64_t)1 << 40 || o->streams > (int64_t)1 << 40)
    return pd_errorf(err, PD_ERR_INPUT, "text data needs a batch size and a window > 0");
  if (!(o->held_out >= 0 && o->held_out < 1))
    return pd_errorf(err, PD_ERR_INPUT, "text data: held_out must be in [0, 1), got %g", o->held_out);
  return PD_OK;
}

static pd_text *new_text(const pd_text_opts *o) {
  pd_text *t = calloc(1, sizeof *t);
  if (t) t->refs = 1, t->streams = o->streams, t->window = o->window;
  return t;
}

pd_status pd_text_open_memory(const char *const *names, const uint8_t *const *bufs, const size_t *lens, int nfiles,
                              const char *vocab_name, const uint8_t *vocab, size_t vocab_len, const pd_text_opts *o,
                              pd_text **out, pd_error *err) {
  *out = NULL;
  pd_status st = check_opts(o, err);
  if (st) return st;
  if (nfiles <= 0) return pd_errorf(err, PD_ERR_INPUT, "text data: no files");
  pd_text *t = new_text(o);
  if (!t) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  int16_t map[256];
  if (vocab) {
    st = pd_vocab_parse(vocab_name, vocab, vocab_len, map, t->vocab, &t->nvocab, err);
    t->has_vocab = true;
  }
  for (int i = 0; i < nfiles && !st; i++)
    st = add_file(t, names[i], bufs[i], lens[i], vocab ? map : NULL, vocab_name, err);
  if (!st) st = layout(t, o, err);
  if (st) {
    pd_text_close(t);
    return st;
  }
  *out = t;
  return PD_OK;
}

static bool is_pattern(const char *s) { return strpbrk(s, "*?[") != NULL; }

/* The file names the patterns give, in order (a glob's sorted). */
static pd_status expand(const pd_text_opts *o, char ***names, int *n, pd_error *err) {
  *names = NULL, *n = 0;
  for (int p = 0; p < o->npatterns; p++) {
    glob_t g = {0};
    const char *one = o->patterns[p];
    char *const *list = (char *const *)&one;
    size_t count = 1;
    if (is_pattern(one)) {
      int rc = glob(one, 0, NULL, &g);
      if (rc == GLOB_NOMATCH) return pd_errorf(err, PD_ERR_INPUT, "%s: no file matches the pattern", one);
      if (rc) return pd_errorf(err, PD_ERR_INPUT, "%s: cannot expand the pattern", one);
      list = g.gl_pathv, count = g.gl_pathc;
    }
    char **nn = realloc(*names, sizeof *nn * (*n + count + 1));
    if (!nn) {
      if (list != (char *const *)&one) globfree(&g);
      return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    }
    *names = nn;
    for (size_t i = 0; i < count; i++) (*names)[(*n)++] = strdup(list[i]);
    if (list != (char *const *)&one) globfree(&g);
  }
  for (int i = 0; i < *n; i++)
    if (!(*names)[i]) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  return PD_OK;
}

pd_status pd_text_open(const pd_text_opts *o, pd_text **out, pd_error *err) {
  *out = NULL;
  pd_status st = check_opts(o, err);
  if (st) return st;
  char **names;
  int n;
  pd_text *t = NULL;
  st = expand(o, &names, &n, err);
  if (!st && n == 0) st = pd_errorf(err, PD_ERR_INPUT, "text data: no files");
  if (!st && !(t = new_text(o))) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  int16_t map[256];
  if (!st && o->vocab) {
    pd_file_image img;
    st = pd_file_image_open_raw(o->vocab, true, &img, err);
    if (!st) {
      st = pd_vocab_parse(o->vocab, img.data, img.size, map, t->vocab, &t->nvocab, err);
      pd_file_image_close(&img);
    }
    t->has_vocab = true;
  }
  for (int i = 0; i < n && !st; i++) {
    pd_file_image img;
    st = pd_file_image_open_raw(names[i], true, &img, err);
    if (st) break;
    st = add_file(t, names[i], img.data, img.size, o->vocab ? map : NULL, o->vocab, err);
    pd_file_image_close(&img);
  }
  if (!st) st = layout(t, o, err);
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
  if (st) {
    pd_text_close(t);
    return st;
  }
  *out = t;
  return PD_OK;
}

int64_t pd_text_rows(const pd_text *t) { return t->per_stream * t->streams; }
int64_t pd_text_window(const pd_text *t) { return t->window; }
const uint8_t *pd_text_ids(const pd_text *t, size_t *len) {
  *len = t->nids;
  return t->ids;
}
const uint8_t *pd_text_vocab(const pd_text *t, int *n) {
  *n = t->has_vocab ? t->nvocab : 0;
  return t->has_vocab ? t->vocab : NULL;
}

void pd_text_row(const pd_text *t, int role, int64_t r, void *dst) {
  int64_t k = r / t->streams, s = r % t->streams, g = s * t->per_stream + k;
  int lo = 0, hi = t->nfiles - 1; /* the file whose windows hold g */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (t->files[mid].first <= g)
      lo = mid;
    else
      hi = mid - 1;
  }
  while (t->files[lo].nwin == 0 || g >= t->files[lo].first + t->files[lo].nwin) lo++; /* empty files share a first */
  const text_file *f = &t->files[lo];
  int64_t w = g - f->first;
  if (role == PD_TEXT_KEEP) {
    *(float *)dst = k == 0 || w == 0 ? 0.0f : 1.0f;
    return;
  }
  const uint8_t *src = t->ids + f->base + f->lo + (size_t)(w * t->window) + (role == PD_TEXT_TARGET);
  int64_t *d = dst;
  for (int64_t i = 0; i < t->window; i++) d[i] = src[i];
}
