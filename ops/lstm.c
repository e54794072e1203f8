/* lstm.c — a whole LSTM (layers, directions, lengths) as one op:
 *   i = sigmoid(x Wi^T + h Ri^T + Pi * c_prev + b)   f likewise with Pf
 *   g = tanh(x Wg^T + h Rg^T + b)                    c = f * c_prev + i * g
 *   o = sigmoid(x Wo^T + h Ro^T + Po * c + b)        h = o * tanh(c)
 * (b: Wb + Rb of the gate). The driver is rnn_core.c; this file is the
 * cell (lstm_t.h) and the slots. Gate layouts: docs/netdesc.md. */
/* The gate pass's clamps and selects vectorise only where gcc may
 * if-convert a float comparison (nothing here reads the FP exception flags). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <string.h>

#include "core/op.h"
#include "cpu/blas.h"
#include "cpu/parallel.h"
#include "kmath.h"
#include "rnn_core.h"

enum { C0 = RNN_H0 + 1, P, WL, N_IN };
enum { CT = RNN_HT + 1, RESERVE, N_OUT };

static const pd_slot_def inputs[] = {
    [RNN_X] = {"X", "the sequences [batch, time, input]", 0},
    [RNN_W] = {"W", "layer 0's input weights [directions, 4*hidden, input], gates i f g o", PD_SLOT_PARAM},
    [RNN_R] = {"R", "recurrent weights [layers*directions, 4*hidden, hidden]", PD_SLOT_PARAM},
    [RNN_B] = {"B", "biases [layers*directions, 8*hidden]: Wb then Rb; left out: none",
               PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
    [RNN_LENGTHS] = {"Lengths", "int64 [batch]: each row's steps, 1 to time (left out: all)",
                     PD_SLOT_DISPENSABLE | PD_SLOT_NO_GRAD},
    [RNN_H0] = {"H0", "initial h [layers*directions, batch, hidden] (left out: zeros)", PD_SLOT_DISPENSABLE},
    [C0] = {"C0", "initial c [layers*directions, batch, hidden] (left out: zeros)", PD_SLOT_DISPENSABLE},
    [P] = {"P", "peepholes [layers*directions, 3*hidden], i o f (ONNX's); left out: none",
           PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
    [WL] = {"WL", "the input weights of layers 1 and up [(layers-1)*directions, 4*hidden, directions*hidden]",
            PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
};
static const pd_slot_def outputs[] = {
    [RNN_Y] = {"Y", "the last layer's h at every step [batch, time, directions*hidden], 0 past a row's length", 0},
    [RNN_HT] = {"HT", "final h [layers*directions, batch, hidden] (at each row's last step)", PD_SLOT_DISPENSABLE},
    [CT] = {"CT", "final c [layers*directions, batch, hidden]", PD_SLOT_DISPENSABLE},
    [RESERVE] = {"Reserve", "the values kept for the gradient (named <Y>@STEPS when left out)",
                 PD_SLOT_DISPENSABLE | PD_SLOT_STEPS},
};
static const pd_attr_def attrs[] = {PD_RNN_COMMON_ATTRS};

#define T float
#include "lstm_t.h"
#undef T
#define T double
#include "lstm_t.h"
#undef T

static const pd_rnn_cell cell = {
    .gates = 4,
    .has_c = true,
    .in_c0 = C0,
    .in_p = P,
    .in_wl = WL,
    .out_ct = CT,
    .out_reserve = RESERVE,
    .fwd_float = lstm_fwd_float,
    .fwd_double = lstm_fwd_double,
    .bwd_float = lstm_bwd_float,
    .bwd_double = lstm_bwd_double,
};

static const double param_init[N_IN] = {[RNN_X] = NAN,  [RNN_W] = NAN, [RNN_R] = NAN, [RNN_B] = 0, [RNN_LENGTHS] = NAN,
                                        [RNN_H0] = NAN, [C0] = NAN,    [P] = 0,       [WL] = NAN};
static const pd_kernel kernels[] = {PD_CPU_F32(pd_rnn_forward), PD_CPU_F64(pd_rnn_forward)};
static const pd_kernel grad_kernels[] = {PD_CPU_F32(pd_rnn_backward), PD_CPU_F64(pd_rnn_backward)};

const pd_op_def pd_op_lstm = {
    .type = "lstm",
    .comment = "A whole LSTM over sequences [batch, time, input]: layers, directions, per-row lengths, "
               "initial and final states, optional peepholes and clip (docs/netdesc.md, Fused recurrent ops).",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = pd_rnn_infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .kernel_dtype = pd_rnn_key_dtype,
    .flops = pd_rnn_flops,
    .grad_flops = pd_rnn_grad_flops,
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
    .data = &cell,
    .param_init = param_init,
};
