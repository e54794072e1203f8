/* opproto.h — an op's description as a paddle.OpProto message. */
#ifndef PD_OPPROTO_H
#define PD_OPPROTO_H

#include "core/op.h"
#include "paddle.pb-c.h"

/* Free with protobuf_c_message_free_unpacked(&p->base, NULL). */
Paddle__OpProto *pd_op_proto(const pd_op_def *def);

#endif
