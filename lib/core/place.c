/* place.c — the table of places (place.h) and the CPU's own entry: host
 * memory 64-byte aligned (BLIS and the vectorised loops like that). */
#include "core/place.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *cpu_alloc(size_t bytes, size_t *cap, const char *what, pd_error *err) {
  size_t c = bytes > SIZE_MAX - 63 ? 0 : (bytes + 63) & ~(size_t)63;
  if (bytes == 0) c = 64;
  void *p = c ? aligned_alloc(64, c) : NULL;
  if (!p) {
    pd_errorf(err, PD_ERR_RUNTIME, "out of memory allocating %zu bytes for %s", bytes, what);
    return NULL;
  }
  memset(p, 0, c);
  *cap = c;
  return p;
}

static void cpu_free(void *p, size_t cap) {
  (void)cap;
  free(p);
}

static pd_status cpu_copy(void *dst, pd_place dplace, const void *src, pd_place splace, size_t bytes, pd_error *err) {
  (void)dplace, (void)splace, (void)err;
  memcpy(dst, src, bytes);
  return PD_OK;
}

static const pd_place_ops cpu_place = {"CPU", cpu_alloc, cpu_free, cpu_copy, NULL};

#define NUM_KINDS 2
static const pd_place_ops *places[NUM_KINDS] = {[PD_CPU] = &cpu_place};

void pd_place_register(pd_place_kind kind, const pd_place_ops *ops) {
  if ((unsigned)kind < NUM_KINDS && kind != PD_CPU) places[kind] = ops;
}

const pd_place_ops *pd_place_ops_of(pd_place_kind kind) { return (unsigned)kind < NUM_KINDS ? places[kind] : NULL; }

const char *pd_place_kind_name(pd_place_kind kind) {
  static const char *const names[NUM_KINDS] = {[PD_CPU] = "CPU", [PD_GPU] = "GPU"};
  return (unsigned)kind < NUM_KINDS ? names[kind] : "unknown place";
}
