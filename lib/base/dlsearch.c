/* dlsearch.c — see dlsearch.h. */
#include "base/dlsearch.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#define MULTIARCH_DIR "/usr/lib/x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH_DIR "/usr/lib/aarch64-linux-gnu"
#else
#define MULTIARCH_DIR "/usr/lib"
#endif

/* Keeps the first real failure (a copy that exists but does not load). */
static void *try_open(const char *path, bool *failed, char *why, size_t size) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h && !*failed) {
    const char *e = dlerror();
    snprintf(why, size, "%s", e ? e : "dlopen failed");
    *failed = true;
  }
  return h;
}

void *pd_dl_search(const char *soname, char *why, size_t size) {
  char cuda_home[4096] = "";
  const char *ch = getenv("CUDA_HOME");
  if (ch && *ch) snprintf(cuda_home, sizeof cuda_home, "%s/lib64", ch);
  /* each place once ($CUDA_HOME is often /usr/local/cuda) */
  if (strcmp(cuda_home, "/usr/local/cuda/lib64") == 0) cuda_home[0] = '\0';
#ifdef PD_CUDA_LIB_DIR
  if (strcmp(cuda_home, PD_CUDA_LIB_DIR) == 0) cuda_home[0] = '\0';
#endif
  const char *dirs[] = {
#ifdef PD_CUDA_LIB_DIR
      PD_CUDA_LIB_DIR,
#endif
      cuda_home, "/usr/local/cuda/lib64", MULTIARCH_DIR};
  size_t n_dirs = sizeof dirs / sizeof dirs[0];
  bool failed = false;
  /* the loader's search: not there is not a failure, but a copy there
   * that cannot load (its dlerror does not begin with the soname) is */
  void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  const char *e = dlerror();
  size_t len = strlen(soname);
  if (e && !(strncmp(e, soname, len) == 0 && strstr(e + len, "No such file"))) {
    snprintf(why, size, "%s", e);
    failed = true;
  }
  for (size_t i = 0; i < n_dirs; i++) {
    char path[4200];
    if (!dirs[i][0]) continue;
    snprintf(path, sizeof path, "%s/%s", dirs[i], soname);
    if (access(path, F_OK) != 0) continue;
    if ((h = try_open(path, &failed, why, size))) return h;
  }
  if (!failed) {
    int k = snprintf(why, size, "%s is not in the library search path (LD_LIBRARY_PATH, ld.so.cache), nor in", soname),
        k0 = k;
    for (size_t i = 0; i < n_dirs && k >= 0 && (size_t)k < size; i++)
      if (dirs[i][0]) k += snprintf(why + k, size - (size_t)k, "%s %s", k0 == k ? "" : ",", dirs[i]);
  }
  return NULL;
}
