/* ops.c — the built-in operators, as the table the registry reads
 * (core/op.h declares it; the core names it, this layer fills it). The
 * list itself is ops/ops.def, one line an op. */
#include "core/op.h"

#define PD_OP(name) extern const pd_op_def pd_op_##name;
#include "ops.def"
#undef PD_OP

const pd_op_def *const pd_builtin_ops[] = {
#define PD_OP(name) &pd_op_##name,
#include "ops.def"
#undef PD_OP
};
const int pd_n_builtin_ops = PD_LEN(pd_builtin_ops);
