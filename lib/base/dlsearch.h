/* dlsearch.h — loads a shared library paddle-run is not linked against
 * (cuBLAS, NCCL: hundreds of MB that a CPU run should not map, and that a
 * machine without the CUDA toolkit does not have) from the usual places:
 * first the dynamic loader's own search for its soname (LD_LIBRARY_PATH, the
 * binary's run path, /etc/ld.so.cache, /usr/lib), then the CUDA toolkit's
 * library directory found when paddle-run was built, $CUDA_HOME/lib64,
 * /usr/local/cuda/lib64 and the system's multiarch directory. */
#ifndef PD_DLSEARCH_H
#define PD_DLSEARCH_H
#include <stddef.h>

/* The handle (RTLD_NOW | RTLD_LOCAL) of the first `soname` found that
 * loads; NULL and a sentence in why[size] otherwise: the loader's error
 * where a copy was found but did not load (a missing dependency, say), or
 * the places searched. */
void *pd_dl_search(const char *soname, char *why, size_t size);

#endif
