/* pbset.h — `--set FIELD=VALUE`: set one field of a parsed message by its
 * text-format path ("train.optimizer.lr"), the value written as in the text
 * format (strings may be given without quotes). Generic over descriptors. */
#ifndef PD_PBSET_H
#define PD_PBSET_H

#include <protobuf-c/protobuf-c.h>

#include "base/error.h"

/* "train.optimizer.lr=0.01" applied to root. Intermediate messages are
 * created when missing; a repeated field gets the value appended. */
pd_status pd_pb_set(ProtobufCMessage *root, const char *assignment, pd_error *err);

#endif
