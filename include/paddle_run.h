/* paddle_run.h — the C API of paddle-run (libpaddle-run.so): open a network
 * with its parameters, set inputs from your memory, run it forward or one
 * training step, read outputs, save parameters. A small, stable surface
 * over the library; every name is pdr_ / PDR_ / PADDLE_RUN_. docs/c_api.md
 * says who owns what, how long pointers live, and what is thread-safe. */
#ifndef PADDLE_RUN_H
#define PADDLE_RUN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; pdr_version() gives the library's. The
 * library's soname changes (libpaddle-run.so.N) with MAJOR only. */
#define PADDLE_RUN_VERSION_MAJOR 0
#define PADDLE_RUN_VERSION_MINOR 1
#define PADDLE_RUN_VERSION_PATCH 0

/* Every fallible call returns one of these; the message is kept on the
 * handle (pdr_errmsg). Nothing is printed and nothing exits. */
typedef enum pdr_status {
  PDR_OK = 0,
  PDR_ERR_RUNTIME = 1, /* a failure while running: I/O, out of memory, a non-finite loss */
  PDR_ERR_INPUT = 2,   /* bad input: net file, parameters, names, dtypes, shapes */
  PDR_ERR_MISUSE = 3,  /* a call that cannot be made now (NULL handle, no run yet, not opened for training) */
} pdr_status;

/* Element types, as paddle.DataType numbers them. */
typedef enum pdr_dtype {
  PDR_FLOAT32 = 0,
  PDR_FLOAT64 = 1,
  PDR_INT32 = 2,
  PDR_INT64 = 3,
  PDR_UINT8 = 4,
} pdr_dtype;

/* An open network, its parameters, inputs and last outputs (opaque). */
typedef struct pdr_net pdr_net;

/* pdr_open flags. */
#define PDR_OPEN_TRAIN 1u /* also build the training step (pdr_train_step) from the net's train section */

/* "MAJOR.MINOR.PATCH" of the library loaded. */
const char *pdr_version(void);

/* Opens the NetDesc text file at `path` with parameters from `params`: a
 * directory of NAME.npy files, a checkpoint, or a save directory (as
 * `paddle-run infer --params` takes); NULL for a net without parameters
 * or, with PDR_OPEN_TRAIN, to initialise them as `paddle-run train` does.
 * *out always receives a handle (NULL only when out of memory): on failure
 * it holds just the error, for pdr_errmsg; pdr_close it either way. */
pdr_status pdr_open(const char *path, const char *params, unsigned flags, pdr_net **out);
/* The same from `len` bytes of NetDesc text; `name` stands for the file in
 * messages ("name:LINE:COL: ..."), relative data paths are not read. */
pdr_status pdr_open_text(const char *name, const char *text, size_t len, const char *params, unsigned flags,
                         pdr_net **out);
/* Frees the handle and everything it holds (NULL: nothing). */
void pdr_close(pdr_net *net);

/* The last call's outcome on this handle: its status and message ("" when
 * it succeeded). The message lives until the next call on the handle. A
 * NULL handle reads as out of memory. */
pdr_status pdr_errcode(const pdr_net *net);
const char *pdr_errmsg(const pdr_net *net);

/* Copies an input: a data variable of the net, its dtype, and dims whose
 * count and sizes agree with the variable's declared shape (-1 there: any
 * size, the batch). `data` holds the product of dims elements, C order. */
pdr_status pdr_set_input(pdr_net *net, const char *name, pdr_dtype dtype, int ndim, const int64_t *dims,
                         const void *data);

/* Runs forward what the `nfetch` named variables need and makes them the
 * outputs. fetch NULL (nfetch 0): the outputs are the variables computed
 * from the inputs set that no other computed op reads. */
pdr_status pdr_infer(pdr_net *net, const char *const *fetch, int nfetch);
/* One training step on the inputs set (a whole batch), with the net's
 * optimizer and learning-rate schedule, as one step of `paddle-run train`;
 * the outputs are then the loss and train.metrics. Needs PDR_OPEN_TRAIN. */
pdr_status pdr_train_step(pdr_net *net);

/* The last run's outputs: how many, and the name of each (valid while the
 * handle lives). */
int pdr_output_count(const pdr_net *net);
const char *pdr_output_name(const pdr_net *net, int i);
/* An output by name: its dtype, dims and data, any of them may be NULL.
 * *dims and *data point into the handle and stay valid until the next
 * pdr_infer, pdr_train_step or pdr_close. */
pdr_status pdr_output(pdr_net *net, const char *name, pdr_dtype *dtype, int *ndim, const int64_t **dims,
                      const void **data);
/* Copies an output into `buf` of `size` bytes (which must hold it). */
pdr_status pdr_output_copy(pdr_net *net, const char *name, void *buf, size_t size);

/* Saves the parameters and state as a checkpoint in save directory `dir`
 * (created when missing): dir/step-N and dir/latest as `paddle-run train
 * --save` writes them, N the training steps taken. `infer --params dir`
 * and pdr_open read it. */
pdr_status pdr_save_params(pdr_net *net, const char *dir);

#ifdef __cplusplus
}
#endif

#endif
