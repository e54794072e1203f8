/* fc.c — fully connected layer: Out = act(X · W + B), with X flattened to
 * [N, K] (every dim after the first is a feature). The weight [K, size] and
 * bias [size] are parameters whose shapes fc infers from X and `size`.
 * Forward and backward side by side; one body for float and double. */
#include "cpu/blas.h"
#include "gpu_ops.h"
#include "core/op.h"
#include "cpu/parallel.h"
#include "act.h"

enum { X, W, B, N_IN };
enum { OUT, N_OUT };
enum { A_SIZE, A_ACT };

static const pd_slot_def inputs[] = {
    {"X", "input [N, ...]; all dims after the first are features (K in total)", 0},
    {"W", "weight [K, size]", PD_SLOT_PARAM},
    {"B", "bias [size]; leave out for none", PD_SLOT_PARAM | PD_SLOT_DISPENSABLE},
};
static const pd_slot_def outputs[] = {{"Out", "act(X W + B), [N, size]", 0}};
static const pd_attr_def attrs[] = {
    {"size", "number of output features", PD_ATTR_INT, .required = true, .min_kind = PD_GT, .min = 0},
    {"act", "activation fused after the product", PD_ATTR_STRING, .def = "s: \"none\"", .one_of = pd_act_names},
};

/* X [N, d1, d2...] is read as [N, K]. */
static void flat(const pd_tensor *x, int64_t *n, int64_t *k) {
  *n = x->ndim > 0 ? x->dims[0] : 1;
  *k = 1;
  for (int i = 1; i < x->ndim; i++) *k = (*k < 0 || x->dims[i] < 0) ? -1 : *k * x->dims[i];
}

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X);
  int64_t n, k, size = pd_attr_i(c, A_SIZE);
  if (x->ndim < 2) return pd_ctx_fail(c, PD_ERR_INPUT, "input X must have at least 2 dims [N, K], got %d", x->ndim);
  if (!pd_dtype_is_float(x->dtype))
    return pd_ctx_fail(c, PD_ERR_INPUT, "input X must be float32 or float64, got %s (add a cast op)",
                       pd_dtype_name(x->dtype));
  flat(x, &n, &k);
  if (k < 0) return pd_ctx_fail(c, PD_ERR_INPUT, "only the first dim of X may be the batch (-1)");
  pd_status st = pd_ctx_param_shape(c, W, x->dtype, 2, (int64_t[]){k, size});
  if (!st && pd_in(c, B)) st = pd_ctx_param_shape(c, B, x->dtype, 1, &size);
  if (st) return st;
  return pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, 2, (int64_t[]){n, size});
}

static double flops(pd_ctx *c) {
  int64_t n, k;
  flat(pd_in(c, X), &n, &k);
  return 2.0 * (double)n * (double)k * (double)pd_attr_i(c, A_SIZE);
}

/* Grad op slots (see op.h): inputs X W B Out dOut, outputs dX dW dB. */
enum {
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_W = PD_GRAD_X(N_IN, N_OUT, W),
  G_OUT = PD_GRAD_Y(N_IN, N_OUT, OUT),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT)
};

/* Backward: a product for dW and one for dX, each when wanted. */
static double grad_flops(pd_ctx *c) {
  int64_t n, k;
  flat(pd_in(c, G_X), &n, &k);
  double one = 2.0 * (double)n * (double)k * (double)pd_attr_i(c, A_SIZE);
  return one * ((pd_out(c, W) != NULL) + (pd_out(c, X) != NULL));
}

/* Forward: Out = act(X W + b). The bias and the activation are the
 * product's epilogue (lib/cpu/blas.h): each thread applies them to its own block
 * of Out as soon as its product is done, while the block is in its cache.
 * (Out = product, then + bias rounds once, as BLIS's beta = 1 over a
 * bias-filled Out did: the same bits.) */
#define FC_FORWARD(T)                                                                                              \
  typedef struct fc_epilogue_##T {                                                                                 \
    const T *bias;                                                                                                 \
    pd_act act;                                                                                                    \
  } fc_epilogue_##T;                                                                                               \
  static void epilogue_##T(void *arg, void *cv, int64_t ldc, int64_t r0, int64_t rows, int64_t c0, int64_t cols) { \
    const fc_epilogue_##T *e = arg;                                                                                \
    (void)r0;                                                                                                      \
    for (int64_t i = 0; i < rows; i++) {                                                                           \
      T *row = (T *)cv + i * ldc;                                                                                  \
      if (e->bias) {                                                                                               \
        const T *bias = e->bias + c0;                                                                              \
        for (int64_t j = 0; j < cols; j++) row[j] += bias[j];                                                      \
      }                                                                                                            \
      pd_act_forward_##T(e->act, row, row, cols);                                                                  \
    }                                                                                                              \
  }                                                                                                                \
  static pd_status forward_##T(pd_ctx *c) {                                                                        \
    pd_tensor *x = pd_in(c, X), *w = pd_in(c, W), *b = pd_in(c, B), *y = pd_out(c, OUT);                           \
    int64_t n, k, m = pd_attr_i(c, A_SIZE);                                                                        \
    flat(x, &n, &k);                                                                                               \
    fc_epilogue_##T e = {b ? PD_DATA(b, T) : NULL, pd_act_parse(pd_attr_s(c, A_ACT))};                             \
    bool ep = e.bias || e.act != PD_ACT_NONE;                                                                      \
    pd_gemm_ep_##T(false, false, n, m, k, 1, PD_DATA(x, T), k, PD_DATA(w, T), m, 0, PD_DATA(y, T), m,              \
                   ep ? epilogue_##T : NULL, &e);                                                                  \
    return PD_OK;                                                                                                  \
  }
