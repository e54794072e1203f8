/* relu.c — activation Out = max(X, 0), element by element.
 * Backward from the output: dX = dOut where Out > 0, else 0.
 * The math and kernels live in act.h, shared with fc's fused activation. */
#define PD_ACT_OP
#include "act.h"

static const pd_act kind = PD_ACT_RELU;
static const pd_slot_def outputs[] = {[PD_ACT_OUT] = {"Out", "relu(X), X's shape", 0}};

const pd_op_def pd_op_relu =
    PD_ACT_OP_DEF("relu", "Activation Out = max(X, 0); a NaN stays NaN (as PyTorch).", outputs, &kind);
