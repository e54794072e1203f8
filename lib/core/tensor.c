/* tensor.c — tensors, their storage and dtype helpers. Storage only grows;
 * it is allocated, freed and copied through its place's table (place.h). */
#include "core/tensor.h"
#include "core/place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const dtype_names[PD_NUM_DTYPES] = {"float32", "float64", "int32", "int64", "uint8"};
static const size_t dtype_sizes[PD_NUM_DTYPES] = {4, 8, 4, 8, 1};

size_t pd_dtype_size(pd_dtype t) { return (unsigned)t < PD_NUM_DTYPES ? dtype_sizes[t] : 0; }

const char *pd_dtype_name(pd_dtype t) { return (unsigned)t < PD_NUM_DTYPES ? dtype_names[t] : "unknown"; }

bool pd_dtype_parse(const char *name, pd_dtype *out) {
  for (int i = 0; i < PD_NUM_DTYPES; i++)
    if (strcmp(name, dtype_names[i]) == 0) {
      *out = (pd_dtype)i;
      return true;
    }
  return false;
}

void pd_tensor_init(pd_tensor *t, pd_dtype dtype) {
  memset(t, 0, sizeof *t);
  t->dtype = dtype;
  t->ndim = -1;
}

static void storage_unref(pd_storage *s) {
  if (s && --s->refs == 0) {
    const pd_place_ops *p = s->borrowed ? NULL : pd_place_ops_of(s->place.kind);
    if (p) p->free(s->data, s->cap);
    free(s);
  }
}

void pd_tensor_release(pd_tensor *t) {
  storage_unref(t->storage);
  t->storage = NULL;
}

pd_status pd_tensor_set_dims(pd_tensor *t, int ndim, const int64_t *dims, pd_error *err) {
  if (ndim < 0 || ndim > PD_MAX_DIMS)
    return pd_errorf(err, PD_ERR_INPUT, "a tensor has at most %d dims, got %d", PD_MAX_DIMS, ndim);
  for (int i = 0; i < ndim; i++)
    if (dims[i] < -1)
      return pd_errorf(err, PD_ERR_INPUT, "dimension %d is %lld; dims must be >= 0 (or -1 for the batch)", i,
                       (long long)dims[i]);
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) t->dims[i] = dims[i];
  return PD_OK;
}

bool pd_dims_product(int ndim, const int64_t *dims, int64_t *out) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++)
    if (dims[i] == 0) { /* empty, however large the other dims */
      for (int j = 0; j < ndim; j++)
        if (dims[j] < 0) return false;
      *out = 0;
      return true;
    }
  for (int i = 0; i < ndim; i++) {
    if (dims[i] < 0) return false;
    if (dims[i] != 0 && n > INT64_MAX / dims[i]) return false;
    n *= dims[i];
  }
  *out = n;
  return true;
}

int64_t pd_tensor_numel(const pd_tensor *t) {
  int64_t n;
  if (t->ndim < 0 || !pd_dims_product(t->ndim, t->dims, &n)) return -1;
  return n;
}

size_t pd_tensor_bytes(const pd_tensor *t) {
  int64_t n = pd_tensor_numel(t);
  size_t es = pd_dtype_size(t->dtype);
  if (n < 0 || (uint64_t)n > SIZE_MAX / es) return SIZE_MAX;
  return (size_t)n * es;
}

pd_status pd_tensor_alloc(pd_tensor *t, pd_error *err) {
  size_t bytes = pd_tensor_bytes(t);
  char dbuf[128];
  if (bytes == SIZE_MAX)
    return pd_errorf(err, PD_ERR_INPUT, "cannot allocate a tensor of shape %s",
                     pd_dims_str(t->ndim, t->dims, dbuf, sizeof dbuf));
  if (t->storage && t->storage->cap >= bytes && t->storage->place.kind == t->place.kind) return PD_OK;
  char what[160];
  snprintf(what, sizeof what, "a tensor of shape %s", pd_dims_str(t->ndim, t->dims, dbuf, sizeof dbuf));
  const pd_place_ops *p = pd_place_ops_of(t->place.kind);
  if (!p) {
    const char *name = pd_place_kind_name(t->place.kind);
    return pd_errorf(err, PD_ERR_RUNTIME, "allocating %s on a %s before the %s was opened", what, name, name);
  }
  pd_storage *s = malloc(sizeof *s);
  size_t cap = 0;
  void *data = s ? p->alloc(bytes, &cap, what, err) : NULL;
  if (!data) {
    if (!s) pd_errorf(err, PD_ERR_RUNTIME, "out of memory allocating %zu bytes for %s", bytes, what);
    free(s);
    return PD_ERR_RUNTIME;
  }
  *s = (pd_storage){.data = data, .cap = cap, .refs = 1, .place = t->place};
  storage_unref(t->storage);
  t->storage = s;
  return PD_OK;
}

