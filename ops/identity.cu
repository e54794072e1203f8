/* identity.cu — the GPU gradient of identity: dX shares dOut's storage as
 * on the CPU (identity.c's forward is a view, registered for the GPU as it
 * is); without a dOut, dX is zeros on the device. */
#include "identity.h"
#include "gpu_common.cuh"
#include "gpu_ops.h"

extern "C" pd_status pd_gpu_identity_bwd(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, X), *dout = pd_in(c, G_DOUT);
  if (!dx) return PD_OK;
  if (dout) {
    pd_tensor_share(dx, dout);
    return PD_OK;
  }
  return pd_gpu_zero(c, PD_DATA(dx, float), pd_tensor_bytes(pd_in(c, G_X)));
}
