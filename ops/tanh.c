/* tanh.c — activation Out = tanh(X), element by element.
 * Backward from the output: dX = dOut * (1 - Out^2).
 * The math lives in act.h, shared with fc's fused activation. */
#include "act.h"
#include "op.h"

enum { X, N_IN };
enum { OUT, N_OUT };

static const pd_slot_def inputs[] = {{"X", "input tensor", 0}};
static const pd_slot_def outputs[] = {{"Out", "tanh(X), X's shape", 0}};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim, x->dims);
}

#define ACT_FORWARD(T)                                                                              \
  static pd_status forward_##T(pd_ctx *c) {                                                         \
    pd_tensor *x = pd_in(c, X);                                                                     \
    pd_act_forward_##T(PD_ACT_TANH, PD_DATA(x, T), PD_DATA(pd_out(c, OUT), T), pd_tensor_numel(x)); \
    return PD_OK;                                                                                   \
  }
ACT_FORWARD(float)
ACT_FORWARD(double)

/* Grad op slots (see op.h): inputs X Out dOut, output dX. */
enum { G_OUT = PD_GRAD_Y(N_IN, N_OUT, OUT), G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT) };

#define ACT_BACKWARD(T)                                                               \
  static pd_status backward_##T(pd_ctx *c) {                                          \
    pd_tensor *y = pd_in(c, G_OUT), *dy = pd_in(c, G_DOUT), *dx = pd_out(c, X);       \
    if (dx)                                                                           \
      pd_act_backward_##T(PD_ACT_TANH, PD_DATA(y, T), PD_DATA(dy, T), PD_DATA(dx, T), \
                          pd_tensor_numel(y));                                        \
    return PD_OK;                                                                     \
  }
ACT_BACKWARD(float)
ACT_BACKWARD(double)

static const pd_kernel kernels[] = {PD_CPU_F32(forward_float), PD_CPU_F64(forward_double)};
static const pd_kernel grad_kernels[] = {PD_CPU_F32(backward_float), PD_CPU_F64(backward_double)};

const pd_op_def pd_op_tanh = {
    .type = "tanh",
    .comment = "Activation Out = tanh(X).",
    .inputs = inputs, .n_inputs = N_IN,
    .outputs = outputs, .n_outputs = N_OUT,
    .infer_shape = infer,
    .kernels = kernels, .n_kernels = 2,
    .grad_kernels = grad_kernels, .n_grad_kernels = 2,
};
