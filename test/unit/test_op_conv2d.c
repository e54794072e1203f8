/* test_op_conv2d.c — conv2d against a plain float64 loop:
 *   Output[n, m, oh, ow] = Bias[m] + sum_{c < C/G, i < kh, j < kw}
 *       Filter[m, c, i, j] * Input[n, (m / (M/G)) (C/G) + c, oh sh - ph + i dh, ow sw - pw + j dw]
 * with taps outside the image reading 0, Ho = (H + 2 ph - dh (kh - 1) - 1) / sh + 1
 * (likewise Wo), in float32 and float64 over odd sizes: strides, padding,
 * dilation, groups (depthwise too), 1x1 kernels, a kernel as large as the
 * input, no bias, and batches split over several unrolled chunks. Then shape
 * inference with a -1 batch, the error messages, FLOP counts, and every
 * gradient against finite differences. */
#include "optest.h"
#include "cpu/parallel.h"

typedef struct cfg {
  int64_t n, c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  bool bias;
} cfg;

/* Attribute texts for a configuration; the strings live in `buf`. */
typedef struct attr_buf {
  char m[32], k[48], s[48], p[48], d[48], g[32];
  const char *list[13];
} attr_buf;

static const char *const *conv_attrs(const cfg *q, attr_buf *b) {
  snprintf(b->m, sizeof b->m, "i: %lld", (long long)q->m);
  snprintf(b->k, sizeof b->k, "ints: [%lld, %lld]", (long long)q->kh, (long long)q->kw);
  snprintf(b->s, sizeof b->s, "ints: [%lld, %lld]", (long long)q->sh, (long long)q->sw);
  snprintf(b->p, sizeof b->p, "ints: [%lld, %lld]", (long long)q->ph, (long long)q->pw);
  snprintf(b->d, sizeof b->d, "ints: [%lld, %lld]", (long long)q->dh, (long long)q->dw);
  snprintf(b->g, sizeof b->g, "i: %lld", (long long)q->groups);
  const char *l[] = {"num_filters", b->m,        "kernel_size", b->k,     "strides", b->s, "paddings",
                     b->p,          "dilations", b->d,          "groups", b->g,      NULL};
  memcpy(b->list, l, sizeof l);
  return b->list;
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* The reference, and beside it the sum of |terms| of each output (the scale
 * float32 rounding errors grow with). */
static void conv_ref(const cfg *q, const pd_tensor *x, const pd_tensor *f, const pd_tensor *b, double *out,
                     double *mag) {
  int64_t ho = out_size(q->h, q->kh, q->sh, q->ph, q->dh), wo = out_size(q->w, q->kw, q->sw, q->pw, q->dw);
  int64_t cg = q->c / q->groups, mg = q->m / q->groups;
  for (int64_t n = 0; n < q->n; n++)
    for (int64_t m = 0; m < q->m; m++)
      for (int64_t oh = 0; oh < ho; oh++)
        for (int64_t ow = 0; ow < wo; ow++) {
          double s = b ? pd_tensor_get(b, m) : 0, a = fabs(s);
          for (int64_t c = 0; c < cg; c++)
            for (int64_t i = 0; i < q->kh; i++)
              for (int64_t j = 0; j < q->kw; j++) {
                int64_t ih = oh * q->sh - q->ph + i * q->dh, iw = ow * q->sw - q->pw + j * q->dw;
                if (ih < 0 || ih >= q->h || iw < 0 || iw >= q->w) continue;
                int64_t ch = (m / mg) * cg + c;
                double t = pd_tensor_get(f, ((m * cg + c) * q->kh + i) * q->kw + j) *
                           pd_tensor_get(x, ((n * q->c + ch) * q->h + ih) * q->w + iw);
                s += t, a += fabs(t);
              }
          int64_t at = ((n * q->m + m) * ho + oh) * wo + ow;
          out[at] = s, mag[at] = a;
        }
}

static void check_forward(pd_dtype dt, cfg q) {
  pd_tensor *x = ot_rand(dt, 4, (int64_t[]){q.n, q.c, q.h, q.w}, 1, -1, 1, 0);
  pd_tensor *f = ot_rand(dt, 4, (int64_t[]){q.m, q.c / q.groups, q.kh, q.kw}, 2, -1, 1, 0);
  pd_tensor *b = q.bias ? ot_rand(dt, 1, (int64_t[]){q.m}, 3, -1, 1, 0) : NULL;
  pd_tensor *y = ot_out();
  attr_buf ab;
  ot_run("conv2d", conv_attrs(&q, &ab), (pd_tensor *[]){x, f, b}, NULL, (pd_tensor *[]){y}, NULL);
  int64_t ho = out_size(q.h, q.kh, q.sh, q.ph, q.dh), wo = out_size(q.w, q.kw, q.sw, q.pw, q.dw);
  ot_assert_dims(y, q.n, q.m, ho, wo);
  assert_int_equal(y->dtype, dt);
  int64_t total = q.n * q.m * ho * wo;
  double *ref = malloc(sizeof(double) * (size_t)total), *mag = malloc(sizeof(double) * (size_t)total);
  conv_ref(&q, x, f, b, ref, mag);
  double tol = dt == PD_F32 ? 1e-5 : 1e-13;
  for (int64_t i = 0; i < total; i++) {
    double got = pd_tensor_get(y, i);
    if (!(fabs(got - ref[i]) <= tol * (mag[i] + 1e-300)))
      fail_msg("conv2d %s [%lld]: got %.17g, expected %.17g (error %g > %g x sum|terms| %g)", pd_dtype_name(dt),
               (long long)i, got, ref[i], fabs(got - ref[i]), tol, mag[i]);
  }
  free(ref), free(mag);
  ot_free(x), ot_free(f), ot_free(b), ot_free(y);
}

/* {n, c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw, groups, bias} */
static const cfg forward_cases[] = {
    {1, 3, 7, 9, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1, true},     /* plain 3x3 */
    {3, 2, 9, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},     /* "same" padding */
    {3, 3, 11, 9, 4, 3, 2, 2, 3, 1, 2, 1, 1, 1, true},    /* strides > 1, uneven padding */
    {1, 2, 9, 11, 3, 3, 3, 1, 2, 2, 1, 2, 3, 1, true},    /* dilation */
    {3, 4, 7, 7, 6, 3, 3, 2, 1, 1, 1, 1, 1, 2, true},     /* groups 2 */
    {3, 3, 9, 7, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3, true},     /* depthwise, M = C */
    {1, 3, 7, 9, 6, 5, 3, 2, 2, 2, 1, 1, 1, 3, false},    /* depthwise, 2 filters per channel */
    {3, 5, 7, 9, 4, 1, 1, 1, 1, 0, 0, 1, 1, 1, true},     /* 1x1: the image is its own column matrix */
    {3, 6, 5, 7, 4, 1, 1, 1, 1, 0, 0, 1, 1, 2, false},    /* 1x1 with groups */
    {3, 5, 7, 9, 4, 1, 1, 2, 2, 0, 0, 1, 1, 1, true},     /* 1x1 with stride 2 */
    {1, 3, 5, 7, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},     /* 1x1 with padding */
    {3, 2, 5, 7, 3, 5, 7, 1, 1, 0, 0, 1, 1, 1, true},     /* kernel = input: 1x1 output */
    {1, 3, 5, 5, 2, 5, 5, 2, 2, 2, 2, 1, 1, 1, false},    /* kernel = input, padded, no bias */
    {3, 2, 15, 15, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},   /* 225 outputs per image: chunks of 2 + 1 images */
    {7, 3, 13, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, false},  /* chunks of 3 + 3 + 1 */
    {3, 2, 16, 16, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},   /* 2 images of 256: scratch rows padded apart */
    {2, 2, 16, 32, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},   /* one image of 512, padded rows */
    {3, 1, 28, 28, 4, 5, 5, 1, 1, 2, 2, 1, 1, 1, true},   /* Fashion-MNIST's first layer */
    {2, 2, 9, 20, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},   /* 11 filters: 8 at a time and 3 (the direct path) */
    {2, 1, 12, 12, 16, 5, 5, 2, 1, 2, 2, 1, 1, 1, false}, /* 16 filters, row stride 2, no bias */
    {2, 8, 14, 14, 40, 5, 5, 1, 1, 2, 2, 1, 1, 1, true},  /* packed taps: 14-wide rows, 40 filters (32 + 8) */
    {1, 6, 20, 17, 33, 3, 3, 2, 1, 1, 1, 1, 1, 1, false}, /* packed, row stride 2, 33 filters, no bias */
    {2, 12, 13, 25, 7, 3, 3, 1, 1, 0, 0, 1, 2, 1, true},  /* packed, column dilation 2, 7 filters */
};

static void test_forward(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof forward_cases / sizeof forward_cases[0]; i++) {
    check_forward(PD_F32, forward_cases[i]);
    check_forward(PD_F64, forward_cases[i]);
  }
}

