/* tanh.c — activation Out = tanh(X), element by element.
 * Backward from the output: dX = dOut * (1 - Out^2).
 * The math and kernels live in act.h, shared with fc's fused activation. */
#define PD_ACT_OP
#include "act.h"

static const pd_act kind = PD_ACT_TANH;
static const pd_slot_def outputs[] = {[PD_ACT_OUT] = {"Out", "tanh(X), X's shape", 0}};

const pd_op_def pd_op_tanh = PD_ACT_OP_DEF("tanh", "Activation Out = tanh(X).", outputs, &kind);
