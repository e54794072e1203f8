/* transpose.c — Out = X with its dims permuted: Out's dim i is X's dim
 * perm[i] (an empty perm reverses the dims, as ONNX's Transpose does).
 * Backward: dX = dOut permuted back (the inverse permutation). */
#include "transpose.h"

#include <string.h>

#include "core/op.h"
#include "op_helpers.h"

static const pd_slot_def inputs[] = {[X] = {"X", "input tensor of any dtype", 0}};
static const pd_slot_def outputs[] = {[OUT] = {"Out", "X with dims permuted: Out.dims[i] = X.dims[perm[i]]", 0}};
static const pd_attr_def attrs[] = {
    [A_PERM] = {"perm", "a permutation of 0 .. rank(X)-1; empty: the dims reversed", PD_ATTR_INTS, .def = "ints: []",
                .min_kind = PD_GE, .min = 0},
};

/* The permutation for X's rank (perm, or the reversal when perm is empty). */
void pd_transpose_perm(pd_ctx *c, int ndim, int *perm) {
  const pd_attr *p = pd_attr_at(c, A_PERM);
  for (int i = 0; i < ndim; i++) perm[i] = p->n ? (int)p->ints[i] : ndim - 1 - i;
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  const pd_attr *p = pd_attr_at(c, A_PERM);
  char ps[128], xs[128];
  if (p->n && p->n != x->ndim)
    return pd_ctx_fail(c, PD_ERR_INPUT, "perm %s has %d entries but X of shape %s has %d dims",
                       pd_dims_str(p->n, p->ints, ps, sizeof ps), p->n, pd_dims_str(x->ndim, x->dims, xs, sizeof xs),
                       x->ndim);
  bool seen[PD_MAX_DIMS] = {false};
  for (int i = 0; i < p->n; i++) {
    if (p->ints[i] >= x->ndim || seen[p->ints[i]])
      return pd_ctx_fail(c, PD_ERR_INPUT, "perm %s is not a permutation of 0 .. %d",
                         pd_dims_str(p->n, p->ints, ps, sizeof ps), x->ndim - 1);
    seen[p->ints[i]] = true;
  }
  int perm[PD_MAX_DIMS];
  int64_t dims[PD_MAX_DIMS];
  pd_transpose_perm(c, x->ndim, perm);
  for (int i = 0; i < x->ndim; i++) dims[i] = x->dims[perm[i]];
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, x->ndim, dims);
}

/* Walks Out in order with X's offset (kmath.h's pd_perm_map, which the GPU
 * kernels index directly): out[o] = in[xoff] when forward, in[xoff] = out[o]
 * when not (the gradient). Elements of esize bytes. */
static void permute(char *in, char *out, int nd, const int64_t *xdims, const int *perm, size_t esize, bool forward) {
  pd_perm_map p;
  int64_t idx[PD_MAX_DIMS] = {0}, off = 0;
  pd_perm_map_init(&p, nd, xdims, perm);
  for (int64_t o = 0; o < p.numel; o++) {
    if (forward)
      memcpy(out + o * esize, in + off * esize, esize);
    else
      memcpy(in + off * esize, out + o * esize, esize);
    for (int d = nd - 1; d >= 0; d--) {
      off += p.st[d];
      if (++idx[d] < p.size[d]) break;
      off -= p.st[d] * p.size[d];
      idx[d] = 0;
    }
  }
}

static pd_status forward(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  int perm[PD_MAX_DIMS];
  pd_transpose_perm(c, x->ndim, perm);
  permute(pd_tensor_data(x), pd_tensor_data(pd_out(c, OUT)), x->ndim, x->dims, perm, pd_dtype_size(x->dtype), true);
  return PD_OK;
}

static pd_status backward(pd_ctx *c) {
  pd_tensor *x = pd_in(c, G_X), *dout = pd_in(c, G_DOUT), *dx = pd_out(c, G_DX);
  if (!dx) return PD_OK;
  size_t es = pd_dtype_size(x->dtype);
  if (!dout) {
    memset(pd_tensor_data(dx), 0, (size_t)pd_tensor_numel(x) * es);
    return PD_OK;
  }
  int perm[PD_MAX_DIMS];
  pd_transpose_perm(c, x->ndim, perm);
  permute(pd_tensor_data(dx), pd_tensor_data(dout), x->ndim, x->dims, perm, es, false);
  return PD_OK;
}

static const pd_kernel kernels[] = {
    {{PD_CPU, PD_F32}, forward},
    {{PD_CPU, PD_F64}, forward},
    {{PD_CPU, PD_I32}, forward},
    {{PD_CPU, PD_I64}, forward},
    {{PD_CPU, PD_U8}, forward},
#ifdef PD_WITH_CUDA
    {{PD_GPU, PD_F32}, pd_gpu_transpose_fwd},
    {{PD_GPU, PD_F64}, pd_gpu_transpose_fwd},
    {{PD_GPU, PD_I32}, pd_gpu_transpose_fwd},
    {{PD_GPU, PD_I64}, pd_gpu_transpose_fwd},
    {{PD_GPU, PD_U8}, pd_gpu_transpose_fwd},
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward),
    PD_CPU_F64(backward),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_transpose_bwd),
#endif
};

const pd_op_def pd_op_transpose = {
    .type = "transpose",
    .comment = "Out = X with its dims permuted, Out.dims[i] = X.dims[perm[i]] (an empty perm reverses them). Any "
               "dtype.",
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
};