/* Default attributes: stride 1, no padding, no dilation, one group. */
static void test_defaults(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F64, 4, (int64_t[]){2, 3, 6, 5}, 1, -1, 1, 0);
  pd_tensor *f = ot_rand(PD_F64, 4, (int64_t[]){4, 3, 3, 2}, 2, -1, 1, 0), *y = ot_out();
  const char *attrs[] = {"num_filters", "i: 4", "kernel_size", "ints: [3, 2]", NULL};
  ot_run("conv2d", attrs, (pd_tensor *[]){x, f, NULL}, NULL, (pd_tensor *[]){y}, NULL);
  ot_assert_dims(y, 2, 4, 4, 4);
  cfg q = {2, 3, 6, 5, 4, 3, 2, 1, 1, 0, 0, 1, 1, 1, false};
  double ref[128], mag[128];
  conv_ref(&q, x, f, NULL, ref, mag);
  ot_assert_close(y, ref, 128, 1e-12);
  ot_free(x), ot_free(f), ot_free(y);
}

/* At load the batch is -1: Output keeps it, Filter and Bias get their shapes. */
static void test_infer_shapes(void **state) {
  (void)state;
  pd_tensor *x = ot_shaped(PD_F32, 4, (int64_t[]){-1, 6, 28, 27});
  pd_tensor *f = ot_out(), *b = ot_out(), *y = ot_out();
  const char *attrs[] = {"num_filters", "i: 8",         "kernel_size", "ints: [5, 3]", "strides", "ints: [2, 1]",
                         "paddings",    "ints: [2, 0]", "groups",      "i: 2",         NULL};
  assert_int_equal(ot_infer("conv2d", attrs, (pd_tensor *[]){x, f, b}, NULL, (pd_tensor *[]){y}, NULL, NULL), PD_OK);
  ot_assert_dims(y, -1, 8, 14, 25);
  ot_assert_dims(f, 8, 3, 5, 3);
  ot_assert_dims(b, 8);
  assert_int_equal(f->dtype, PD_F32);
  ot_free(x), ot_free(f), ot_free(b), ot_free(y);
}

