/* textdata.h — a text corpus read directly as bytes, for language models
 * (a data binding of type "text", docs/training.md "Text data").
 *
 * Every file is read whole and its bytes mapped to ids through the
 * vocabulary (without one, id = byte). Each file is cut into windows of
 * T+1 bytes that overlap by one (window w of a file starts at byte w*T);
 * the windows of all files, in order, are cut into `streams` contiguous
 * streams of equal length (the rest dropped). Row k*streams + r of the data
 * is window k of stream r, so batch k of an unshuffled epoch holds window k
 * of every stream: consecutive batches continue each row's text, which is
 * what carrying a recurrent state across batches (truncated BPTT) needs.
 * A row's `keep` is 0 where its window starts a stream or a file (the state
 * carried in does not belong to it), 1 otherwise.
 *
 * held_out > 0 splits every file: its first bytes are the training part, its
 * last floor(size * held_out) the evaluation part; a pd_text is one part.
 * A pd_text does not change after open: any thread may read rows. */
#ifndef PD_TEXTDATA_H
#define PD_TEXTDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct pd_text pd_text;

enum { PD_TEXT_INPUT, PD_TEXT_TARGET, PD_TEXT_KEEP };

typedef struct pd_text_opts {
  const char *const *patterns; /* file names or glob patterns, in order */
  int npatterns;
  const char *vocab; /* vocabulary file, or NULL: ids are the bytes 0..255 */
  double held_out;   /* [0, 1): the tail of every file kept for evaluation */
  bool eval_part;    /* this pd_text is the evaluation part */
  int64_t streams;   /* the batch size */
  int64_t window;    /* T */
} pd_text_opts;

/* A vocabulary file: one entry a line, line i (from 0) giving the byte of id
 * i: the byte itself (any but newline and backslash), or an escape: \n \t
 * \r \\ or \xHH. Empty lines, two bytes on a line, a bad escape, a byte
 * given twice and a file without entries are refused (PD_ERR_INPUT) naming
 * name:line:col. On success map[b] is b's id or -1, bytes[i] the byte of id
 * i, *n the entry count. */
pd_status pd_vocab_parse(const char *name, const uint8_t *buf, size_t len, int16_t map[256], uint8_t bytes[256], int *n,
                         pd_error *err);
/* Writes a vocabulary in the format pd_vocab_parse reads. */
pd_status pd_vocab_write(const char *path, const uint8_t *bytes, int n, pd_error *err);

pd_status pd_text_open(const pd_text_opts *o, pd_text **out, pd_error *err);
/* The same over files in memory (tests, fuzzing): names[i] has bufs[i] of
 * lens[i] bytes; vocab (vocab_len bytes, named vocab_name) may be NULL. */
pd_status pd_text_open_memory(const char *const *names, const uint8_t *const *bufs, const size_t *lens, int nfiles,
                              const char *vocab_name, const uint8_t *vocab, size_t vocab_len, const pd_text_opts *o,
                              pd_text **out, pd_error *err);
pd_text *pd_text_ref(pd_text *t);
void pd_text_close(pd_text *t); /* drops a reference */

int64_t pd_text_rows(const pd_text *t);
int64_t pd_text_window(const pd_text *t);
/* The ids of every file, concatenated (for comparing data under mpirun). */
const uint8_t *pd_text_ids(const pd_text *t, size_t *len);
/* The vocabulary (NULL when ids are bytes); *n entries. */
const uint8_t *pd_text_vocab(const pd_text *t, int *n);
/* Row r's values for `role`: T int64 ids (input, target) or one float
 * (keep) into dst. r must be in [0, rows). */
void pd_text_row(const pd_text *t, int role, int64_t r, void *dst);

#endif
