/* error.h — errors as values. Every fallible function in lib/ returns a
 * pd_status and, on failure, fills a pd_error with a message a person can act
 * on ("net.pbtxt:12:7: unknown field ..."). lib/ never prints or exits; cmd/
 * decides what to show and maps the status to an exit code. */
#ifndef PD_ERROR_H
#define PD_ERROR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pd_status {
  PD_OK = 0,
  PD_ERR_RUNTIME = 1, /* a failure while running: I/O, NaN, out of memory */
  PD_ERR_INPUT = 2,   /* bad usage or bad input: file, flag, schema, shape */
} pd_status;

#define PD_ERROR_MAX 4096

typedef struct pd_error {
  pd_status status;
  char msg[PD_ERROR_MAX];
  int64_t row; /* a row of the batch the error is about (set after the message), else -1 */
} pd_error;

/* Sets err (if not NULL) to status and the formatted message; returns status
 * so callers can write `return pd_errorf(err, PD_ERR_INPUT, "...")`. */
pd_status pd_errorf(pd_error *err, pd_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
pd_status pd_verrorf(pd_error *err, pd_status status, const char *fmt, va_list ap);

/* Puts "prefix: " in front of an error already set (e.g. the op's name). */
void pd_error_prefix(pd_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void pd_error_clear(pd_error *err);

/* Builds "FILE:LINE:COL: message" and appends the quoted source line with a
 * caret under COL. `src`/`src_len` is the whole text (may be NULL). */
pd_status pd_error_at(pd_error *err, pd_status status, const char *file, const char *src, size_t src_len, int line,
                      int col, const char *fmt, ...) __attribute__((format(printf, 8, 9)));

/* The exit code cmd/ uses for a status. */
int pd_exit_code(pd_status status);

/* Did-you-mean: the candidate closest to `word` by edit distance, or NULL if
 * none is close enough to be a likely typo. */
const char *pd_suggest(const char *word, const char *const *candidates, size_t n);
size_t pd_edit_distance(const char *a, const char *b);

#ifdef __cplusplus
}
#endif

#endif