static const char *infer_fail(const char *const *attrs, int ndim, const int64_t *dims, pd_tensor *f) {
  pd_tensor *x = ot_shaped(PD_F32, ndim, dims), *y = ot_out(), *fo = f ? f : ot_out();
  const char *msg;
  assert_int_not_equal(ot_infer("conv2d", attrs, (pd_tensor *[]){x, fo, NULL}, NULL, (pd_tensor *[]){y}, NULL, &msg),
                       PD_OK);
  ot_free(x), ot_free(y);
  if (!f) ot_free(fo);
  return msg;
}

#define assert_contains(msg, want)                                                       \
  do {                                                                                   \
    if (!strstr((msg), (want))) fail_msg("message \"%s\"\nlacks \"%s\"", (msg), (want)); \
  } while (0)

static void test_errors(void **state) {
  (void)state;
  const char *k5[] = {"num_filters", "i: 2", "kernel_size", "ints: [5, 5]", NULL};
  assert_contains(infer_fail(k5, 4, (int64_t[]){2, 3, 3, 3}, NULL),
                  "kernel 5x5 (span 5x5 with dilations [1, 1]) is larger than the padded input 3x3 (input 3x3, "
                  "paddings [0, 0]); the output would be empty");
  const char *dil[] = {"num_filters", "i: 2",         "kernel_size", "ints: [3, 3]", "dilations", "ints: [3, 1]",
                       "paddings",    "ints: [1, 0]", NULL};
  assert_contains(infer_fail(dil, 4, (int64_t[]){2, 3, 4, 8}, NULL),
                  "kernel 3x3 (span 7x3 with dilations [3, 1]) is larger than the padded input 6x8 (input 4x8, "
                  "paddings [1, 0])");
  const char *g2[] = {"num_filters", "i: 4", "kernel_size", "ints: [3, 3]", "groups", "i: 2", NULL};
  assert_contains(infer_fail(g2, 4, (int64_t[]){2, 3, 5, 5}, NULL),
                  "input channels C = 3 (Input [2, 3, 5, 5]) are not divisible by groups = 2");
  const char *g2m[] = {"num_filters", "i: 3", "kernel_size", "ints: [3, 3]", "groups", "i: 2", NULL};
  assert_contains(infer_fail(g2m, 4, (int64_t[]){2, 4, 5, 5}, NULL), "num_filters = 3 is not divisible by groups = 2");
  const char *k3[] = {"num_filters", "i: 2", "kernel_size", "ints: [3, 3]", NULL};
  assert_contains(infer_fail(k3, 3, (int64_t[]){2, 5, 5}, NULL), "Input must be 4-D [N, C, H, W], got shape [2, 5, 5]");
  assert_contains(infer_fail(k3, 4, (int64_t[]){-1, 3, -1, 5}, NULL),
                  "Input's C, H and W must be known and at most 1073741824 (only the batch may be -1), got [-1, 3, "
                  "-1, 5]");
  const char *one[] = {"num_filters", "i: 2", "kernel_size", "ints: [3]", NULL};
  assert_contains(infer_fail(one, 4, (int64_t[]){2, 3, 5, 5}, NULL),
                  "attribute \"kernel_size\" must have 2 values (height, width), got [3]");
  const char *s3[] = {"num_filters", "i: 2", "kernel_size", "ints: [3, 3]", "strides", "ints: [1, 1, 1]", NULL};
  assert_contains(infer_fail(s3, 4, (int64_t[]){2, 3, 5, 5}, NULL),
                  "attribute \"strides\" must have 2 values (height, width), got [1, 1, 1]");
  /* a declared filter of the wrong shape */
  pd_tensor *f = ot_shaped(PD_F32, 4, (int64_t[]){2, 3, 5, 5});
  assert_contains(infer_fail(k3, 4, (int64_t[]){2, 3, 5, 5}, f),
                  "has shape [2, 3, 5, 5], but the op needs [2, 3, 3, 3]");
  ot_free(f);

  /* the attribute checks of the registry */
  pd_tensor *x = ot_rand(PD_F32, 4, (int64_t[]){1, 1, 4, 4}, 1, -1, 1, 0), *y = ot_out();
  const char *k0[] = {"num_filters", "i: 2", "kernel_size", "ints: [0, 3]", NULL};
  assert_string_equal(ot_run_fail("conv2d", k0, (pd_tensor *[]){x, NULL, NULL}, NULL, (pd_tensor *[]){y}, NULL),
                      "attribute \"kernel_size\": every element must be > 0, got [0, 3]");
  const char *pneg[] = {"num_filters", "i: 2", "kernel_size", "ints: [1, 3]", "paddings", "ints: [0, -1]", NULL};
  assert_string_equal(ot_run_fail("conv2d", pneg, (pd_tensor *[]){x, NULL, NULL}, NULL, (pd_tensor *[]){y}, NULL),
                      "attribute \"paddings\": every element must be >= 0, got [0, -1]");
  const char *nf[] = {"kernel_size", "ints: [1, 3]", NULL};
  assert_string_equal(ot_run_fail("conv2d", nf, (pd_tensor *[]){x, NULL, NULL}, NULL, (pd_tensor *[]){y}, NULL),
                      "attribute \"num_filters\" is required");
  ot_free(x), ot_free(y);
  pd_tensor *xi = ot_rand(PD_I32, 4, (int64_t[]){1, 1, 4, 4}, 1, -1, 1, 0);
  y = ot_out();
  assert_contains(ot_run_fail("conv2d", k3, (pd_tensor *[]){xi, NULL, NULL}, NULL, (pd_tensor *[]){y}, NULL),
                  "Input must be float32 or float64, got int32");
  ot_free(xi), ot_free(y);
}

