/* bench_parse.c — text-format parse throughput of our parser: reads a
 * NetDesc file into memory once, then times pd_text_parse on it N times
 * (only the parse; freeing the message is outside the timed region). Prints
 * one line per run: seconds without a source map, then seconds with one (as
 * pd_net_load parses), so both costs are visible.
 *   bench_parse FILE N */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "paddle.pb-c.h"
#include "text/textformat.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double parse_once(const char *path, const char *text, size_t len, int with_map) {
  pd_error err = {0};
  pd_srcmap map = {0};
  ProtobufCMessage *m = NULL;
  double t0 = now();
  pd_status st = pd_text_parse(&paddle__net_desc__descriptor, text, len, path, &m, with_map ? &map : NULL, &err);
  double t = now() - t0;
  if (st) {
    fprintf(stderr, "bench_parse: %s\n", err.msg);
    exit(1);
  }
  protobuf_c_message_free_unpacked(m, NULL);
  pd_srcmap_free(&map);
  return t;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: bench_parse FILE N\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)len + 1);
  if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
    fprintf(stderr, "bench_parse: cannot read %s\n", argv[1]);
    return 1;
  }
  fclose(f);
  int n = atoi(argv[2]);
  parse_once(argv[1], text, (size_t)len, 1); /* warm-up: page in, malloc arenas */
  printf("# bytes %ld\n", len);
  for (int i = 0; i < n; i++) {
    double a = parse_once(argv[1], text, (size_t)len, 0);
    double b = parse_once(argv[1], text, (size_t)len, 1);
    printf("%.6f %.6f\n", a, b);
  }
  free(text);
  return 0;
}
