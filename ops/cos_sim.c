/* cos_sim.c — cosine similarity of rows: Out[i] = scale <x_i, y_i> / (|x_i| |y_i|) for
 * X [N, D] and Y [N, D], or Y [1, D] compared with every row of X; also the norms
 * XNorm [N, 1] and YNorm [N or 1, 1]. A row of norm 0 gives Out 0 and no gradient.
 * Backward recomputes the norms; sums in double. */
#include <math.h>

#include "gpu_ops.h"
#include "kmath.h"
#include "core/op.h"

enum { X, Y, N_IN };
enum { OUT, XNORM, YNORM, N_OUT };
enum { A_SCALE, N_ATTR };

static const pd_slot_def inputs[] = {
    {"X", "rows to compare, [N, D]", 0},
    {"Y", "[N, D], row i compared with row i of X; or [1, D], compared with every row", 0},
};
static const pd_slot_def outputs[] = {
    {"Out", "scale times the cosine of each row pair, [N, 1]", 0},
    {"XNorm", "|x_i|, [N, 1]; may be left out", PD_SLOT_DISPENSABLE},
    {"YNorm", "|y_i|, [N, 1] (or [1, 1] for a broadcast Y); may be left out", PD_SLOT_DISPENSABLE},
};
static const pd_attr_def attrs[] = {
    {"scale", "factor on the cosine", PD_ATTR_FLOAT, .def = "f: 1.0", .min_kind = PD_GT, .min = 0},
};

static bool dim_fits(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

static pd_status infer(pd_ctx *c) {
  pd_tensor *x = pd_in(c, X), *y = pd_in(c, Y);
  char xs[128], ys[128];
  pd_dims_str(x->ndim, x->dims, xs, sizeof xs);
  pd_dims_str(y->ndim, y->dims, ys, sizeof ys);
  if (!pd_dtype_is_float(x->dtype) || y->dtype != x->dtype)
    return pd_ctx_fail(c, PD_ERR_INPUT, "X and Y must both be float32 or both float64, got %s and %s",
                       pd_dtype_name(x->dtype), pd_dtype_name(y->dtype));
  if (x->ndim != 2 || y->ndim != 2 || !dim_fits(x->dims[1], y->dims[1]) ||
      !(dim_fits(y->dims[0], x->dims[0]) || y->dims[0] == 1))
    return pd_ctx_fail(c, PD_ERR_INPUT, "X must be [N, D] and Y [N, D] or [1, D], got X %s and Y %s", xs, ys);
  int64_t n = x->dims[0] >= 0 || y->dims[0] == 1 ? x->dims[0] : y->dims[0];
  int64_t ny = y->dims[0] == 1 ? 1 : n;
  pd_status st = pd_ctx_set_shape(c, pd_out(c, OUT), x->dtype, 2, (int64_t[]){n, 1});
  if (!st) st = pd_ctx_set_shape(c, pd_out(c, XNORM), x->dtype, 2, (int64_t[]){n, 1});
  if (!st) st = pd_ctx_set_shape(c, pd_out(c, YNORM), x->dtype, 2, (int64_t[]){ny, 1});
  return st;
}

static double flops(pd_ctx *c) { return 6.0 * (double)pd_tensor_numel(pd_in(c, X)); }

/* <a, b>, |a|^2 and |b|^2 of two rows of length d, in double. */
#define DOT3(T)                                                                                 \
  static void dot3_##T(const T *a, const T *b, int64_t d, double *ab, double *aa, double *bb) { \
    double s = 0, sa = 0, sb = 0;                                                               \
    for (int64_t j = 0; j < d; j++) {                                                           \
      s += (double)a[j] * b[j];                                                                 \
      sa += (double)a[j] * a[j];                                                                \
      sb += (double)b[j] * b[j];                                                                \
    }                                                                                           \
    *ab = s, *aa = sa, *bb = sb;                                                                \
  }
DOT3(float)
DOT3(double)

#define COS_SIM_FORWARD(T)                                                                            \
  static pd_status forward_##T(pd_ctx *c) {                                                           \
    pd_tensor *xt = pd_in(c, X), *yt = pd_in(c, Y), *xnt = pd_out(c, XNORM), *ynt = pd_out(c, YNORM); \
    int64_t n = xt->dims[0], d = xt->dims[1], ystride = yt->dims[0] == 1 ? 0 : d;                     \
    double scale = pd_attr_f(c, A_SCALE);                                                             \
    const T *x = PD_DATA(xt, T), *y = PD_DATA(yt, T);                                                 \
    T *out = PD_DATA(pd_out(c, OUT), T);                                                              \
    if (ynt && !ystride) { /* broadcast Y: its one norm */                                            \
      double yy, unused;                                                                              \
      dot3_##T(y, y, d, &yy, &unused, &unused);                                                       \
      PD_DATA(ynt, T)[0] = (T)sqrt(yy);                                                               \
    }                                                                                                 \
    for (int64_t i = 0; i < n; i++) {                                                                 \
      double xy, xx, yy;                                                                              \
      dot3_##T(x + i * d, y + i * ystride, d, &xy, &xx, &yy);                                         \
      double nx = sqrt(xx), ny = sqrt(yy);                                                            \
      out[i] = (T)pd_cos_out(xy, xx, yy, scale);                                                      \
      if (xnt) PD_DATA(xnt, T)[i] = (T)nx;                                                            \
      if (ynt && ystride) PD_DATA(ynt, T)[i] = (T)ny;                                                 \
    }                                                                                                 \
    return PD_OK;                                                                                     \
  }
