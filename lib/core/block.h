/* block.h — the sub-blocks of a NetDesc (NetDesc.block, docs/netdesc.md,
 * "Blocks"): their structure is checked when a net is loaded, before the
 * top-level variables and ops are built. No op runs a block yet (the
 * recurrent and if_else ops come later), so a net with blocks loads only as
 * far as the op naming one: that op's BLOCK attribute is unknown to it. */
#ifndef PD_BLOCK_H
#define PD_BLOCK_H

#include "core/net.h"

/* Checks net->desc's blocks, in this order, the first failure an input
 * error at the file position it is about: every block has a non-empty name
 * of its own; every attribute naming a block (AttrValue.block) names a
 * declared one, not the block its op is in; each block is run by exactly one
 * op and reached from the top-level ops (no cycle); no block redeclares a
 * variable of an enclosing block, and a parameter (kind PARAM) declared in a
 * block, which lives in the outermost scope, has a name no other block and
 * no top-level declaration uses. Then each block's variables and ops get the
 * checks of the top level (pd_net_build_desc), with messages naming the
 * block: `net.pbtxt:41:5: block "cell", op #2 "fc": ...`. */
pd_status pd_blocks_check(pd_net *net, pd_error *err);

/* Builds net->desc's variables and ops into net with the checks of a net's
 * loading (declarations, op types, slots, attributes). Defined in net.c;
 * pd_blocks_check runs it for each block on a scratch net. */
pd_status pd_net_build_desc(pd_net *net, pd_error *err);

#endif
