/* devalloc.c — size-class free lists over a device backend (devalloc.h). */
#include "gpu/devalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct pd_devalloc_block {
  void *p;
  pd_devalloc_block *next;
};

#define MIN_CLASS 256u

void pd_devalloc_init(pd_devalloc *a, pd_devalloc_backend be) {
  memset(a, 0, sizeof *a);
  a->be = be;
}

static int log2_floor(size_t x) {
  int k = 0;
  while (x >>= 1) k++;
  return k;
}

/* Class (k, q): size 2^k + q * 2^(k-2), q in 0..3, for k >= 8. */
static int class_of(size_t bytes, size_t *size) {
  if (bytes <= MIN_CLASS) {
    *size = MIN_CLASS;
    return 0;
  }
  int k = log2_floor(bytes);
  size_t base = (size_t)1 << k, quarter = base >> 2;
  size_t q = (bytes - base + quarter - 1) / quarter; /* 0..4 */
  if (q == 4) {
    if (k + 1 >= (int)(sizeof(size_t) * 8)) return -1;
    k++, q = 0, base <<= 1, quarter <<= 1;
  }
  if (base > SIZE_MAX - q * quarter) return -1;
  *size = base + q * quarter;
  return (k - 8) * 4 + (int)q;
}

size_t pd_devalloc_class_size(size_t bytes) {
  size_t s;
  return class_of(bytes, &s) < 0 ? SIZE_MAX : s;
}

void *pd_devalloc_get(pd_devalloc *a, size_t bytes, size_t *cap) {
  size_t size;
  int c = class_of(bytes, &size);
  if (c < 0 || c >= PD_DEVALLOC_CLASSES) return NULL;
  void *p = NULL;
  a->fault = false;
  pd_devalloc_block *b = a->free_list[c];
  if (b) {
    a->free_list[c] = b->next;
    p = b->p;
    free(b);
    a->cached -= size;
  } else {
    bool fault = false;
    p = a->be.alloc(a->be.ctx, size, &fault);
    if (!p && !fault && a->cached) {
      pd_devalloc_trim(a);
      p = a->be.alloc(a->be.ctx, size, &fault);
    }
    if (!p) {
      a->fault = fault;
      return NULL;
    }
    a->backend_allocs++;
  }
  a->in_use += size;
  if (a->in_use > a->peak) a->peak = a->in_use;
  *cap = size;
  return p;
}

void pd_devalloc_put(pd_devalloc *a, void *p, size_t cap) {
  if (!p) return;
  size_t size;
  int c = class_of(cap, &size);
  a->in_use -= cap < a->in_use ? cap : a->in_use;
  pd_devalloc_block *b = c >= 0 && c < PD_DEVALLOC_CLASSES && size == cap ? malloc(sizeof *b) : NULL;
  if (!b) { /* not a size get hands out, or no memory for the list node */
    a->be.free(a->be.ctx, p);
    a->backend_frees++;
    return;
  }
  b->p = p;
  b->next = a->free_list[c];
  a->free_list[c] = b;
  a->cached += size;
}

void pd_devalloc_trim(pd_devalloc *a) {
  for (int c = 0; c < PD_DEVALLOC_CLASSES; c++) {
    while (a->free_list[c]) {
      pd_devalloc_block *b = a->free_list[c];
      a->free_list[c] = b->next;
      a->be.free(a->be.ctx, b->p);
      a->backend_frees++;
      free(b);
    }
  }
  a->cached = 0;
}

void pd_devalloc_destroy(pd_devalloc *a) {
  pd_devalloc_trim(a);
  memset(a, 0, sizeof *a);
}
