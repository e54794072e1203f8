/* onnx_import_int.h — what onnx_import.c lends the control-flow mappings
 * of onnx_import_flow.c (Scan, Loop, If): the importer's state stays
 * private to onnx_import.c; these wrappers are its services. */
#ifndef PD_ONNX_IMPORT_INT_H
#define PD_ONNX_IMPORT_INT_H

#include <stdbool.h>

#include "base/util.h"
#include "onnx/onnx_import.h"
#include "text/textformat.h"

typedef struct imp imp;

/* the mappings (onnx_import_flow.c) */
pd_status pd_onnx_map_scan(imp *im, const Onnx__NodeProto *n);
pd_status pd_onnx_map_loop(imp *im, const Onnx__NodeProto *n);
pd_status pd_onnx_map_if(imp *im, const Onnx__NodeProto *n);

/* paddle-run's own metadata_props (onnx_export.c writes them): before
 * the nodes (post false) the carried states are marked, after them their
 * write-backs and the text binding are added. */
pd_status pd_onnx_import_metadata(imp *im, const Onnx__ModelProto *m, bool post);

/* services (onnx_import.c) */
int64_t pd_onnx_im_opset(const imp *im);
/* An unsupported node or variant: exit 2 naming the node being mapped. */
pd_status pd_onnx_im_unsupported(imp *im, const char *why);
/* An error in the model itself (not a skip), naming the file. */
pd_status pd_onnx_im_bad(imp *im, const char *why);
const char *pd_onnx_im_fresh(imp *im, const char *base, const char *what);
bool pd_onnx_im_has_name(const imp *im, const char *name);
pd_status pd_onnx_im_add_name(imp *im, const char *name);
/* The dtype and load-time shape of a value (inferring pending ops). */
pd_status pd_onnx_im_meta(imp *im, const char *name, pd_tensor *out);
/* Records the dtype and shape of a value an op outside shape inference
 * (one that runs a block) computes. */
pd_status pd_onnx_im_set_meta(imp *im, const char *name, const pd_tensor *t);
/* A constant known at import, or NULL. */
const pd_tensor *pd_onnx_im_const(imp *im, const char *name);
/* As above, or unsupported saying it must be one (a graph input is noted
 * for the conformance run to fold). */
pd_status pd_onnx_im_need_const(imp *im, const char *name, const char *what, const pd_tensor **out);
/* Takes t as the constant `name` (a name from pd_onnx_im_fresh or the model). */
pd_status pd_onnx_im_add_const(imp *im, const char *name, pd_tensor *t);
/* The value as an op input (a constant is declared on first use). */
pd_status pd_onnx_im_use(imp *im, const char *name);
/* Appends op `type` whose shapes are inferred with the others; attrs is
 * the text of its attrs entries (or NULL). */
pd_status pd_onnx_im_emit(imp *im, const char *type, int nin, const char *const *ins, int nout, const char *const *outs,
                          const char *attrs);
/* Appends text to the ops as it is (a block, an op that runs one): never
 * inferred on its own, so its outputs need pd_onnx_im_set_meta. */
pd_status pd_onnx_im_emit_raw(imp *im, const char *text);
/* Maps the nodes of subgraph g into the current scope, their ops written to
 * *ops (NULL: where ops go now); pending shapes are inferred after. */
pd_status pd_onnx_im_import_nodes(imp *im, const Onnx__GraphProto *g, pd_buf *ops);
/* Declares an initializer as a STATE (not trained) starting at zero where
 * no value is loaded: a state carried from run to run. */
pd_status pd_onnx_im_declare_carried(imp *im, const char *name);
/* Swaps the buffer ops are written to with *b (a block's, and back). */
void pd_onnx_im_swap_ops(imp *im, pd_buf *b);
/* s quoted for the text format. */
void pd_onnx_im_put_str(pd_buf *b, const char *s);

#endif
