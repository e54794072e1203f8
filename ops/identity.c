/* identity.c — Out = X, sharing X's storage (nothing is copied); ONNX's
 * Identity. Backward: dX = dOut. */
#include "identity.h"

#include <string.h>

#include "core/op.h"

static const pd_slot_def inputs[] = {[X] = {"X", "input tensor of any dtype", 0}};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "X itself (shares X's storage)", 0}};

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim, x->dims);
}

static pd_status forward(pd_ctx *c) {
  pd_tensor_share(pd_out(c, OUT), pd_in(c, X));
  return PD_OK;
}

static pd_status backward(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, X), *dout = pd_in(c, G_DOUT);
  if (!dx) return PD_OK;
  if (dout)
    pd_tensor_share(dx, dout);
  else
    memset(pd_tensor_data(dx), 0, pd_tensor_bytes(pd_in(c, G_X)));
  return PD_OK;
}

static const pd_kernel kernels[] = {
    {{PD_CPU, PD_F32}, forward}, {{PD_CPU, PD_F64}, forward}, {{PD_CPU, PD_I32}, forward},
    {{PD_CPU, PD_I64}, forward}, {{PD_CPU, PD_U8}, forward},
#ifdef PD_WITH_CUDA /* a view: the same on every place */
    {{PD_GPU, PD_F32}, forward}, {{PD_GPU, PD_F64}, forward}, {{PD_GPU, PD_I32}, forward},
    {{PD_GPU, PD_I64}, forward}, {{PD_GPU, PD_U8}, forward},
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward),
    PD_CPU_F64(backward),
#ifdef PD_WITH_CUDA /* a view too, or zeros on the device */
    PD_GPU_F32(pd_gpu_identity_bwd),
#endif
};

const pd_op_def pd_op_identity = {
    .type = "identity",
    .comment = "Out = X (shares X's storage; nothing is copied). Any dtype.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
    .views = 1, /* Out shares X's storage */
};