void pd_tensor_share(pd_tensor *dst, const pd_tensor *src) {
  if (dst == src) return;
  if (src->storage) src->storage->refs++;
  storage_unref(dst->storage);
  dst->storage = src->storage;
  dst->dtype = src->dtype;
  dst->ndim = src->ndim;
  dst->place = src->place;
  memcpy(dst->dims, src->dims, sizeof dst->dims);
}

void pd_tensor_view(pd_tensor *dst, const pd_tensor *src) {
  int nd = dst->ndim;
  int64_t dims[PD_MAX_DIMS];
  memcpy(dims, dst->dims, sizeof dims);
  pd_tensor_share(dst, src);
  dst->ndim = nd;
  memcpy(dst->dims, dims, sizeof dims);
}

void pd_tensor_set_storage(pd_tensor *t, pd_storage *s) {
  if (t->storage == s) return;
  if (s) s->refs++;
  storage_unref(t->storage);
  t->storage = s;
}

pd_status pd_tensor_borrow(pd_tensor *t, void *data, size_t bytes, pd_error *err) {
  pd_storage *s = malloc(sizeof *s);
  if (!s) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  *s = (pd_storage){.data = data, .cap = bytes, .refs = 1, .place = {PD_CPU, 0}, .borrowed = true};
  storage_unref(t->storage);
  t->storage = s;
  return PD_OK;
}

pd_status pd_tensor_copy(pd_tensor *dst, const pd_tensor *src, pd_error *err) {
  if (dst == src) return PD_OK;
  dst->dtype = src->dtype;
  pd_status st = pd_tensor_set_dims(dst, src->ndim, src->dims, err);
  if (st) return st;
  if ((st = pd_tensor_alloc(dst, err))) return st;
  size_t bytes = pd_tensor_bytes(src);
  if (!bytes || !src->storage) return PD_OK;
  /* the host's copy, or the device's on whichever side is one */
  pd_place dp = dst->storage->place, sp = src->storage->place;
  const pd_place_ops *p = pd_place_ops_of(dp.kind != PD_CPU ? dp.kind : sp.kind);
  if (!p) return pd_errorf(err, PD_ERR_RUNTIME, "copying a tensor from a place that is not open");
  return p->copy(dst->storage->data, dp, src->storage->data, sp, bytes, err);
}

const char *pd_dims_str(int ndim, const int64_t *dims, char *buf, size_t size) {
  if (ndim < 0) {
    snprintf(buf, size, "?");
    return buf;
  }
  size_t used = 0;
  used += (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < ndim && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)dims[i]);
  if (used < size) snprintf(buf + used, size - used, "]");
  return buf;
}

bool pd_dims_equal(int na, const int64_t *a, int nb, const int64_t *b) {
  if (na != nb) return false;
  for (int i = 0; i < na; i++)
    if (a[i] != b[i]) return false;
  return true;
}

double pd_tensor_get(const pd_tensor *t, int64_t i) {
  const void *d = pd_tensor_data(t);
  switch (t->dtype) {
  case PD_F32:
    return ((const float *)d)[i];
  case PD_F64:
    return ((const double *)d)[i];
  case PD_I32:
    return ((const int32_t *)d)[i];
  case PD_I64:
    return (double)((const int64_t *)d)[i];
  case PD_U8:
    return ((const uint8_t *)d)[i];
  }
  return 0;
}

void pd_tensor_set(pd_tensor *t, int64_t i, double v) {
  void *d = pd_tensor_data(t);
  switch (t->dtype) {
  case PD_F32:
    ((float *)d)[i] = (float)v;
    break;
  case PD_F64:
    ((double *)d)[i] = v;
    break;
  case PD_I32:
    ((int32_t *)d)[i] = (int32_t)v;
    break;
  case PD_I64:
    ((int64_t *)d)[i] = (int64_t)v;
    break;
  case PD_U8:
    ((uint8_t *)d)[i] = (uint8_t)v;
    break;
  }
}
