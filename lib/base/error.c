/* error.c — formatting of pd_error messages, source carets, and the
 * did-you-mean helper shared by the parser, the validator and the CLI. */
#include "base/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pd_status pd_verrorf(pd_error *err, pd_status status, const char *fmt, va_list ap) {
  if (err) {
    err->status = status;
    err->row = -1;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  }
  return status;
}

pd_status pd_errorf(pd_error *err, pd_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pd_verrorf(err, status, fmt, ap);
  va_end(ap);
  return status;
}

void pd_error_prefix(pd_error *err, const char *fmt, ...) {
  if (!err) return;
  char prefix[512], old[PD_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, err->msg, sizeof old);
  size_t n = strlen(prefix);
  if (n + 2 >= sizeof err->msg) return;
  memcpy(err->msg, prefix, n);
  memcpy(err->msg + n, ": ", 2);
  size_t rest = strnlen(old, sizeof old - 1);
  if (rest > sizeof err->msg - n - 3) rest = sizeof err->msg - n - 3;
  memcpy(err->msg + n + 2, old, rest);
  err->msg[n + 2 + rest] = '\0';
}

void pd_error_clear(pd_error *err) {
  if (!err) return;
  err->status = PD_OK;
  err->row = -1;
  err->msg[0] = '\0';
}

pd_status pd_error_at(pd_error *err, pd_status status, const char *file, const char *src, size_t src_len, int line,
                      int col, const char *fmt, ...) {
  if (!err) return status;
  err->status = status;
  err->row = -1;
  size_t used = (size_t)snprintf(err->msg, sizeof err->msg, "%s:%d:%d: ", file ? file : "<input>", line, col);
  if (used >= sizeof err->msg) return status;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(err->msg + used, sizeof err->msg - used, fmt, ap);
  va_end(ap);
  if (n < 0) return status;
  used += (size_t)n;
  if (!src || line < 1 || used >= sizeof err->msg) return status;
  /* Find the line and quote it, with a caret under the column. */
  const char *p = src, *end = src + src_len;
  for (int l = 1; l < line && p < end; p++)
    if (*p == '\n') l++;
  const char *eol = p;
  while (eol < end && *eol != '\n') eol++;
  size_t len = (size_t)(eol - p);
  if (len > 200) len = 200; /* keep messages readable for minified input */
  char quoted[256];
  size_t q = 0;
  for (size_t i = 0; i < len; i++) quoted[q++] = (p[i] == '\t' || (unsigned char)p[i] < 32) ? ' ' : p[i];
  quoted[q] = '\0';
  int caret = col - 1;
  if (caret < 0) caret = 0;
  if ((size_t)caret > len) caret = (int)len;
  n = snprintf(err->msg + used, sizeof err->msg - used, "\n  %s\n  %*s^", quoted, caret, "");
  (void)n;
  return status;
}

int pd_exit_code(pd_status status) {
  switch (status) {
  case PD_OK:
    return 0;
  case PD_ERR_INPUT:
    return 2;
  default:
    return 1;
  }
}

/* Optimal string alignment distance: insertions, deletions, substitutions
 * and swaps of two neighbours ("inptus" -> "inputs", "sdg" -> "sgd") each
 * cost one. */
size_t pd_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return (size_t)-1;
  size_t d[65][65];
  for (size_t i = 0; i <= la; i++) d[i][0] = i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[la][lb];
}

/* A likely typo: within 1 edit for words of up to 3 letters, 2 up to 8, 3 beyond. */
const char *pd_suggest(const char *word, const char *const *candidates, size_t n) {
  const char *best = NULL;
  size_t best_d = (size_t)-1;
  size_t wl = strlen(word);
  for (size_t i = 0; i < n; i++) {
    size_t d = pd_edit_distance(word, candidates[i]);
    if (d < best_d) {
      best_d = d;
      best = candidates[i];
    }
  }
  size_t limit = wl <= 3 ? 1 : wl <= 8 ? 2 : 3;
  return best && best_d <= limit && best_d > 0 ? best : NULL;
}