FC_FORWARD(float)
FC_FORWARD(double)

/* dPre = dOut * act'(Out); dW = X^T dPre; dB = column sums of dPre; dX =
 * dPre W^T. dPre and dB in one pass split by columns on the worker pool:
 * each column's sum still runs over the rows in order (the same bits on any
 * thread count). */
#define FC_GRAD_GRAIN ((int64_t)1 << 15) /* elements a part at least */
#define FC_BACKWARD(T)                                                                              \
  typedef struct fc_pre_##T {                                                                       \
    pd_act act;                                                                                     \
    int64_t n, m;                                                                                   \
    const T *y, *dy;                                                                                \
    T *pre, *db; /* pre NULL: dPre is dOut (no activation) */                                       \
  } fc_pre_##T;                                                                                     \
  static void pre_range_##T(void *arg, int64_t lo, int64_t hi) { /* columns lo..hi */               \
    const fc_pre_##T *j = arg;                                                                      \
    if (j->db)                                                                                      \
      for (int64_t q = lo; q < hi; q++) j->db[q] = 0;                                               \
    for (int64_t i = 0; i < j->n; i++) {                                                            \
      const T *src = j->dy + i * j->m + lo;                                                         \
      if (j->pre) {                                                                                 \
        T *pre = j->pre + i * j->m + lo;                                                            \
        pd_act_backward_##T(j->act, j->y + i * j->m + lo, src, pre, hi - lo);                       \
        src = pre;                                                                                  \
      }                                                                                             \
      if (j->db)                                                                                    \
        for (int64_t q = lo; q < hi; q++) j->db[q] += src[q - lo];                                  \
    }                                                                                               \
  }                                                                                                 \
  static pd_status backward_##T(pd_ctx *c) {                                                        \
    pd_tensor *x = pd_in(c, G_X), *w = pd_in(c, G_W), *y = pd_in(c, G_OUT), *dy = pd_in(c, G_DOUT); \
    pd_tensor *dx = pd_out(c, X), *dw = pd_out(c, W), *db = pd_out(c, B);                           \
    int64_t n, k, m = pd_attr_i(c, A_SIZE);                                                         \
    flat(x, &n, &k);                                                                                \
    fc_pre_##T j = {pd_act_parse(pd_attr_s(c, A_ACT)), n, m, PD_DATA(y, T), PD_DATA(dy, T), NULL,   \
                    db ? PD_DATA(db, T) : NULL};                                                    \
    if (j.act != PD_ACT_NONE) {                                                                     \
      pd_tensor *tmp = &c->op->work[0];                                                             \
      tmp->dtype = dy->dtype;                                                                       \
      pd_status st = pd_tensor_set_dims(tmp, 2, (int64_t[]){n, m}, c->err);                         \
      if (!st) st = pd_ctx_alloc(c, tmp);                                                           \
      if (st) return st;                                                                            \
      j.pre = PD_DATA(tmp, T);                                                                      \
    }                                                                                               \
    if (j.pre || j.db) {                                                                            \
      int64_t grain = n > 0 ? (FC_GRAD_GRAIN + n - 1) / n : m;                                      \
      pd_parallel_for(m, grain < 16 ? 16 : grain, pre_range_##T, &j);                               \
    }                                                                                               \
    const T *g = j.pre ? j.pre : j.dy;                                                              \
    if (dw) pd_gemm_##T(true, false, k, m, n, 1, PD_DATA(x, T), k, g, m, 0, PD_DATA(dw, T), m);     \
    if (dx) pd_gemm_##T(false, true, n, k, m, 1, g, m, PD_DATA(w, T), m, 0, PD_DATA(dx, T), k);     \
    return PD_OK;                                                                                   \
  }
FC_BACKWARD(float)
FC_BACKWARD(double)

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_fc_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_fc_bwd),
#endif
};

const pd_op_def pd_op_fc = {
    .type = "fc",
    .comment = "Fully connected layer: Out = act(X W + B). W and B are parameters; their shapes "
               "follow from X and `size`, so they need not be declared.",
    .inputs = inputs,
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .attrs = attrs,
    .n_attrs = 2,
    .infer_shape = infer,
    .flops = flops,
    .grad_flops = grad_flops,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
