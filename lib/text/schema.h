/* schema.h — message descriptors by full name (schema.c). */
#ifndef PD_SCHEMA_H
#define PD_SCHEMA_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

/* Looks up a message descriptor by full name ("paddle.NetDesc") among the
 * schemas compiled into this binary: the top-level messages of the registered
 * files and every message type reachable from their fields. */
const ProtobufCMessageDescriptor *pd_schema_find(const char *full_name);

/* Registers more top-level descriptors (e.g. a test-only schema) for
 * pd_schema_find. `descs` must stay valid for the life of the process. */
void pd_schema_register(const ProtobufCMessageDescriptor *const *descs, size_t n);

#endif