/* flops: 2 N M (C/G) kh kw Ho Wo for the product, N M Ho Wo for the bias;
 * the grad op counts only the gradients it is asked for. */
static double op_flops(const char *type, const char *const *attrs, pd_tensor *const *ins, pd_tensor *const *outs) {
  pd_opcall call;
  pd_error err = {0};
  assert_int_equal(pd_opcall_init(&call, type, attrs, ins, NULL, outs, NULL, &err), PD_OK);
  pd_ctx c = {.op = &call.op, .vars = call.vars, .err = &err};
  double v = call.def->flops(&c);
  pd_opcall_free(&call);
  return v;
}

static void test_flops(void **state) {
  (void)state;
  pd_tensor *x = ot_shaped(PD_F32, 4, (int64_t[]){64, 32, 14, 14});
  pd_tensor *f = ot_shaped(PD_F32, 4, (int64_t[]){64, 16, 5, 5}), *b = ot_shaped(PD_F32, 1, (int64_t[]){64});
  pd_tensor *y = ot_shaped(PD_F32, 4, (int64_t[]){64, 64, 14, 14}), *dy = y;
  pd_tensor *dx = ot_out(), *df = ot_out(), *db = ot_out();
  const char *attrs[] = {"num_filters", "i: 64", "kernel_size", "ints: [5, 5]", "paddings", "ints: [2, 2]",
                         "groups",      "i: 2",  NULL};
  double prod = 2.0 * 64 * 64 * 16 * 25 * 196, bias = 64.0 * 64 * 196;
  assert_true(op_flops("conv2d", attrs, (pd_tensor *[]){x, f, b}, (pd_tensor *[]){y}) == prod + bias);
  assert_true(op_flops("conv2d", attrs, (pd_tensor *[]){x, f, NULL}, (pd_tensor *[]){y}) == prod);
  assert_true(op_flops("conv2d_grad", attrs, (pd_tensor *[]){x, f, b, y, dy}, (pd_tensor *[]){dx, df, db}) ==
              2 * prod + bias);
  assert_true(op_flops("conv2d_grad", attrs, (pd_tensor *[]){x, f, b, y, dy}, (pd_tensor *[]){NULL, df, db}) ==
              prod + bias);
  assert_true(op_flops("conv2d_grad", attrs, (pd_tensor *[]){x, f, NULL, y, dy}, (pd_tensor *[]){dx, NULL, NULL}) ==
              prod);
  ot_free(x), ot_free(f), ot_free(b), ot_free(y), ot_free(dx), ot_free(df), ot_free(db);
}

