/* test_op_conv_winograd.c — conv2d through Winograd minimal filtering
 * (--conv-algo winograd2 / winograd4, ops/conv_winograd.c): F(2x2, 3x3),
 * F(4x4, 3x3), F(2x2, 5x5) and F(4x4, 5x5)
 *   1. the error of the output and of the three gradients against the
 *      direct float64 sums, on data of realistic scale (activations in
 *      [0, 1), Xavier-scaled filters, 64 channels), as a fraction of the
 *      largest reference value, within the bound stated per tile size
 *      (docs/training.md, "3x3 convolutions");
 *   2. the same results as im2col on many shapes: odd sizes, sizes that are
 *      not a multiple of the tile, padding 0, 1, 2 and 3, one image,
 *      1 and 37 channels, 1x1 and 2x2 outputs, one and two threads, 3x3
 *      and 5x5 kernels;
 *   3. float64 gradients against finite differences through each form;
 *   4. the auto choice, and a forced form refused (naming the reason) by a
 *      layer it cannot compute. */
#include "optest.h"
#include "cpu/convalgo.h"
#include "cpu/parallel.h"

typedef struct shape {
  int64_t n, c, h, w, m, p, k; /* k: kernel size (3 or 5) */
} shape;

static const char *const *attrs_for(const shape *s, int64_t k, char (*buf)[48], const char **l) {
  snprintf(buf[0], 48, "i: %lld", (long long)s->m);
  snprintf(buf[1], 48, "ints: [%lld, %lld]", (long long)k, (long long)k);
  snprintf(buf[2], 48, "ints: [%lld, %lld]", (long long)s->p, (long long)s->p);
  const char *a[] = {"num_filters", buf[0], "kernel_size", buf[1], "paddings", buf[2], NULL};
  memcpy(l, a, sizeof a);
  return l;
}

/* y, dx, dw, db of a k x k convolution, float64 and direct */
static void reference(const shape *s, const pd_tensor *x, const pd_tensor *w, const pd_tensor *b, const pd_tensor *dy,
                      double *y, double *dx, double *dw, double *db) {
  const int64_t K = s->k, ho = s->h + 2 * s->p - K + 1, wo = s->w + 2 * s->p - K + 1, C = s->c, M = s->m;
  memset(dx, 0, sizeof(double) * (size_t)(s->n * C * s->h * s->w));
  memset(dw, 0, sizeof(double) * (size_t)(M * C * K * K));
  for (int64_t m = 0; m < M; m++) db[m] = 0;
  for (int64_t n = 0; n < s->n; n++)
    for (int64_t m = 0; m < M; m++)
      for (int64_t oh = 0; oh < ho; oh++)
        for (int64_t ow = 0; ow < wo; ow++) {
          const int64_t o = ((n * M + m) * ho + oh) * wo + ow;
          double acc = pd_tensor_get(b, m), g = pd_tensor_get(dy, o);
          db[m] += g;
          for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < K; i++)
              for (int64_t j = 0; j < K; j++) {
                const int64_t ih = oh - s->p + i, iw = ow - s->p + j;
                if (ih < 0 || ih >= s->h || iw < 0 || iw >= s->w) continue;
                const int64_t xi = ((n * C + c) * s->h + ih) * s->w + iw, wi = ((m * C + c) * K + i) * K + j;
                acc += pd_tensor_get(w, wi) * pd_tensor_get(x, xi);
                dx[xi] += g * pd_tensor_get(w, wi);
                dw[wi] += g * pd_tensor_get(x, xi);
              }
          y[o] = acc;
        }
}

/* max |t - ref| / max |ref| */
static double norm_err(const pd_tensor *t, const double *ref) {
  double e = 0, big = 0;
  for (int64_t i = 0; i < pd_tensor_numel(t); i++) {
    e = fmax(e, fabs(pd_tensor_get(t, i) - ref[i]));
    big = fmax(big, fabs(ref[i]));
  }
  return e / (big + 1e-300);
}

/* Runs forward and backward under `algo`; out[0..3] = y, dx, dw, db. */
static void run_algo(pd_conv_algo algo, const shape *s, pd_tensor *const *in, const pd_tensor *dy, pd_tensor **out) {
  char buf[3][48];
  const char *l[8];
  const char *const *attrs = attrs_for(s, s->k, buf, l);
  pd_conv_algo_set(algo);
  out[0] = ot_out();
  ot_run("conv2d", attrs, in, NULL, &out[0], NULL);
  for (int k = 1; k < 4; k++) out[k] = ot_out();
  ot_run("conv2d_grad", attrs, (pd_tensor *[]){in[0], in[1], in[2], out[0], (pd_tensor *)dy}, NULL, &out[1], NULL);
  pd_conv_algo_set(PD_CONV_AUTO);
}

