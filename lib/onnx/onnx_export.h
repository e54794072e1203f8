/* onnx_export.h — a network with its parameters exported as an ONNX model
 * (onnx_export.c), opset 13. */
#ifndef PD_ONNX_EXPORT_H
#define PD_ONNX_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "core/net.h"
#include "core/scope.h"
#include "onnx.pb-c.h"

#define PD_ONNX_EXPORT_OPSET 13

/* Exports the ops of `net` that the `targets` need (inference: dropout off,
 * batch_norm with running statistics) with the parameters in `scope` as an
 * ONNX model (opset PD_ONNX_EXPORT_OPSET), serialized into *data (malloc'd). */
pd_status pd_onnx_export(const pd_net *net, pd_scope *scope, const int *targets, int ntargets, uint8_t **data,
                         size_t *len, pd_error *err);
/* A TensorProto named `name` holding t's values as raw data (malloc'd, as
 * protobuf-c's free_unpacked frees it); NULL when out of memory. */
Onnx__TensorProto *pd_onnx_tensor_proto(const char *name, const pd_tensor *t);
/* The default export targets: the outputs of the part of the net that ONNX
 * can express that no op of that part reads. *targets is malloc'd. */
pd_status pd_onnx_default_targets(const pd_net *net, int **targets, int *ntargets, pd_error *err);

#endif
