/* netdesc_out.h — a network (with any backward and optimizer ops) as a
 * NetDesc that loads back into the same network. */
#ifndef PD_NETDESC_OUT_H
#define PD_NETDESC_OUT_H

#include "core/net.h"

/* Free with protobuf_c_message_free_unpacked(&d->base, NULL). */
Paddle__NetDesc *pd_net_to_desc(const pd_net *net);

#endif