/* The same op run twice on different batch sizes (a short last batch)
 * reuses its scratch and still matches the reference. */
static void test_batch_change(void **state) {
  (void)state;
  check_forward(PD_F32, (cfg){5, 2, 15, 15, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, true});
  check_forward(PD_F32, (cfg){2, 2, 15, 15, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, true});
}

static void gradcheck(cfg q, const bool *which) {
  pd_tensor *x = ot_rand(PD_F64, 4, (int64_t[]){q.n, q.c, q.h, q.w}, 21, -1, 1, 0);
  pd_tensor *f = ot_rand(PD_F64, 4, (int64_t[]){q.m, q.c / q.groups, q.kh, q.kw}, 22, -1, 1, 0);
  pd_tensor *b = q.bias ? ot_rand(PD_F64, 1, (int64_t[]){q.m}, 23, -1, 1, 0) : NULL;
  attr_buf ab;
  bool all[3] = {true, true, q.bias};
  ot_gradcheck_ex("conv2d", conv_attrs(&q, &ab), (pd_tensor *[]){x, f, b}, 3, 1, which ? which : all, NULL, 1e-6);
  ot_free(x), ot_free(f), ot_free(b);
}

static void test_gradients(void **state) {
  (void)state;
  /* {n, c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw, groups, bias} */
  gradcheck((cfg){2, 4, 6, 5, 4, 3, 3, 2, 1, 1, 1, 1, 1, 2, true}, NULL);   /* strides, padding, groups */
  gradcheck((cfg){1, 2, 7, 6, 3, 3, 2, 1, 2, 2, 1, 2, 3, 1, true}, NULL);   /* dilation, one image */
  gradcheck((cfg){3, 3, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3, false}, NULL);  /* depthwise */
  gradcheck((cfg){2, 4, 3, 5, 6, 1, 1, 1, 1, 0, 0, 1, 1, 2, true}, NULL);   /* 1x1, groups */
  gradcheck((cfg){2, 2, 4, 5, 2, 4, 5, 1, 1, 1, 0, 1, 1, 1, true}, NULL);   /* kernel = input */
  gradcheck((cfg){3, 1, 15, 15, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, true}, NULL); /* chunks of 2 + 1 images */
  gradcheck((cfg){2, 1, 16, 16, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, true}, NULL); /* scratch rows padded apart */
  /* each gradient alone */
  const cfg q = {2, 2, 5, 6, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, true};
  gradcheck(q, (bool[]){true, false, false});
  gradcheck(q, (bool[]){false, true, false});
  gradcheck(q, (bool[]){false, false, true});
}

