/* gru.c — a whole GRU as one op (ONNX's and PyTorch's formulas):
 *   r = sigmoid(x Wr^T + h Rr^T + Wbr + Rbr)   z likewise
 *   n = tanh(x Wn^T + Wbn + r * (h Rn^T + Rbn))    linear_before_reset 1 (PyTorch's)
 *   n = tanh(x Wn^T + Wbn + (r * h) Rn^T + Rbn)    linear_before_reset 0 (ONNX's default)
 *   h = (1 - z) * n + z * h_prev
 * over layers, directions and per-row lengths. The driver is rnn_core.c;
 * this file is the cell (gru_t.h) and the slots. docs/netdesc.md. */
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

enum { WL = RNN_H0 + 1, N_IN };
enum { RESERVE = RNN_HT + 1, N_OUT };
enum { A_LBR = RNN_A_OWN };

static const pd_slot_def inputs[] = {
    [RNN_X] = {"X", "the sequences [batch, time, input]", 0},
    [RNN_W] = {"W", "layer 0's input weights [directions, 3*hidden, input], gates r z n", PD_SLOT_PARAM},
    [RNN_R] = {"R", "recurrent weights [layers*directions, 3*hidden, hidden]", PD_SLOT_PARAM},
    [RNN_B] = {"B", "biases [layers*directions, 6*hidden]: Wb then Rb; left out: none",
               PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
    [RNN_LENGTHS] = {"Lengths", "int64 [batch]: each row's steps, 1 to time (left out: all)",
                     PD_SLOT_DISPENSABLE | PD_SLOT_NO_GRAD},
    [RNN_H0] = {"H0", "initial h [layers*directions, batch, hidden] (left out: zeros)", PD_SLOT_DISPENSABLE},
    [WL] = {"WL", "the input weights of layers 1 and up [(layers-1)*directions, 3*hidden, directions*hidden]",
            PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
};
static const pd_slot_def outputs[] = {
    [RNN_Y] = {"Y", "the last layer's h at every step [batch, time, directions*hidden], 0 past a row's length", 0},
    [RNN_HT] = {"HT", "final h [layers*directions, batch, hidden] (at each row's last step)", PD_SLOT_DISPENSABLE},
    [RESERVE] = {"Reserve", "the values kept for the gradient (named <Y>@STEPS when left out)",
                 PD_SLOT_DISPENSABLE | PD_SLOT_STEPS},
};
static const pd_attr_def attrs[] = {
    PD_RNN_COMMON_ATTRS,
    [A_LBR] = {"linear_before_reset", "1: r multiplies h R_n^T + Rb_n (PyTorch); 0: r multiplies h (ONNX's default)",
               PD_ATTR_INT, .def = "i: 0", .min_kind = PD_GE, .min = 0, .max_kind = PD_GE, .max = 1},
};

#define T float
#include "gru_t.h"
#undef T
#define T double
#include "gru_t.h"
#undef T

static const pd_rnn_cell cell = {
    .gates = 3,
    .extra = true,
    .split = 2,
    .in_c0 = -1,
    .in_p = -1,
    .in_wl = WL,
    .out_ct = -1,
    .out_reserve = RESERVE,
    .fwd_float = gru_fwd_float,
    .fwd_double = gru_fwd_double,
    .bwd_float = gru_bwd_float,
    .bwd_double = gru_bwd_double,
};

/* left out after X: the weights made as <Y>.w, <Y>.r, <Y>.b (one layer:
 * WL, the weights of layers 1 and up, is named in the op's inputs) */
static const char *const fill_in[N_IN] = {[RNN_W] = "w", [RNN_R] = "r", [RNN_B] = "b"};
static const double param_init[N_IN] = {
    [RNN_X] = NAN, [RNN_W] = NAN, [RNN_R] = NAN, [RNN_B] = 0, [RNN_LENGTHS] = NAN, [RNN_H0] = NAN, [WL] = NAN};
static const pd_kernel kernels[] = {
    PD_CPU_F32(pd_rnn_forward),
    PD_CPU_F64(pd_rnn_forward),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_rnn_forward),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(pd_rnn_backward),
    PD_CPU_F64(pd_rnn_backward),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_rnn_backward),
#endif
};

const pd_op_def pd_op_gru = {
    .type = "gru",
    .comment = "A whole GRU over sequences [batch, time, input]: layers, directions, per-row lengths, initial and "
               "final states, linear_before_reset 0 or 1, optional clip (docs/netdesc.md, Fused recurrent ops).",
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
    .fill_in = fill_in,
};
