/* reshape.c — Out = X with new dims, same elements in the same order. The
 * `shape` attribute may hold one -1 (inferred from the size) and 0s (copy X's
 * dim at that index); Out shares X's storage, so nothing is copied.
 * Backward: dX = dOut viewed with X's dims. */
#include "reshape.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/op.h"

static const pd_slot_def inputs[] = {[X] = {"X", "input tensor of any dtype", 0}};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "X's elements with the new dims (shares X's storage)", 0}};
static const pd_attr_def attrs[] = {
    [A_SHAPE] = {"shape", "the new dims; one may be -1 (inferred from the size), 0 copies X's dim at the same index",
                 PD_ATTR_INTS, .required = true, .min_kind = PD_GE, .min = -1},
};

/* a * b, or -1 when it overflows int64. */
static int64_t mul_checked(int64_t a, int64_t b) { return b != 0 && a > INT64_MAX / b ? -1 : a * b; }

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  const pd_attr *s = pd_attr_at(c, A_SHAPE);
  char xs[128], ss[128], why[160];
  if (s->n > PD_MAX_DIMS)
    return pd_ctx_fail(c, PD_ERR_INPUT, "shape %s has %d dims; at most %d are supported",
                       pd_dims_str(s->n, s->ints, ss, sizeof ss), s->n, PD_MAX_DIMS);
  pd_dims_str(x->ndim, x->dims, xs, sizeof xs);
  pd_dims_str(s->n, s->ints, ss, sizeof ss);
  /* Out's dims; `known` multiplies the known ones, `batch_out` counts the
   * -1s copied from X (by a 0), `batch_in` the -1s in X. */
  int64_t dims[PD_MAX_DIMS], known = 1, x_known = 1;
  int infer_at = -1, batch_out = 0, batch_in = 0;
  for (int i = 0; i < s->n; i++) {
    int64_t v = s->ints[i];
    if (v == -1) {
      if (infer_at >= 0)
        return pd_ctx_fail(c, PD_ERR_INPUT, "shape %s has more than one -1; only one dim can be inferred", ss);
      infer_at = i;
      dims[i] = -1;
      continue;
    }
    if (v == 0) {
      if (i >= x->ndim)
        return pd_ctx_fail(c, PD_ERR_INPUT, "shape %s copies dim %d of X (a 0), but X of shape %s has %d dims", ss, i,
                           xs, x->ndim);
      v = x->dims[i];
    }
    dims[i] = v;
    if (v < 0)
      batch_out++;
    else if ((known = mul_checked(known, v)) < 0)
      return pd_ctx_fail(c, PD_ERR_INPUT, "shape %s has more elements than fit in 64 bits", ss);
  }
  for (int i = 0; i < x->ndim; i++) {
    if (x->dims[i] < 0)
      batch_in++;
    else if ((x_known = mul_checked(x_known, x->dims[i])) < 0)
      return pd_ctx_fail(c, PD_ERR_INPUT, "X of shape %s has more elements than fit in 64 bits", xs);
  }
  why[0] = '\0';
  if (batch_in == batch_out) {
    /* The same unknown factor on both sides: the known parts must match. */
    const char *what = batch_in ? "X's known dims hold" : "X has";
    if (infer_at >= 0 && known == 0)
      snprintf(why, sizeof why, "the -1 cannot be inferred when the other dims multiply to 0");
    else if (infer_at >= 0 && x_known % known != 0)
      snprintf(why, sizeof why, "%s %lld elements, not a multiple of %lld", what, (long long)x_known, (long long)known);
    else if (infer_at < 0 && known != x_known)
      snprintf(why, sizeof why, "%s %lld elements, the shape %lld", what, (long long)x_known, (long long)known);
    else if (infer_at >= 0)
      dims[infer_at] = x_known / known;
  } else if (infer_at < 0 && batch_in - batch_out == 1 && x_known != 0 && known % x_known != 0) {
    /* Out's size is fixed; no batch size makes X's size equal to it. */
    snprintf(why, sizeof why, "the shape holds %lld elements, not a multiple of the %lld in each batch row of X",
             (long long)known, (long long)x_known);
  } /* else: a -1 in shape stays -1, the batch; checked again per mini-batch */
  if (why[0]) return pd_ctx_fail(c, PD_ERR_INPUT, "cannot reshape X of shape %s to shape %s: %s", xs, ss, why);
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, s->n, dims);
}

static pd_status forward(pd_ctx *c) {
  pd_tensor_view(pd_out(c, OUT), pd_in(c, X));
  return PD_OK;
}

static pd_status backward(pd_ctx *c) {
  pd_tensor *dx = pd_out(c, G_DX);
  if (dx) pd_tensor_view(dx, pd_in(c, G_DOUT));
  return PD_OK;
}

/* Any dtype reshapes (labels too); only floats have gradients. */
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
#ifdef PD_WITH_CUDA
    PD_GPU_F32(backward),
#endif
};

const pd_op_def pd_op_reshape = {
    .type = "reshape",
    .comment = "Out = X with dims `shape`: one -1 is inferred from the size, a 0 copies X's dim at that "
               "index (so [0, -1] flattens all but the batch). Out shares X's storage.",
    .inputs = inputs,
    .n_inputs = PD_LEN(inputs),
    .outputs = outputs,
    .n_outputs = PD_LEN(outputs),
    .attrs = attrs,
    .n_attrs = PD_LEN(attrs),
    .infer_shape = infer,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
    .views = 1, /* Out shares X's storage */
};