/* The grad op overwrites its outputs: run twice into the same tensors (whose
 * storage keeps the first run's values), it gives the same gradients. */
static void test_grad_overwrites(void **state) {
  (void)state;
  const cfg q = {3, 2, 15, 15, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, true};
  pd_tensor *x = ot_rand(PD_F32, 4, (int64_t[]){q.n, q.c, q.h, q.w}, 1, -1, 1, 0);
  pd_tensor *f = ot_rand(PD_F32, 4, (int64_t[]){q.m, q.c, q.kh, q.kw}, 2, -1, 1, 0);
  pd_tensor *b = ot_rand(PD_F32, 1, (int64_t[]){q.m}, 3, -1, 1, 0);
  pd_tensor *y = ot_out();
  attr_buf ab;
  const char *const *attrs = conv_attrs(&q, &ab);
  ot_run("conv2d", attrs, (pd_tensor *[]){x, f, b}, NULL, (pd_tensor *[]){y}, NULL);
  pd_tensor *dy = ot_rand(PD_F32, 4, y->dims, 4, -1, 1, 0);
  pd_tensor *d[3] = {ot_out(), ot_out(), ot_out()};
  double *first[3];
  for (int run = 0; run < 2; run++) {
    ot_run("conv2d_grad", attrs, (pd_tensor *[]){x, f, b, y, dy}, NULL, d, NULL);
    for (int k = 0; k < 3; k++) {
      int64_t n = pd_tensor_numel(d[k]);
      if (run == 0) {
        first[k] = malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < n; i++) first[k][i] = pd_tensor_get(d[k], i);
      } else {
        ot_assert_close(d[k], first[k], n, 0);
        free(first[k]);
      }
    }
  }
  ot_free(x), ot_free(f), ot_free(b), ot_free(y), ot_free(dy);
  for (int k = 0; k < 3; k++) ot_free(d[k]);
}