/* The bounds per form and type: the measured worst over the seeds below
 * (float32: im2col about 1.1e-6 for the output, F(2x2, 3x3) 4e-7, F(4x4,
 * 3x3) 4.3e-6 (4.9e-6 for dInput), F(2x2, 5x5) 1.8e-6 (3.5e-6), F(4x4, 5x5)
 * 3.6e-6 (3.9e-6) against im2col's 3e-7 on the 5x5 layer; float64:
 * every form below 1e-14), with a margin of 4x or more. The 3x3
 * layer is 64 -> 64 channels at 28x28 (padding 1), the 5x5 one fashion_cnn's
 * second, 32 -> 64 at 14x14 (padding 2). */
typedef struct bound {
  pd_conv_algo algo;
  pd_dtype dt;
  int k;
  double max;
} bound;
static const bound bounds[] = {
    {PD_CONV_IM2COL, PD_F32, 3, 5e-6},      {PD_CONV_WINOGRAD2, PD_F32, 3, 2e-6},  {PD_CONV_WINOGRAD4, PD_F32, 3, 2e-5},
    {PD_CONV_WINOGRAD2, PD_F64, 3, 5e-14},  {PD_CONV_WINOGRAD4, PD_F64, 3, 5e-14}, {PD_CONV_IM2COL, PD_F32, 5, 5e-6},
    {PD_CONV_WINOGRAD2, PD_F32, 5, 1.5e-5}, {PD_CONV_WINOGRAD2, PD_F64, 5, 5e-14}, {PD_CONV_WINOGRAD4, PD_F32, 5, 2e-5},
    {PD_CONV_WINOGRAD4, PD_F64, 5, 5e-14},
};

static void test_bounds(void **state) {
  (void)state;
  const int nb = (int)(sizeof bounds / sizeof bounds[0]);
  double worst[16][4] = {{0}};
  for (int k = 3; k <= 5; k += 2)
    for (uint64_t seed = 1; seed <= 2; seed++)
      for (int dti = 0; dti < 2; dti++) {
        const shape s = k == 3 ? (shape){2, 64, 28, 28, 64, 1, 3} : (shape){2, 32, 14, 14, 64, 2, 5};
        const int64_t kk = s.k * s.k;
        const pd_dtype dt = dti ? PD_F64 : PD_F32;
        pd_tensor *x = ot_rand(dt, 4, (int64_t[]){s.n, s.c, s.h, s.w}, seed, 0, 1, 0);
        const double lim = sqrt(6.0 / ((double)kk * (double)(s.c + s.m)));
        pd_tensor *w = ot_rand(dt, 4, (int64_t[]){s.m, s.c, s.k, s.k}, seed + 10, -lim, lim, 0);
        pd_tensor *b = ot_rand(dt, 1, (int64_t[]){s.m}, seed + 20, -0.1, 0.1, 0);
        pd_tensor *dy = ot_rand(dt, 4, (int64_t[]){s.n, s.m, s.h, s.w}, seed + 30, -1e-3, 1e-3, 0);
        const int64_t nx = s.n * s.c * s.h * s.w, ny = s.n * s.m * s.h * s.w;
        double *ref = malloc(sizeof(double) * (size_t)(ny + nx + s.m * s.c * kk + s.m));
        double *rx = ref + ny, *rw = rx + nx, *rb = rw + s.m * s.c * kk;
        reference(&s, x, w, b, dy, ref, rx, rw, rb);
        const double *refs[4] = {ref, rx, rw, rb};
        for (int i = 0; i < nb; i++) {
          if (bounds[i].dt != dt || bounds[i].k != k) continue;
          pd_tensor *out[4];
          run_algo(bounds[i].algo, &s, (pd_tensor *[]){x, w, b}, dy, out);
          for (int k = 0; k < 4; k++) worst[i][k] = fmax(worst[i][k], norm_err(out[k], refs[k]));
          for (int k = 0; k < 4; k++) ot_free(out[k]);
        }
        free(ref);
        ot_free(x), ot_free(w), ot_free(b), ot_free(dy);
      }
  for (int i = 0; i < nb; i++) {
    print_message("conv2d %dx%d %s %s: max error / max |reference|: y %.2e, dx %.2e, dw %.2e, db %.2e (bound %.0e)\n",
                  bounds[i].k, bounds[i].k, pd_conv_algo_name(bounds[i].algo), pd_dtype_name(bounds[i].dt), worst[i][0],
                  worst[i][1], worst[i][2], worst[i][3], bounds[i].max);
    for (int k = 0; k < 4; k++)
      if (!(worst[i][k] <= bounds[i].max))
        fail_msg("%dx%d %s %s output %d: error %.3g above the bound %.3g", bounds[i].k, bounds[i].k,
                 pd_conv_algo_name(bounds[i].algo), pd_dtype_name(bounds[i].dt), k, worst[i][k], bounds[i].max);
  }
}

