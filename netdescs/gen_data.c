/* gen_data.c — writes the small synthetic data set that netdescs/fit_a_line.pbtxt
 * trains on, as little-endian NumPy .npy (v1.0) files:
 *
 *   fit_a_line_train_x.npy  float32 [512, 13]   features, each ~ U[-1, 1)
 *   fit_a_line_train_y.npy  float32 [512, 1]    target  = x . w + b + noise
 *   fit_a_line_test_x.npy   float32 [128, 13]
 *   fit_a_line_test_y.npy   float32 [128, 1]
 *
 * Like the seed's UCI housing data (13 normalised features, one price), but
 * generated: a fixed linear relation (W, B below) plus Gaussian noise of
 * standard deviation NOISE, from a fixed-seed PRNG (splitmix64; the noise is
 * the sum of 12 uniforms minus 6, so only IEEE + - * and no libm function is
 * involved), so every build writes identical bytes.
 * A perfect fit reaches a mean squared error of NOISE^2 = 0.01.
 *
 *   usage: gen_data OUTDIR        (OUTDIR must exist)
 * Only libc; files are written to NAME.tmp and renamed into place.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FEATURES 13
#define TRAIN_ROWS 512
#define TEST_ROWS 128
#define NOISE 0.1

static const double W[FEATURES] = {-0.9, 0.6, -0.3, 0.2, -1.2, 2.1, -0.1, -1.6, 0.8, -0.7, -1.0, 0.4, -1.9};
static const double B = 2.5;

static uint64_t rng_state = 0x5eed0003ULL; /* fixed: identical bytes on every build */

static uint64_t splitmix64(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* uniform in [0, 1), 53 bits */
static double uniform01(void) { return (double)(splitmix64() >> 11) * (1.0 / 9007199254740992.0); }

/* approximately N(0, 1): Irwin-Hall with 12 terms (mean 6, variance 1) */
static double gaussian(void) {
  double s = 0;
  for (int i = 0; i < 12; i++) s += uniform01();
  return s - 6.0;
}

static void put_f32le(unsigned char *p, float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(u >> (8 * i));
}

/* Writes a float32 C-order array of dims [rows, cols] as .npy v1.0. */
static int write_npy(const char *dir, const char *name, const float *data, int rows, int cols) {
  char path[4096], tmp[4100];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
    fprintf(stderr, "gen_data: path too long: %s/%s\n", dir, name);
    return -1;
  }
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  char dict[128];
  int dl = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols);
  /* magic(6) + version(2) + header_len(2) + dict + spaces + '\n', total a multiple of 64 */
  int total = 10 + dl + 1;
  total = (total + 63) / 64 * 64;
  int hlen = total - 10;
  unsigned char head[256];
  memcpy(head, "\x93NUMPY\x01\x00", 8);
  head[8] = (unsigned char)(hlen & 0xff);
  head[9] = (unsigned char)(hlen >> 8);
  memcpy(head + 10, dict, (size_t)dl);
  memset(head + 10 + dl, ' ', (size_t)(hlen - dl - 1));
  head[total - 1] = '\n';

  FILE *f = fopen(tmp, "wb");
  if (!f) {
    fprintf(stderr, "gen_data: %s: %s\n", tmp, strerror(errno));
    return -1;
  }
  int ok = fwrite(head, 1, (size_t)total, f) == (size_t)total;
  for (long i = 0; ok && i < (long)rows * cols; i++) {
    unsigned char b[4];
    put_f32le(b, data[i]);
    ok = fwrite(b, 1, 4, f) == 4;
  }
  if (fclose(f) != 0) ok = 0;
  if (!ok || rename(tmp, path) != 0) {
    fprintf(stderr, "gen_data: writing %s: %s\n", path, strerror(errno));
    remove(tmp);
    return -1;
  }
  return 0;
}

static int make_split(const char *dir, const char *split, int rows) {
  float *x = malloc(sizeof *x * (size_t)rows * FEATURES), *y = malloc(sizeof *y * (size_t)rows);
  if (!x || !y) {
    free(x), free(y);
    fprintf(stderr, "gen_data: out of memory\n");
    return -1;
  }
  for (int r = 0; r < rows; r++) {
    double t = B;
    for (int c = 0; c < FEATURES; c++) {
      float v = (float)(2.0 * uniform01() - 1.0);
      x[r * FEATURES + c] = v;
      t += W[c] * (double)v;
    }
    y[r] = (float)(t + NOISE * gaussian());
  }
  char nx[64], ny[64];
  snprintf(nx, sizeof nx, "fit_a_line_%s_x.npy", split);
  snprintf(ny, sizeof ny, "fit_a_line_%s_y.npy", split);
  int st = write_npy(dir, nx, x, rows, FEATURES);
  if (!st) st = write_npy(dir, ny, y, rows, 1);
  free(x), free(y);
  return st;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: gen_data OUTDIR\n");
    return 2;
  }
  if (make_split(argv[1], "train", TRAIN_ROWS) || make_split(argv[1], "test", TEST_ROWS)) return 1;
  return 0;
}