/* With two threads the batch is split between them (each part with its own
 * scratch, dFilter and dBias summed in part order): the same outputs and
 * gradients as one thread, to rounding, on shapes large enough to split
 * (each at least 2^20 multiply-adds; odd batches, so the parts differ in
 * size; padding, stride, groups). */
static void check_parallel(pd_dtype dt, cfg q) {
  pd_tensor *x = ot_rand(dt, 4, (int64_t[]){q.n, q.c, q.h, q.w}, 5, -1, 1, 0);
  pd_tensor *f = ot_rand(dt, 4, (int64_t[]){q.m, q.c / q.groups, q.kh, q.kw}, 6, -1, 1, 0);
  pd_tensor *b = ot_rand(dt, 1, (int64_t[]){q.m}, 7, -1, 1, 0);
  attr_buf ab;
  const char *const *attrs = conv_attrs(&q, &ab);
  pd_tensor *out[2][4], *dy = NULL;
  for (int run = 0; run < 2; run++) {
    pd_set_threads(run + 1);
    for (int k = 0; k < 4; k++) out[run][k] = ot_out();
    ot_run("conv2d", attrs, (pd_tensor *[]){x, f, b}, NULL, (pd_tensor *[]){out[run][0]}, NULL);
    if (!dy) dy = ot_rand(dt, 4, out[run][0]->dims, 8, -1, 1, 0);
    ot_run("conv2d_grad", attrs, (pd_tensor *[]){x, f, b, out[run][0], dy}, NULL, &out[run][1], NULL);
  }
  pd_set_threads(0);
  /* to rounding of the largest value: a dFilter entry sums thousands of
   * products (5 images x 784 positions) whose total may cancel to near 0,
   * so its rounding scales with the terms, not with the entry */
  double tol = dt == PD_F32 ? 1e-5 : 1e-12;
  for (int k = 0; k < 4; k++) {
    int64_t n = pd_tensor_numel(out[0][k]);
    assert_int_equal(n, pd_tensor_numel(out[1][k]));
    double big = 0;
    for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(pd_tensor_get(out[0][k], i)));
    for (int64_t i = 0; i < n; i++) {
      double a = pd_tensor_get(out[0][k], i), c = pd_tensor_get(out[1][k], i);
      if (!(fabs(a - c) <= tol * (big + 1)))
        fail_msg("conv2d %s output %d [%lld]: 1 thread %.17g, 2 threads %.17g", pd_dtype_name(dt), k, (long long)i, a,
                 c);
    }
  }
  for (int run = 0; run < 2; run++)
    for (int k = 0; k < 4; k++) ot_free(out[run][k]);
  ot_free(x), ot_free(f), ot_free(b), ot_free(dy);
}

static void test_parallel(void **state) {
  (void)state;
  /* {n, c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw, groups, bias} */
  const cfg cases[] = {
      {5, 1, 28, 28, 16, 5, 5, 1, 1, 2, 2, 1, 1, 1, true},  /* Fashion-MNIST's first layer, 3 + 2 images */
      {3, 8, 14, 14, 16, 5, 5, 1, 1, 2, 2, 1, 1, 1, true},  /* its second, narrower */
      {5, 8, 33, 31, 16, 3, 3, 2, 1, 1, 0, 1, 2, 2, true},  /* stride, dilation, groups */
      {5, 64, 16, 16, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1, true}, /* 1x1: no column matrix */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    check_parallel(PD_F32, cases[i]);
    check_parallel(PD_F64, cases[i]);
  }
}

