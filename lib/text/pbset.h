/* pbset.h — `--set FIELD=VALUE`: set one field of a parsed message by its
 * text-format path ("train.optimizer.lr"), the value written as in the text
 * format (strings may be given without quotes). Generic over descriptors. */
#ifndef PD_PBSET_H
#define PD_PBSET_H

#include <protobuf-c/protobuf-c.h>

#include "base/error.h"

/* "train.optimizer.lr=0.01" applied to root. Intermediate messages are
 * created when missing; a repeated field gets the value appended. One
 * element of a repeated message is reached by index or, where its type has
 * a string field `name`, by name: "op[2].type=relu",
 * "block[cell].var[h].no_gradient=true" (docs/netdesc.md, "Blocks"). */
pd_status pd_pb_set(ProtobufCMessage *root, const char *assignment, pd_error *err);

#endif
