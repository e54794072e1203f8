/* broadcast_sub.c — Out = X - Y element by element with NumPy (ONNX)
 * broadcasting; dX = dOut, dY = -dOut, each summed over
 * the dims its operand was repeated along. The kernels live in broadcast.h. */
#define PD_BC_OP
#include "broadcast.h"

static const pd_bc_kind kind = PD_BC_SUB;
static const pd_slot_def outputs[] = {[PD_BC_OUT] = {"Out", "X - Y, of the broadcast shape of X and Y", 0}};

const pd_op_def pd_op_broadcast_sub =
    PD_BC_OP_DEF("broadcast_sub",
                 "Out = X - Y with NumPy broadcasting (as ONNX's Sub from opset 7): the dims line up from the last, a "
                 "missing or size-1 dim repeats. Any dtype; integers wrap on overflow.",
                 outputs, &kind);
