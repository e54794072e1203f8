/* tensor.h — a typed n-dimensional array with reference-counted storage on a
 * place (CPU or GPU n). Dims may hold -1 (the batch, not yet known) while a
 * network is checked at load; a tensor with storage has only real dims.
 * Storage grows but never shrinks, so a steady training loop does not
 * allocate: setting a smaller shape keeps the buffer. */
#ifndef PD_TENSOR_H
#define PD_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Values equal paddle.DataType in proto/paddle.proto. */
typedef enum pd_dtype { PD_F32 = 0, PD_F64 = 1, PD_I32 = 2, PD_I64 = 3, PD_U8 = 4 } pd_dtype;
#define PD_NUM_DTYPES 5

size_t pd_dtype_size(pd_dtype t);
const char *pd_dtype_name(pd_dtype t); /* "float32" ... */
bool pd_dtype_parse(const char *name, pd_dtype *out);
static inline bool pd_dtype_is_float(pd_dtype t) { return t == PD_F32 || t == PD_F64; }

typedef enum pd_place_kind { PD_CPU = 0, PD_GPU = 1 } pd_place_kind;
typedef struct pd_place {
  pd_place_kind kind;
  int device;
} pd_place;

#define PD_MAX_DIMS 8

typedef struct pd_storage {
  void *data;
  size_t cap; /* bytes */
  int refs;
  pd_place place;
  bool plan_buffer; /* a memory plan's buffer, shared by several variables (lib/core/memplan.h) */
  bool borrowed;    /* memory the tensor does not own (pd_tensor_borrow): never freed here */
} pd_storage;

typedef struct pd_tensor {
  pd_dtype dtype;
  int ndim; /* -1: shape not known yet */
  int64_t dims[PD_MAX_DIMS];
  pd_place place;
  pd_storage *storage; /* NULL until allocated */
} pd_tensor;

/* A tensor with no shape and no storage. */
void pd_tensor_init(pd_tensor *t, pd_dtype dtype);
/* Drops this tensor's reference to its storage. */
void pd_tensor_release(pd_tensor *t);

/* Sets dims (no allocation). Fails on too many dims or a negative dim other
 * than -1. */
pd_status pd_tensor_set_dims(pd_tensor *t, int ndim, const int64_t *dims, pd_error *err);
/* Number of elements; -1 when a dim is -1 or the shape is unknown. */
int64_t pd_tensor_numel(const pd_tensor *t);
/* numel * dtype size, with overflow checked; SIZE_MAX on overflow. */
size_t pd_tensor_bytes(const pd_tensor *t);
/* Makes sure the storage holds the current shape (grows, never shrinks; a
 * shared storage that is too small is replaced, not resized in place). */
pd_status pd_tensor_alloc(pd_tensor *t, pd_error *err);
/* dst shares src's storage, dims and dtype. */
void pd_tensor_share(pd_tensor *dst, const pd_tensor *src);
/* dst shares src's storage and dtype but keeps the dims it has (a view with
 * another shape: reshape, flatten and their gradients). */
void pd_tensor_view(pd_tensor *dst, const pd_tensor *src);
/* t uses storage s (which must hold t's bytes), keeping its dtype and dims
 * (the memory plan's shared buffers). */
void pd_tensor_set_storage(pd_tensor *t, pd_storage *s);
/* t uses `bytes` of host memory at data that it does not own and never
 * frees (the allreduce's inputs in memory MPI shares between ranks). */
pd_status pd_tensor_borrow(pd_tensor *t, void *data, size_t bytes, pd_error *err);
/* Deep copy of shape and contents into dst (allocating dst as needed). */
pd_status pd_tensor_copy(pd_tensor *dst, const pd_tensor *src, pd_error *err);

static inline void *pd_tensor_data(const pd_tensor *t) { return t->storage ? t->storage->data : NULL; }
#define PD_DATA(t, T) ((T *)pd_tensor_data(t))

/* "[64, 784]", "[-1, 784]" ("?" for an unknown shape) into buf. */
const char *pd_dims_str(int ndim, const int64_t *dims, char *buf, size_t size);
/* Whether two dims can be the same: equal, or either unknown (-1, the batch). */
static inline bool pd_dim_fits(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }
bool pd_dims_equal(int na, const int64_t *a, int nb, const int64_t *b);
/* Product of dims with overflow checking; returns false on overflow or a
 * negative dim. */
bool pd_dims_product(int ndim, const int64_t *dims, int64_t *out);

/* Element i as a double / stored from a double, for any dtype (tests, cast). */
double pd_tensor_get(const pd_tensor *t, int64_t i);
void pd_tensor_set(pd_tensor *t, int64_t i, double v);

#ifdef __cplusplus
}
#endif

#endif
