/* onnx_import.h — an ONNX model (Debian's onnx.proto, compiled at build
 * time) imported as a NetDesc plus its parameters (onnx_import.c). Import
 * maps each node onto our ops with the attribute semantics of the model's
 * opset (11 to 17; see docs/onnx.md). */
#ifndef PD_ONNX_IMPORT_H
#define PD_ONNX_IMPORT_H

#include <stdbool.h>

#include "onnx.pb-c.h"
#include "core/tensor.h"

#define PD_ONNX_OPSET_MIN 1
#define PD_ONNX_OPSET_MAX 17

/* A value the imported net needs: a parameter (float initializer), or
 * state (running statistics, constants, integer initializers). */
typedef struct pd_onnx_value {
  char *name;
  pd_tensor t;
} pd_onnx_value;

typedef struct pd_onnx_import {
  char *text; /* the NetDesc, text format */
  size_t len;
  pd_onnx_value *values; /* what goes to the parameter directory */
  int nvalues;
  char **inputs; /* the graph's data inputs, in order */
  int ninputs;
  char **outputs; /* the graph's outputs (what to --fetch), in order */
  int noutputs;
  int64_t opset;
  /* Set when import failed because of a node or variant we do not claim
   * (a conformance run skips those), or because a graph input must be a
   * constant (an initializer) for the node that reads it: its name. */
  bool unsupported;
  char *unsupported_op; /* the op type, "opset N" or "(graph)" */
  char *need_const;
  /* The batch (docs/onnx.md, "The batch"): the graph inputs' fixed first
   * dim as exported (0: none had one); batch_relaxed when it became -1,
   * else batch_kept says why it stays (the node that needs its value). */
  int64_t batch_from;
  bool batch_relaxed;
  char *batch_kept;
  /* Graph inputs read as BatchNormalization weights: parameters or state
   * with no value here (infer reads them from --params DIR, NAME.npy). */
  char **weights;
  int nweights;
} pd_onnx_import;

/* Reads and decodes an ONNX model file. */
pd_status pd_onnx_read(const char *path, Onnx__ModelProto **out, pd_error *err);
/* Reads a serialized TensorProto (the backend tests' input_0.pb) as a tensor. */
pd_status pd_onnx_read_tensor(const char *path, pd_tensor *out, char **name, pd_error *err);
/* A TensorProto as a tensor; `what` names it in messages. */
pd_status pd_onnx_tensor(const Onnx__TensorProto *tp, const char *what, pd_tensor *out, pd_error *err);

/* Gives graph input `name` of `m` the value t, as an initializer (the
 * importer then takes it as a constant: a Reshape's shape, a Clip's bounds,
 * ...): `import --constant NAME=FILE.npy`. An error (exit 2) names what
 * does not fit: no such graph input, one that already has a value, another
 * element type or rank, a dim that differs from a fixed one. */
pd_status pd_onnx_set_input(Onnx__ModelProto *m, const char *name, const pd_tensor *t, pd_error *err);

/* Imports model `m` (read from `file`, for messages). On failure out still
 * says why (unsupported, need_const); free it either way. */
pd_status pd_onnx_import_model(const Onnx__ModelProto *m, const char *file, pd_onnx_import *out, pd_error *err);
void pd_onnx_import_free(pd_onnx_import *im);
/* Writes the imported values as `dir`/NAME.npy, a parameter directory that
 * infer and train read with --params. dir must not exist or be empty; it is
 * filled beside and renamed into place, so a failure leaves nothing. */
pd_status pd_onnx_save_values(const pd_onnx_import *im, const char *dir, pd_error *err);

#endif