/* {n, c, h, w, m, padding, kernel} */
static const shape shapes[] = {
    {1, 1, 3, 3, 1, 0, 3},     {1, 1, 5, 7, 2, 1, 3},     {2, 3, 7, 9, 4, 0, 3},     {3, 37, 9, 11, 5, 1, 3},
    {2, 5, 6, 6, 37, 2, 3},    {1, 37, 13, 10, 37, 1, 3}, {3, 4, 4, 4, 3, 0, 3},     {2, 2, 11, 13, 3, 3, 3},
    {5, 16, 14, 14, 32, 1, 3}, {2, 8, 28, 28, 8, 2, 3},   {1, 3, 17, 5, 6, 1, 3},    {4, 6, 3, 8, 2, 1, 3},
    {1, 1, 5, 5, 1, 0, 5},     {2, 3, 7, 9, 4, 2, 5},     {1, 37, 13, 10, 37, 1, 5}, {3, 4, 6, 6, 3, 0, 5},
    {5, 16, 14, 14, 32, 2, 5}, {2, 2, 11, 13, 3, 4, 5},   {1, 3, 17, 5, 6, 3, 5},    {4, 6, 5, 8, 2, 1, 5},
};

static void check_same(pd_conv_algo algo, pd_dtype dt, const shape *s, int threads) {
  pd_tensor *x = ot_rand(dt, 4, (int64_t[]){s->n, s->c, s->h, s->w}, 41, -1, 1, 0);
  pd_tensor *w = ot_rand(dt, 4, (int64_t[]){s->m, s->c, s->k, s->k}, 42, -1, 1, 0);
  pd_tensor *b = ot_rand(dt, 1, (int64_t[]){s->m}, 43, -1, 1, 0);
  pd_tensor *dy = ot_rand(dt, 4, (int64_t[]){s->n, s->m, s->h + 2 * s->p - s->k + 1, s->w + 2 * s->p - s->k + 1}, 44,
                          -1, 1, 0),
            *a[4], *o[4];
  pd_set_threads(threads);
  run_algo(PD_CONV_IM2COL, s, (pd_tensor *[]){x, w, b}, dy, a);
  run_algo(algo, s, (pd_tensor *[]){x, w, b}, dy, o);
  pd_set_threads(0);
  /* relative to the largest result: with few outputs of sums that cancel (a 1x1 output of 25 products in
   * [-1, 1]: 0.25), F(4x4)'s 8x8 tiles are off by 2.6e-5 of it; a wrong coefficient is off by O(1) */
  const double tol = dt == PD_F64 ? 1e-12 : algo == PD_CONV_WINOGRAD4 ? 1e-4 : 2e-5;
  for (int k = 0; k < 4; k++) {
    assert_true(pd_dims_equal(a[k]->ndim, a[k]->dims, o[k]->ndim, o[k]->dims));
    double big = 0;
    for (int64_t i = 0; i < pd_tensor_numel(a[k]); i++) big = fmax(big, fabs(pd_tensor_get(a[k], i)));
    for (int64_t i = 0; i < pd_tensor_numel(a[k]); i++) {
      const double u = pd_tensor_get(a[k], i), v = pd_tensor_get(o[k], i);
      if (!(fabs(u - v) <= tol * big))
        fail_msg("%s %s [%lld %lld %lld %lld %lld pad %lld kernel %lld] output %d [%lld]: im2col %.12g, winograd %.12g",
                 pd_conv_algo_name(algo), pd_dtype_name(dt), (long long)s->n, (long long)s->c, (long long)s->h,
                 (long long)s->w, (long long)s->m, (long long)s->p, (long long)s->k, k, (long long)i, u, v);
    }
  }
  for (int k = 0; k < 4; k++) ot_free(a[k]), ot_free(o[k]);
  ot_free(x), ot_free(w), ot_free(b), ot_free(dy);
}

