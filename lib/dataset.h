/* dataset.h — a data file (.npy or IDX, plain or gzip, told apart by their
 * magic bytes) seen as rows: the first dim counts rows, the rest is one row's
 * shape. Mini-batches are gathered by row index (so an epoch can be
 * shuffled) and converted to the dtype a variable wants. Uncompressed files
 * are mmap'd, so a data set need not fit in memory; gzip files are inflated
 * once, to exactly the size their header promises.
 *
 * Threads: a pd_dataset does not change after open, so any number of threads
 * may call pd_dataset_read at once, each into its own tensor (a prefetch
 * thread reading the next batch while the net runs this one). */
#ifndef PD_DATASET_H
#define PD_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "tensor.h"

typedef struct pd_dataset pd_dataset;

/* Opens a data file and checks it all up front: header against file size
 * (or inflated size), and that it has rows: a scalar, a file of 0 rows or
 * rows of 0 elements is refused with a message naming the file. */
pd_status pd_dataset_open(const char *path, pd_dataset **out, pd_error *err);
/* The same over a file already in memory (tests, fuzzing). buf is borrowed
 * and must outlive the data set unless it is gzip (then it is inflated). */
pd_status pd_dataset_open_memory(const char *name, const void *buf, size_t len, pd_dataset **out, pd_error *err);
void pd_dataset_close(pd_dataset *ds);

const char *pd_dataset_path(const pd_dataset *ds);
/* The rows' bytes as the file stores them (a gzip file's inflated), *len
 * of them: for comparing data sets, not for reading rows. */
const void *pd_dataset_bytes(const pd_dataset *ds, size_t *len);
/* "npy" or "IDX". */
const char *pd_dataset_format(const pd_dataset *ds);
int64_t pd_dataset_rows(const pd_dataset *ds);
/* One row's shape: the file's shape without its first dim (ndim may be 0). */
int pd_dataset_row_ndim(const pd_dataset *ds);
const int64_t *pd_dataset_row_dims(const pd_dataset *ds);
/* The dtype the file's elements are read as (IDX sbyte/short/int: int32). */
pd_dtype pd_dataset_dtype(const pd_dataset *ds);

/* Checks that the file's rows fit variable `var`, declared with row shape
 * ndim/dims (its shape without the batch dim; -1 matches any size). Shapes
 * fit when equal once dims of size 1 are dropped, so labels stored as [N]
 * feed a variable declared [-1, 1]. The message names the file, the
 * variable and both shapes. */
pd_status pd_dataset_check_rows(const pd_dataset *ds, const char *var, int ndim, const int64_t *dims, pd_error *err);

/* Gathers rows[0..n) (each in [0, rows)) into out as dtype `want`, shaped
 * [n, row dims...] (set the variable's own row dims afterwards if they differ
 * by 1s; the element count is the same). out is pd_tensor_init'ed by the
 * caller and its storage reused when large enough. Integer targets take
 * only values that fit: 2.5 or 300 for uint8 is an error naming the row,
 * never a silent wrap. */
pd_status pd_dataset_read(const pd_dataset *ds, const int64_t *rows, int64_t n, pd_dtype want, pd_tensor *out,
                          pd_error *err);

#endif
