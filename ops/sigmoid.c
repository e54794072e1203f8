/* sigmoid.c — activation Out = 1 / (1 + exp(-X)), element by element,
 * without overflow for large |X|. Backward from the output:
 * dX = dOut * Out * (1 - Out). The math and kernels live in act.h, shared
 * with fc's fused activation. */
#define PD_ACT_OP
#include "act.h"

static const pd_act kind = PD_ACT_SIGMOID;
static const pd_slot_def outputs[] = {[PD_ACT_OUT] = {"Out", "sigmoid(X), X's shape", 0}};

const pd_op_def pd_op_sigmoid = PD_ACT_OP_DEF(
    "sigmoid", "Activation Out = 1 / (1 + exp(-X)), computed without overflow for large |X|.", outputs, &kind);
