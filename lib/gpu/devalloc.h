/* devalloc.h — the caching allocator behind GPU tensors: blocks are rounded
 * up to a size class (four per power of two, so at most a quarter is wasted)
 * and a freed block goes onto its class's free list instead of back to the
 * device, so a steady training loop never calls cudaMalloc or cudaFree. The
 * device itself is a pluggable backend (cudaMalloc/cudaFree in gpu.c, plain
 * malloc in the unit tests), so this bookkeeping is tested without a GPU.
 * Not thread-safe: one runner owns the device. */
#ifndef PD_DEVALLOC_H
#define PD_DEVALLOC_H

#include <stdbool.h>
#include <stddef.h>

typedef struct pd_devalloc_backend {
  /* NULL when it fails: *fault false when the device is out of memory, true
   * when it failed for another reason (a sticky kernel fault) */
  void *(*alloc)(void *ctx, size_t bytes, bool *fault);
  void (*free)(void *ctx, void *p);
  void *ctx;
} pd_devalloc_backend;

typedef struct pd_devalloc_block pd_devalloc_block;

#define PD_DEVALLOC_CLASSES 256

typedef struct pd_devalloc {
  pd_devalloc_backend be;
  pd_devalloc_block *free_list[PD_DEVALLOC_CLASSES];
  size_t in_use;         /* bytes in blocks handed out */
  size_t peak;           /* the most in_use has been */
  size_t cached;         /* bytes in free blocks kept for reuse */
  size_t backend_allocs; /* calls to be.alloc that succeeded */
  size_t backend_frees;  /* calls to be.free */
  bool fault;            /* the last get failed for another reason than out of memory */
} pd_devalloc;

void pd_devalloc_init(pd_devalloc *a, pd_devalloc_backend be);
/* The size class a request of `bytes` is served from (>= bytes, >= 256). */
size_t pd_devalloc_class_size(size_t bytes);
/* A block of at least `bytes`; its real size (to give back to put) in *cap.
 * Reuses a cached block of the class; when the backend is out of memory,
 * frees every cached block and tries once more. NULL when that fails too,
 * or at once when the backend reports a fault (then a->fault is true: a
 * trim cannot help, and freeing into a faulted device would fail too). */
void *pd_devalloc_get(pd_devalloc *a, size_t bytes, size_t *cap);
/* Returns a block from get (cap as get reported it) to its free list. */
void pd_devalloc_put(pd_devalloc *a, void *p, size_t cap);
/* Gives every cached block back to the backend. */
void pd_devalloc_trim(pd_devalloc *a);
/* trim, and forgets the allocator (blocks still handed out are the caller's). */
void pd_devalloc_destroy(pd_devalloc *a);

#endif