/* The float32 gradients (their own column copies on AVX-512, lib/base/util.h's
 * pd_cpu_avx512f) against the float64 ones from the same values: output
 * rows of 15, 11 and 28 floats, chunks of several images, padding. */
static pd_tensor *as_f64(const pd_tensor *t) {
  pd_tensor *d = ot_tensor(PD_F64, t->ndim, t->dims);
  for (int64_t i = 0; i < pd_tensor_numel(t); i++) pd_tensor_set(d, i, pd_tensor_get(t, i));
  return d;
}

static void check_float_grads(cfg q) {
  pd_tensor *in32[5], *in64[5], *d32[3], *d64[3];
  in32[0] = ot_rand(PD_F32, 4, (int64_t[]){q.n, q.c, q.h, q.w}, 31, -1, 1, 0);
  in32[1] = ot_rand(PD_F32, 4, (int64_t[]){q.m, q.c / q.groups, q.kh, q.kw}, 32, -1, 1, 0);
  in32[2] = q.bias ? ot_rand(PD_F32, 1, (int64_t[]){q.m}, 33, -1, 1, 0) : NULL;
  attr_buf ab;
  const char *const *attrs = conv_attrs(&q, &ab);
  in32[3] = ot_out();
  ot_run("conv2d", attrs, in32, NULL, &in32[3], NULL);
  in32[4] = ot_rand(PD_F32, 4, in32[3]->dims, 34, -1, 1, 0);
  for (int k = 0; k < 5; k++) in64[k] = in32[k] ? as_f64(in32[k]) : NULL;
  for (int k = 0; k < 3; k++) d32[k] = k < 2 || q.bias ? ot_out() : NULL, d64[k] = k < 2 || q.bias ? ot_out() : NULL;
  ot_run("conv2d_grad", attrs, in32, NULL, d32, NULL);
  ot_run("conv2d_grad", attrs, in64, NULL, d64, NULL);
  for (int k = 0; k < 3; k++) {
    if (!d32[k]) continue;
    int64_t n = pd_tensor_numel(d64[k]);
    double big = 0;
    for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(pd_tensor_get(d64[k], i)));
    for (int64_t i = 0; i < n; i++)
      if (!(fabs(pd_tensor_get(d32[k], i) - pd_tensor_get(d64[k], i)) <= 1e-5 * (1 + big)))
        fail_msg("conv2d_grad float32 output %d [%lld]: %.9g, float64 %.9g", k, (long long)i, pd_tensor_get(d32[k], i),
                 pd_tensor_get(d64[k], i));
  }
  for (int k = 0; k < 5; k++) ot_free(in32[k]), ot_free(in64[k]);
  for (int k = 0; k < 3; k++) ot_free(d32[k]), ot_free(d64[k]);
}

static void test_float_grads(void **state) {
  (void)state;
  check_float_grads((cfg){3, 2, 15, 15, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, true});  /* rows of 15, chunks of 2 + 1 */
  check_float_grads((cfg){7, 3, 13, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, false}); /* rows of 11 */
  check_float_grads((cfg){3, 1, 28, 28, 4, 5, 5, 1, 1, 2, 2, 1, 1, 1, true});  /* rows of 28 */
  check_float_grads((cfg){2, 4, 9, 9, 4, 3, 3, 1, 1, 0, 0, 1, 1, 2, true});    /* rows of 7, groups, no padding */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),     cmocka_unit_test(test_defaults),        cmocka_unit_test(test_infer_shapes),
      cmocka_unit_test(test_errors),      cmocka_unit_test(test_flops),           cmocka_unit_test(test_batch_change),
      cmocka_unit_test(test_gradients),   cmocka_unit_test(test_grad_overwrites), cmocka_unit_test(test_parallel),
      cmocka_unit_test(test_float_grads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