COS_SIM_FORWARD(float)
COS_SIM_FORWARD(double)

/* Grad op slots (see op.h): inputs X Y Out XNorm YNorm dOut dXNorm dYNorm, outputs dX dY.
 * With c = <x, y> / (|x| |y|):  dOut:   dx = s g (y / (|x| |y|) - c x / |x|^2), dy likewise;
 *                               dXNorm: dx += gx x / |x|;  dYNorm: dy += gy y / |y|.
 * A broadcast Y [1, D] collects dy over all rows. */
enum {
  G_X = PD_GRAD_X(N_IN, N_OUT, X),
  G_Y = PD_GRAD_X(N_IN, N_OUT, Y),
  G_DOUT = PD_GRAD_DY(N_IN, N_OUT, OUT),
  G_DXNORM = PD_GRAD_DY(N_IN, N_OUT, XNORM),
  G_DYNORM = PD_GRAD_DY(N_IN, N_OUT, YNORM),
  G_DX = PD_GRAD_DX(N_IN, N_OUT, X),
  G_DY = PD_GRAD_DX(N_IN, N_OUT, Y)
};

#define COS_SIM_BACKWARD(T)                                                                      \
  static pd_status backward_##T(pd_ctx *c) {                                                     \
    pd_tensor *xt = pd_in(c, G_X), *yt = pd_in(c, G_Y), *doutt = pd_in(c, G_DOUT);               \
    pd_tensor *dxnt = pd_in(c, G_DXNORM), *dynt = pd_in(c, G_DYNORM);                            \
    pd_tensor *gxt = pd_out(c, G_DX), *gyt = pd_out(c, G_DY);                                    \
    int64_t n = xt->dims[0], d = xt->dims[1], yrows = yt->dims[0], ystride = yrows == 1 ? 0 : d; \
    double scale = pd_attr_f(c, A_SCALE);                                                        \
    const T *x = PD_DATA(xt, T), *y = PD_DATA(yt, T);                                            \
    const T *dout = doutt ? PD_DATA(doutt, T) : NULL, *dxn = dxnt ? PD_DATA(dxnt, T) : NULL;     \
    const T *dyn = dynt ? PD_DATA(dynt, T) : NULL;                                               \
    T *gx = gxt ? PD_DATA(gxt, T) : NULL, *gy = gyt ? PD_DATA(gyt, T) : NULL;                    \
    for (int64_t i = 0; gy && i < yrows * d; i++) gy[i] = 0;                                     \
    for (int64_t i = 0; i < n; i++) {                                                            \
      const T *xi = x + i * d, *yi = y + i * ystride;                                            \
      double xy, xx, yy;                                                                         \
      dot3_##T(xi, yi, d, &xy, &xx, &yy);                                                        \
      /* dx = k y + kx x;  dy += k x + ky y */                                                   \
      pd_cos_coef q = pd_cos_coefs(xy, xx, yy, scale, dout ? dout[i] : 0, dxn ? dxn[i] : 0,      \
                                   dyn && ystride ? dyn[i] : 0, ystride != 0);                   \
      double k = q.k, kx = q.kx, ky = q.ky;                                                      \
      if (gx)                                                                                    \
        for (int64_t j = 0; j < d; j++) gx[i * d + j] = (T)(k * yi[j] + kx * xi[j]);             \
      if (gy)                                                                                    \
        for (int64_t j = 0; j < d; j++) gy[i * ystride + j] += (T)(k * xi[j] + ky * yi[j]);      \
    }                                                                                            \
    if (gy && dyn && !ystride) { /* broadcast Y: its one norm, counted once */                   \
      double yy, unused;                                                                         \
      dot3_##T(y, y, d, &yy, &unused, &unused);                                                  \
      double ny = sqrt(yy);                                                                      \
      for (int64_t j = 0; ny != 0 && j < d; j++) gy[j] += (T)(dyn[0] * y[j] / ny);               \
    }                                                                                            \
    return PD_OK;                                                                                \
  }
COS_SIM_BACKWARD(float)
COS_SIM_BACKWARD(double)

static const pd_kernel kernels[] = {
    PD_CPU_F32(forward_float),
    PD_CPU_F64(forward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_cos_sim_fwd),
#endif
};
static const pd_kernel grad_kernels[] = {
    PD_CPU_F32(backward_float),
    PD_CPU_F64(backward_double),
#ifdef PD_WITH_CUDA
    PD_GPU_F32(pd_gpu_cos_sim_bwd),
#endif
};

const pd_op_def pd_op_cos_sim = {
    .type = "cos_sim",
    .comment = "Cosine similarity of the rows of X [N, D] and Y [N, D] (or one row Y [1, D] against every "
               "row of X), times `scale`: Out [N, 1]; XNorm and YNorm are the row norms. A zero row gives 0, a row "
               "holding a NaN gives NaN.",
    .inputs = inputs,
    .n_inputs = N_IN,
    .outputs = outputs,
    .n_outputs = N_OUT,
    .attrs = attrs,
    .n_attrs = N_ATTR,
    .infer_shape = infer,
    .flops = flops,
    .kernels = kernels,
    .n_kernels = PD_LEN(kernels),
    .grad_kernels = grad_kernels,
    .n_grad_kernels = PD_LEN(grad_kernels),
};
