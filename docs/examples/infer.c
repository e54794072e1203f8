/* infer.c — the C API (include/paddle_run.h) in one small program: opens a
 * net with its trained parameters, reads rows of numbers from stdin (one
 * row a line) as its input, runs it and prints the output as `paddle-run
 * infer --fetch VAR` prints it.
 *   cc -o infer docs/examples/infer.c -lpaddle-run
 *   ./infer NET.pbtxt PARAMS_DIR INPUT_VAR OUTPUT_VAR < rows.txt */
#include <paddle_run.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads every number on stdin into a growing array; *cols is the count on
 * the first line (each line must have as many). */
static float *read_rows(int64_t *rows, int64_t *cols) {
  char line[65536];
  float *x = NULL;
  size_t n = 0, cap = 0;
  *rows = 0, *cols = 0;
  while (fgets(line, sizeof line, stdin)) {
    int64_t k = 0;
    for (char *p = line, *end;; p = end) {
      float v = strtof(p, &end);
      if (end == p) break;
      if (n == cap && !(x = realloc(x, (cap = cap ? 2 * cap : 1024) * sizeof *x))) return NULL;
      x[n++] = v, k++;
    }
    if (!k) continue;
    if (*rows && k != *cols) {
      fprintf(stderr, "line %lld has %lld numbers, the first %lld\n", (long long)*rows + 1, (long long)k,
              (long long)*cols);
      free(x);
      return NULL;
    }
    *cols = k, (*rows)++;
  }
  return x;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s NET.pbtxt PARAMS_DIR INPUT_VAR OUTPUT_VAR < rows.txt\n", argv[0]);
    return 2;
  }
  int64_t dims[2];
  float *x = read_rows(&dims[0], &dims[1]);
  if (!x) return 2;

  pdr_net *net;
  const char *fetch[] = {argv[4]};
  pdr_status st = pdr_open(argv[1], argv[2], 0, &net);
  if (!st) st = pdr_set_input(net, argv[3], PDR_FLOAT32, 2, dims, x);
  if (!st) st = pdr_infer(net, fetch, 1);

  pdr_dtype dtype;
  int ndim;
  const int64_t *odims;
  const void *data;
  if (!st) st = pdr_output(net, argv[4], &dtype, &ndim, &odims, &data);
  if (!st && dtype != PDR_FLOAT32) {
    fprintf(stderr, "%s is not float32\n", argv[4]);
    st = PDR_ERR_INPUT;
  } else if (!st) {
    /* the header line and the rows, as `paddle-run infer` prints them */
    int64_t n = 1;
    printf("%s float32 [", argv[4]);
    for (int d = 0; d < ndim; d++) printf("%s%lld", d ? ", " : "", (long long)odims[d]), n *= odims[d];
    printf("]\n");
    int64_t cols = ndim >= 2 && odims[0] ? n / odims[0] : n;
    const float *y = data;
    for (int64_t i = 0; i < n; i++) printf("%s%.9g%s", i % cols ? " " : "", y[i], (i + 1) % cols ? "" : "\n");
  } else {
    fprintf(stderr, "paddle-run %s: %s\n", pdr_version(), pdr_errmsg(net));
  }
  pdr_close(net);
  free(x);
  return st ? 1 : 0;
}
