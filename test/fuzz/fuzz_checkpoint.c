/* fuzz_checkpoint.c — libFuzzer target for lib/checkpoint: the input is a
 * checkpoint's manifest.pbtxt, placed in a temp directory beside two valid
 * .npy files (w.npy: float32 [2, 3]; b.npy: int64 [3]); opening it and
 * reading every variable it lists must not crash, hang or leak.
 *   make build-fuzz/fuzz_checkpoint
 *   build-fuzz/fuzz_checkpoint -max_total_time=300 test/fuzz/corpus/fuzz_checkpoint */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/checkpoint.h"
#include "io/npy.h"

static char dir[64];
static char manifest[96];

static void remove_dir(void) {
  const char *names[] = {"manifest.pbtxt", "w.npy", "b.npy"};
  char p[128];
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
  rmdir(dir);
}

static void write_npy(const char *name, pd_dtype dt, int ndim, const int64_t *dims) {
  pd_tensor t;
  pd_tensor_init(&t, dt);
  pd_error err;
  char p[128];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  if (pd_tensor_set_dims(&t, ndim, dims, &err) || pd_tensor_alloc(&t, &err)) abort();
  for (int64_t i = 0; i < pd_tensor_numel(&t); i++) pd_tensor_set(&t, i, (double)i + (dt == PD_I64));
  if (pd_npy_write(p, &t, &err)) {
    fprintf(stderr, "fuzz_checkpoint: %s\n", err.msg);
    abort();
  }
  pd_tensor_release(&t);
}

static void setup_once(void) {
  if (dir[0]) return;
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/pd-fuzz-ckpt-XXXXXX", tmp && strlen(tmp) < 32 ? tmp : "/tmp");
  if (!mkdtemp(dir)) abort();
  snprintf(manifest, sizeof manifest, "%s/manifest.pbtxt", dir);
  write_npy("w.npy", PD_F32, 2, (int64_t[]){2, 3}); /* 0..5 */
  write_npy("b.npy", PD_I64, 1, (int64_t[]){3});    /* 1, 2, 3 */
  atexit(remove_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  setup_once();
  FILE *f = fopen(manifest, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  if (fclose(f) != 0) abort();
  pd_checkpoint *ck = NULL;
  pd_error err;
  if (pd_checkpoint_open(dir, &ck, &err) == PD_OK) {
    size_t n;
    const char *const *names = pd_checkpoint_vars(ck, &n);
    for (size_t i = 0; i < n; i++) {
      pd_tensor t;
      pd_tensor_init(&t, PD_F32);
      pd_checkpoint_read(ck, names[i], &t, &err);
      pd_tensor_release(&t);
    }
    pd_tensor t;
    pd_tensor_init(&t, PD_F32);
    pd_checkpoint_read(ck, "no such variable", &t, &err);
    pd_tensor_release(&t);
    pd_checkpoint_close(ck);
  }
  return 0;
}
