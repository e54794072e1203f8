/* fake_libcuda.c — a stand-in for the NVIDIA driver's libcuda.so.1, for
 * test/gpu/driver_errors.sh: put on LD_LIBRARY_PATH, it makes the CUDA
 * runtime's first call fail the way a broken GPU host does. cuInit returns
 * $FAKE_CUDA_ERROR (a CUresult, whose numbers the runtime maps to the
 * cudaError_t of the same number for these), cuDriverGetVersion answers
 * $FAKE_CUDA_DRIVER (default 13000); the runtime reaches everything else
 * through cuGetProcAddress, which hands out a function that fails alike. */
#include <stdlib.h>
#include <string.h>

static int fake_error(void) {
  const char *e = getenv("FAKE_CUDA_ERROR");
  return e ? atoi(e) : 100; /* CUDA_ERROR_NO_DEVICE */
}

int cuInit(unsigned flags) {
  (void)flags;
  return fake_error();
}

int cuDriverGetVersion(int *v) {
  const char *d = getenv("FAKE_CUDA_DRIVER");
  *v = d ? atoi(d) : 13000;
  return 0;
}

static int fails(void) { return fake_error(); }

int cuGetProcAddress(const char *sym, void **fn, int ver, unsigned long long flags);
int cuGetProcAddress_v2(const char *sym, void **fn, int ver, unsigned long long flags, int *status);

int cuGetProcAddress_v2(const char *sym, void **fn, int ver, unsigned long long flags, int *status) {
  (void)flags;
  if (!strcmp(sym, "cuInit"))
    *fn = (void *)cuInit;
  else if (!strcmp(sym, "cuDriverGetVersion"))
    *fn = (void *)cuDriverGetVersion;
  else if (!strcmp(sym, "cuGetProcAddress"))
    *fn = ver >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
  else
    *fn = (void *)fails;
  if (status) *status = 0;
  return 0;
}

int cuGetProcAddress(const char *sym, void **fn, int ver, unsigned long long flags) {
  return cuGetProcAddress_v2(sym, fn, ver, flags, NULL);
}