static void test_same_as_im2col(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int threads = 1; threads <= 2; threads++) {
      check_same(PD_CONV_WINOGRAD2, PD_F32, &shapes[i], threads);
      check_same(PD_CONV_WINOGRAD2, PD_F64, &shapes[i], threads);
      check_same(PD_CONV_WINOGRAD4, PD_F32, &shapes[i], threads);
      check_same(PD_CONV_WINOGRAD4, PD_F64, &shapes[i], threads);
    }
}

static void gradcheck(pd_conv_algo algo, shape s) {
  pd_tensor *x = ot_rand(PD_F64, 4, (int64_t[]){s.n, s.c, s.h, s.w}, 51, -1, 1, 0);
  pd_tensor *w = ot_rand(PD_F64, 4, (int64_t[]){s.m, s.c, s.k, s.k}, 52, -1, 1, 0);
  pd_tensor *b = ot_rand(PD_F64, 1, (int64_t[]){s.m}, 53, -1, 1, 0);
  char buf[3][48];
  const char *l[8];
  pd_conv_algo_set(algo);
  ot_gradcheck_ex("conv2d", attrs_for(&s, s.k, buf, l), (pd_tensor *[]){x, w, b}, 3, 1, (bool[]){true, true, true},
                  NULL, 1e-6);
  pd_conv_algo_set(PD_CONV_AUTO);
  ot_free(x), ot_free(w), ot_free(b);
}

static void test_gradients(void **state) {
  (void)state;
  const shape s[] = {{2, 3, 6, 7, 2, 1, 3},
                     {1, 2, 9, 5, 3, 0, 3},
                     {2, 2, 5, 5, 2, 2, 3},
                     {2, 2, 6, 7, 2, 2, 5},
                     {1, 3, 7, 5, 2, 0, 5}};
  for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
    gradcheck(PD_CONV_WINOGRAD2, s[i]);
    gradcheck(PD_CONV_WINOGRAD4, s[i]);
  }
}

/* A forced Winograd form on a layer it cannot compute fails at shape
 * inference, saying why; auto accepts the layer. */
static void test_refused(void **state) {
  (void)state;
  pd_tensor *x = ot_shaped(PD_F32, 4, (int64_t[]){2, 3, 12, 12});
  const char *a7[] = {"num_filters", "i: 4", "kernel_size", "ints: [7, 7]", NULL};
  const char *as2[] = {"num_filters", "i: 4", "kernel_size", "ints: [3, 3]", "strides", "ints: [2, 2]", NULL};
  const char *a5d2[] = {"num_filters", "i: 4", "kernel_size", "ints: [5, 5]", "dilations", "ints: [2, 1]", NULL};
  const struct {
    const char *const *attrs;
    int k;
    pd_conv_algo algo;
    const char *says;
  } bad[] = {
      {as2, 3, PD_CONV_WINOGRAD4, "--conv-algo winograd4 needs a 3x3 or 5x5 kernel with stride 1"},
      {a7, 7, PD_CONV_WINOGRAD4, "--conv-algo winograd4 needs a 3x3 or 5x5 kernel with stride 1"},
      {as2, 3, PD_CONV_WINOGRAD2, "--conv-algo winograd2 needs a 3x3 or 5x5 kernel with stride 1"},
      {a7, 7, PD_CONV_WINOGRAD2, "--conv-algo winograd2 needs a 3x3 or 5x5 kernel with stride 1"},
      {a5d2, 5, PD_CONV_WINOGRAD2, "dilations [2, 1]"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    pd_tensor *y = ot_out(), *f = ot_shaped(PD_F32, 4, (int64_t[]){4, 3, bad[k].k, bad[k].k});
    const char *msg;
    pd_conv_algo_set(bad[k].algo);
    pd_status st = ot_infer("conv2d", bad[k].attrs, (pd_tensor *[]){x, f, NULL}, NULL, (pd_tensor *[]){y}, NULL, &msg);
    pd_conv_algo_set(PD_CONV_AUTO);
    assert_int_equal(st, PD_ERR_INPUT);
    if (!strstr(msg, bad[k].says)) fail_msg("message: %s", msg);
    assert_int_equal(
        ot_infer("conv2d", bad[k].attrs, (pd_tensor *[]){x, f, NULL}, NULL, (pd_tensor *[]){y}, NULL, NULL), PD_OK);
    ot_free(y), ot_free(f);
  }
  ot_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bounds),
      cmocka_unit_test(test_same_as_im2col),
      cmocka_unit_test(test_gradients),
      cmocka_unit_test(test_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
