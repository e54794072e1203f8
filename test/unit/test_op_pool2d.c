/* test_op_pool2d.c — pool2d against a plain float64 loop. Output (oh, ow) of
 * each channel pools the window of input rows oh sh - ph + i (i < kh) and
 * columns ow sw - pw + j (j < kw):
 *   max: the largest in-bounds element (padding never wins);
 *   avg: the sum of the in-bounds elements divided by their count
 *        (exclusive) or by the number of window positions inside the padded
 *        input (not exclusive);
 * Ho = floor((H + 2 ph - kh) / sh) + 1, or with ceil_mode the ceiling, less
 * one if that last window would start past the input and its left padding;
 * global_pooling pools all of H x W. In float32 and float64; then the error
 * messages, the gradients against finite differences, and the tie rule of
 * max's gradient (the first maximum in row-major order takes it all). */
#include "optest.h"

#include <math.h>

typedef struct cfg {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw;
  bool avg, ceil, global, exclusive;
} cfg;

typedef struct attr_buf {
  char k[48], s[48], p[48];
  const char *list[15];
} attr_buf;

static const char *const *pool_attrs(const cfg *q, attr_buf *b) {
  snprintf(b->k, sizeof b->k, "ints: [%lld, %lld]", (long long)q->kh, (long long)q->kw);
  snprintf(b->s, sizeof b->s, "ints: [%lld, %lld]", (long long)q->sh, (long long)q->sw);
  snprintf(b->p, sizeof b->p, "ints: [%lld, %lld]", (long long)q->ph, (long long)q->pw);
  const char *l[] = {"pooling_type",
                     q->avg ? "s: \"avg\"" : "s: \"max\"",
                     "ceil_mode",
                     q->ceil ? "b: true" : "b: false",
                     "global_pooling",
                     q->global ? "b: true" : "b: false",
                     "exclusive",
                     q->exclusive ? "b: true" : "b: false",
                     "strides",
                     b->s,
                     "paddings",
                     b->p,
                     "ksize",
                     b->k, /* left out when 0 (global pooling needs none) */
                     NULL};
  memcpy(b->list, l, sizeof l);
  if (q->kh == 0) b->list[12] = NULL;
  return b->list;
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil) {
  int64_t o = (ceil ? (in + 2 * p - k + s - 1) / s : (in + 2 * p - k) / s) + 1;
  if (ceil && (o - 1) * s >= in + p) o--;
  return o;
}

static void pool_ref(cfg q, const pd_tensor *x, double *out, int64_t *ho_out, int64_t *wo_out) {
  if (q.global) q.kh = q.h, q.kw = q.w, q.sh = q.sw = 1, q.ph = q.pw = 0;
  int64_t ho = out_size(q.h, q.kh, q.sh, q.ph, q.ceil), wo = out_size(q.w, q.kw, q.sw, q.pw, q.ceil);
  *ho_out = ho, *wo_out = wo;
  for (int64_t pl = 0; pl < q.n * q.c; pl++)
    for (int64_t oh = 0; oh < ho; oh++)
      for (int64_t ow = 0; ow < wo; ow++) {
        double best = -INFINITY, sum = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t i = 0; i < q.kh; i++)
          for (int64_t j = 0; j < q.kw; j++) {
            int64_t ih = oh * q.sh - q.ph + i, iw = ow * q.sw - q.pw + j;
            if (ih < q.h + q.ph && iw < q.w + q.pw) padded++;
            if (ih < 0 || ih >= q.h || iw < 0 || iw >= q.w) continue;
            double v = pd_tensor_get(x, (pl * q.h + ih) * q.w + iw);
            inside++, sum += v;
            if (v > best) best = v;
          }
        out[(pl * ho + oh) * wo + ow] = !q.avg ? best : sum / (double)(q.exclusive ? inside : padded);
      }
}

static void check_forward(pd_dtype dt, cfg q) {
  pd_tensor *x = ot_rand(dt, 4, (int64_t[]){q.n, q.c, q.h, q.w}, 7, -1, 1, 0), *y = ot_out();
  attr_buf ab;
  ot_run("pool2d", pool_attrs(&q, &ab), (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  int64_t ho, wo;
  double *ref = malloc(sizeof(double) * (size_t)(q.n * q.c * (q.h + 4) * (q.w + 4)));
  pool_ref(q, x, ref, &ho, &wo);
  ot_assert_dims(y, q.n, q.c, ho, wo);
  assert_int_equal(y->dtype, dt);
  /* inputs lie in [-1, 1): errors relative to max(|ref|, 1) */
  double err = ot_max_err(y, ref, q.n * q.c * ho * wo, 1.0), tol = dt == PD_F32 ? 1e-6 : 1e-14;
  if (!(err <= tol)) fail_msg("pool2d %s: max error %g > %g", pd_dtype_name(dt), err, tol);
  free(ref);
  ot_free(x), ot_free(y);
}

/* {n, c, h, w, kh, kw, sh, sw, ph, pw, avg, ceil, global, exclusive} */
static const cfg forward_cases[] = {
    {3, 2, 8, 6, 2, 2, 2, 2, 0, 0, false, false, false, true}, /* 2x2 stride 2 */
    {1, 3, 7, 9, 2, 2, 2, 2, 0, 0, false, false, false, true}, /* odd size: last row/column dropped */
    {1, 3, 7, 9, 2, 2, 2, 2, 0, 0, false, true, false, true},  /* ceil_mode keeps them */
    {3, 2, 7, 9, 3, 3, 2, 2, 1, 1, false, false, false, true}, /* padding */
    {3, 2, 9, 7, 3, 2, 1, 2, 1, 0, false, true, false, true},  /* uneven window, stride, padding */
    {1, 4, 5, 7, 5, 7, 1, 1, 0, 0, false, false, false, true}, /* window = input */
    {3, 2, 7, 5, 1, 1, 1, 1, 0, 0, false, false, false, true}, /* default-like 1x1 window */
    {3, 2, 2, 7, 3, 3, 3, 2, 0, 0, false, true, false, true},  /* ceil: a window taller than the input */
    {3, 2, 2, 7, 3, 3, 3, 2, 0, 0, true, true, false, false},  /* ... avg */
    {3, 5, 7, 9, 2, 2, 3, 3, 1, 1, false, false, true, true},  /* global: ksize, strides, paddings ignored */
    {3, 2, 8, 6, 2, 2, 2, 2, 0, 0, true, false, false, true},  /* avg 2x2 */
    {3, 2, 7, 9, 3, 3, 2, 2, 1, 1, true, false, false, true},  /* avg, padding, exclusive */
    {3, 2, 7, 9, 3, 3, 2, 2, 1, 1, true, false, false, false}, /* avg, padding counted */
    {1, 3, 8, 9, 3, 3, 2, 2, 0, 0, true, true, false, true},   /* avg, ceil: last window hangs over */
    {1, 3, 8, 9, 3, 3, 2, 2, 1, 1, true, true, false, false},  /* avg, ceil, padding counted, overhang not */
    {1, 3, 5, 8, 2, 2, 3, 3, 1, 1, false, true, false, true},  /* ceil: a window in the padding is dropped */
    {1, 3, 5, 8, 2, 2, 3, 3, 1, 1, true, true, false, false},  /* ... for avg too */
    {3, 5, 7, 9, 0, 0, 1, 1, 0, 0, true, false, true, true},   /* avg global, no ksize */
};

static void test_forward(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof forward_cases / sizeof forward_cases[0]; i++) {
    check_forward(PD_F32, forward_cases[i]);
    check_forward(PD_F64, forward_cases[i]);
  }
}

/* The shape rules on their own, at load (batch -1). */
static void test_infer_shapes(void **state) {
  (void)state;
  struct {
    const char *k, *s, *p, *ceil;
    int64_t ho, wo;
  } cases[] = {
      {"ints: [2, 2]", "ints: [2, 2]", "ints: [0, 0]", "b: false", 3, 4},
      {"ints: [2, 2]", "ints: [2, 2]", "ints: [0, 0]", "b: true", 4, 5},
      {"ints: [3, 3]", "ints: [1, 1]", "ints: [1, 1]", "b: false", 7, 9},
      {"ints: [3, 3]", "ints: [3, 3]", "ints: [1, 1]", "b: true", 3, 4},
      /* ceil(7 / 3) + 1 = 4 rows, but the 4th window would start at 3 * 3 - 1 = 8 > 7: dropped */
      {"ints: [2, 2]", "ints: [3, 3]", "ints: [1, 1]", "b: true", 3, 4},
      {"ints: [2, 3]", "ints: [1, 1]", "ints: [0, 0]", "b: false", 6, 7},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pd_tensor *x = ot_shaped(PD_F32, 4, (int64_t[]){-1, 4, 7, 9}), *y = ot_out();
    const char *attrs[] = {"ksize",    cases[i].k,  "strides",     cases[i].s, "paddings",
                           cases[i].p, "ceil_mode", cases[i].ceil, NULL};
    assert_int_equal(ot_infer("pool2d", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL, NULL), PD_OK);
    ot_assert_dims(y, -1, 4, cases[i].ho, cases[i].wo);
    ot_free(x), ot_free(y);
  }
  /* defaults: max, stride 1, no padding */
  pd_tensor *x = ot_shaped(PD_F64, 4, (int64_t[]){-1, 4, 7, 9}), *y = ot_out();
  const char *k2[] = {"ksize", "ints: [2, 2]", NULL};
  assert_int_equal(ot_infer("pool2d", k2, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL, NULL), PD_OK);
  ot_assert_dims(y, -1, 4, 6, 8);
  assert_int_equal(y->dtype, PD_F64);
  const char *global[] = {"global_pooling", "b: true", NULL};
  assert_int_equal(ot_infer("pool2d", global, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL, NULL), PD_OK);
  ot_assert_dims(y, -1, 4, 1, 1);
  ot_free(x), ot_free(y);
}

static const char *infer_fail(const char *const *attrs, int ndim, const int64_t *dims) {
  pd_tensor *x = ot_shaped(PD_F32, ndim, dims), *y = ot_out();
  const char *msg;
  assert_int_not_equal(ot_infer("pool2d", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL, &msg), PD_OK);
  ot_free(x), ot_free(y);
  return msg;
}

#define assert_contains(msg, want)                                                       \
  do {                                                                                   \
    if (!strstr((msg), (want))) fail_msg("message \"%s\"\nlacks \"%s\"", (msg), (want)); \
  } while (0)

static void test_errors(void **state) {
  (void)state;
  const char *k3[] = {"ksize", "ints: [3, 3]", NULL};
  assert_contains(infer_fail(k3, 4, (int64_t[]){2, 3, 2, 5}),
                  "pooling window 3x3 is larger than the padded input 2x5 (input 2x5, paddings [0, 0]); the output "
                  "would be empty");
  const char *k5p[] = {"ksize", "ints: [5, 5]", "paddings", "ints: [1, 1]", NULL};
  assert_contains(infer_fail(k5p, 4, (int64_t[]){2, 3, 2, 4}),
                  "pooling window 5x5 is larger than the padded input 4x6 (input 2x4, paddings [1, 1])");
  assert_contains(infer_fail(k3, 3, (int64_t[]){2, 5, 5}), "X must be 4-D [N, C, H, W], got shape [2, 5, 5]");
  assert_contains(infer_fail(k3, 4, (int64_t[]){-1, 3, -1, 5}),
                  "X's C, H and W must be known and at most 1073741824 (only the batch may be -1), got [-1, 3, -1, 5]");
  const char *none[] = {"pooling_type", "s: \"avg\"", NULL};
  assert_contains(infer_fail(none, 4, (int64_t[]){2, 3, 5, 5}),
                  "attribute \"ksize\" is required unless global_pooling is true");
  const char *one[] = {"ksize", "ints: [2]", NULL};
  assert_contains(infer_fail(one, 4, (int64_t[]){2, 3, 5, 5}),
                  "attribute \"ksize\" must have 2 values (height, width), got [2]");
  const char *pk[] = {"ksize", "ints: [2, 3]", "paddings", "ints: [1, 3]", NULL};
  assert_contains(infer_fail(pk, 4, (int64_t[]){2, 3, 5, 5}),
                  "paddings [1, 3] must be smaller than ksize [2, 3]: a window could lie entirely in the padding");

  pd_tensor *x = ot_rand(PD_F32, 4, (int64_t[]){1, 1, 4, 4}, 1, -1, 1, 0), *y = ot_out();
  const char *bad_type[] = {"pooling_type", "s: \"mean\"", "ksize", "ints: [2, 2]", NULL};
  assert_string_equal(
      ot_run_fail("pool2d", bad_type, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL),
      "attribute \"pooling_type\" must be one of \"max\", \"avg\", got \"mean\" (did you mean \"max\"?)");
  const char *s0[] = {"ksize", "ints: [2, 2]", "strides", "ints: [0, 1]", NULL};
  assert_string_equal(ot_run_fail("pool2d", s0, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL),
                      "attribute \"strides\": every element must be > 0, got [0, 1]");
  ot_free(x), ot_free(y);
}

/* Padding never wins a max: an all-negative image padded by 1 pools to its
 * own values, not to 0. */
static void test_padding_never_wins(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 4, (int64_t[]){1, 1, 3, 3}, 3, -2, -1, 0), *y = ot_out();
  const char *attrs[] = {"ksize", "ints: [2, 2]", "strides", "ints: [2, 2]", "paddings", "ints: [1, 1]", NULL};
  ot_run("pool2d", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  ot_assert_dims(y, 1, 1, 2, 2);
  /* windows: {x0}, {x1, x2}, {x3, x6}, {x4, x5, x7, x8} */
  double g[9];
  for (int i = 0; i < 9; i++) g[i] = pd_tensor_get(x, i);
  double ref[4] = {g[0], fmax(g[1], g[2]), fmax(g[3], g[6]), fmax(fmax(g[4], g[5]), fmax(g[7], g[8]))};
  ot_assert_close(y, ref, 4, 0);
  ot_free(x), ot_free(y);
}

/* Values spaced 0.01 apart in a random order: no two elements of a window
 * are within 1e-3, so finite differences never cross a tie. */
static pd_tensor *distinct(int64_t n, int64_t c, int64_t h, int64_t w, uint64_t seed) {
  pd_tensor *x = ot_tensor(PD_F64, 4, (int64_t[]){n, c, h, w});
  int64_t total = n * c * h * w;
  int64_t *perm = malloc(sizeof(int64_t) * (size_t)total);
  for (int64_t i = 0; i < total; i++) perm[i] = i;
  uint64_t s = seed;
  for (int64_t i = total - 1; i > 0; i--) {
    int64_t j = (int64_t)(pd_rng_next(&s) % (uint64_t)(i + 1)), t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  for (int64_t i = 0; i < total; i++) pd_tensor_set(x, i, 0.01 * (double)(perm[i] - total / 2));
  free(perm);
  return x;
}

static void gradcheck(cfg q) {
  pd_tensor *x =
      q.avg ? ot_rand(PD_F64, 4, (int64_t[]){q.n, q.c, q.h, q.w}, 9, -1, 1, 0) : distinct(q.n, q.c, q.h, q.w, 9);
  attr_buf ab;
  ot_gradcheck("pool2d", pool_attrs(&q, &ab), (pd_tensor *[]){x}, 1, 1);
  ot_free(x);
}

static void test_gradients(void **state) {
  (void)state;
  /* {n, c, h, w, kh, kw, sh, sw, ph, pw, avg, ceil, global, exclusive} */
  for (int avg = 0; avg < 2; avg++) {
    gradcheck((cfg){2, 2, 6, 5, 2, 2, 2, 2, 0, 0, avg, false, false, true});
    gradcheck((cfg){2, 2, 7, 6, 3, 3, 2, 2, 1, 1, avg, false, false, true}); /* padding */
    gradcheck((cfg){1, 3, 7, 5, 3, 2, 1, 2, 1, 1, avg, false, false, true}); /* overlapping windows */
    gradcheck((cfg){1, 2, 8, 9, 3, 3, 2, 2, 1, 0, avg, true, false, true});  /* ceil */
    gradcheck((cfg){2, 2, 5, 7, 0, 0, 1, 1, 0, 0, avg, false, true, true});  /* global */
  }
  gradcheck((cfg){2, 2, 7, 6, 3, 3, 2, 2, 1, 1, true, false, false, false}); /* avg counting the padding */
  gradcheck((cfg){1, 2, 8, 9, 3, 3, 2, 2, 1, 1, true, true, false, false});  /* ... with ceil's overhang */
}

/* Ties: finite differences are undefined there, so the rule is checked
 * directly. Every window of a constant image is a tie; each output's
 * gradient goes to its window's first element in row-major order. */
static void test_max_tie_rule(void **state) {
  (void)state;
  pd_tensor *x = ot_tensor(PD_F64, 4, (int64_t[]){1, 1, 4, 5});
  for (int i = 0; i < 20; i++) pd_tensor_set(x, i, 0.5);
  /* a second tie inside one window, not at its start: row 2, cols 3 and 4 */
  pd_tensor_set(x, 2 * 5 + 3, 2.0), pd_tensor_set(x, 2 * 5 + 4, 2.0);
  const char *attrs[] = {"ksize", "ints: [2, 2]", "strides", "ints: [2, 2]", "paddings", "ints: [0, 1]", NULL};
  pd_tensor *y = ot_out();
  ot_run("pool2d", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  ot_assert_dims(y, 1, 1, 2, 3);
  /* windows (rows, cols): (0-1, -1..0) (0-1, 1-2) (0-1, 3-4) (2-3, -1..0) (2-3, 1-2) (2-3, 3-4) */
  pd_tensor *dy = ot_tensor(PD_F64, 4, (int64_t[]){1, 1, 2, 3}), *dx = ot_out();
  for (int i = 0; i < 6; i++) pd_tensor_set(dy, i, 1 + i);
  ot_run("pool2d_grad", attrs, (pd_tensor *[]){x, y, dy}, NULL, (pd_tensor *[]){dx}, NULL);
  double want[20] = {0};
  want[0 * 5 + 0] = 1; /* (0, 0): padding column skipped, first in-bounds element */
  want[0 * 5 + 1] = 2; /* (0, 1) */
  want[0 * 5 + 3] = 3; /* (0, 3) */
  want[2 * 5 + 0] = 4; /* (2, 0) */
  want[2 * 5 + 1] = 5; /* (2, 1) */
  want[2 * 5 + 3] = 6; /* (2, 3): the 2.0 tie, first of the two */
  ot_assert_close(dx, want, 20, 0);
  ot_free(x), ot_free(y), ot_free(dy), ot_free(dx);
}

/* The same rule on the path of its own that 2x2 windows at stride 2 take:
 * ties between every pair of positions of a window. */
static void tie_rule_2x2(pd_dtype dt) {
  static const double img[4][6] = {
      {0.5, 0.5, 0.1, 0.7, 0.1, 0.2}, /* windows: all equal | 1 = 2 | 2 = 3 */
      {0.5, 0.5, 0.7, 0.2, 0.9, 0.9},
      {0.1, 0.9, 0.3, 0.1, 0.6, 0.1}, /* 1 = 3 | 3 alone | 0 = 2 = 3 */
      {0.3, 0.9, 0.2, 0.8, 0.6, 0.6},
  };
  pd_tensor *x = ot_tensor(dt, 4, (int64_t[]){1, 1, 4, 6});
  for (int i = 0; i < 24; i++) pd_tensor_set(x, i, img[i / 6][i % 6]);
  const char *attrs[] = {"ksize", "ints: [2, 2]", "strides", "ints: [2, 2]", NULL};
  pd_tensor *y = ot_out(), *dx = ot_out(), *dy = ot_tensor(dt, 4, (int64_t[]){1, 1, 2, 3});
  ot_run("pool2d", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  double want_y[6] = {0.5, 0.7, 0.9, 0.9, 0.8, 0.6};
  ot_assert_close(y, want_y, 6, dt == PD_F32 ? 1e-7 : 0); /* 0.7 etc. rounded to float */
  for (int i = 0; i < 6; i++) pd_tensor_set(dy, i, 1 + i);
  ot_run("pool2d_grad", attrs, (pd_tensor *[]){x, y, dy}, NULL, (pd_tensor *[]){dx}, NULL);
  double want[24] = {0};
  want[0 * 6 + 0] = 1; /* window 0: its first element */
  want[0 * 6 + 3] = 2; /* window 1: (0, 3) before (1, 2) */
  want[1 * 6 + 4] = 3; /* window 2: (1, 4) before (1, 5) */
  want[2 * 6 + 1] = 4; /* window 3: (2, 1) before (3, 1) */
  want[3 * 6 + 3] = 5; /* window 4: the one maximum */
  want[2 * 6 + 4] = 6; /* window 5: (2, 4) before (3, 4) and (3, 5) */
  ot_assert_close(dx, want, 24, 0);
  ot_free(x), ot_free(y), ot_free(dy), ot_free(dx);
}
static void test_max_tie_rule_2x2(void **state) {
  (void)state;
  tie_rule_2x2(PD_F64);
  tie_rule_2x2(PD_F32); /* float's AVX2 path (8 windows a vector; these 3 a row are its tail) */
}

/* Float's AVX2 2x2 path on rows of several vectors and a tail (37 columns:
 * 18 windows, the last column in none), values on four levels so that
 * every kind of tie occurs, +0 against -0 among them (the order of the
 * operands of each max decides which sign survives): Out and dX bit for bit
 * what the plain loops give in double (max and routing are exact). */
static void test_max2x2_float_path(void **state) {
  (void)state;
  const int64_t dims[4] = {2, 3, 7, 37}, n = 2 * 3 * 7 * 37;
  pd_tensor *x[2] = {ot_tensor(PD_F32, 4, dims), ot_tensor(PD_F64, 4, dims)};
  for (int64_t i = 0; i < n; i++) {
    static const double level[4] = {-0.5, 0.0, -0.0, 0.5}; /* few levels: ties everywhere, +0 against -0 too */
    double v = level[((uint64_t)i * 2654435761u >> 11) % 4];
    pd_tensor_set(x[0], i, v), pd_tensor_set(x[1], i, v);
  }
  const char *attrs[] = {"ksize", "ints: [2, 2]", "strides", "ints: [2, 2]", NULL};
  pd_tensor *y[2], *dx[2], *dy[2];
  for (int d = 0; d < 2; d++) {
    y[d] = ot_out(), dx[d] = ot_out();
    ot_run("pool2d", attrs, (pd_tensor *[]){x[d]}, NULL, (pd_tensor *[]){y[d]}, NULL);
    ot_assert_dims(y[d], 2, 3, 3, 18);
    dy[d] = ot_tensor(d ? PD_F64 : PD_F32, 4, y[d]->dims);
    for (int64_t i = 0; i < 2 * 3 * 3 * 18; i++) pd_tensor_set(dy[d], i, 1 + (double)i);
    ot_run("pool2d_grad", attrs, (pd_tensor *[]){x[d], y[d], dy[d]}, NULL, (pd_tensor *[]){dx[d]}, NULL);
  }
  for (int64_t i = 0; i < 2 * 3 * 3 * 18; i++) {
    double a = pd_tensor_get(y[0], i), b = pd_tensor_get(y[1], i);
    if (a != b || signbit(a) != signbit(b)) fail_msg("Out[%lld]: float %g, double %g", (long long)i, a, b);
  }
  for (int64_t i = 0; i < n; i++)
    if (pd_tensor_get(dx[0], i) != pd_tensor_get(dx[1], i))
      fail_msg("dX[%lld]: float %g, double %g", (long long)i, pd_tensor_get(dx[0], i), pd_tensor_get(dx[1], i));
  for (int d = 0; d < 2; d++) ot_free(x[d]), ot_free(y[d]), ot_free(dy[d]), ot_free(dx[d]);
}

/* The grad op overwrites dX: run twice into the same tensor, same result. */
static void test_grad_overwrites(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 4, (int64_t[]){2, 2, 6, 6}, 5, -1, 1, 0), *y = ot_out(), *dx = ot_out();
  const char *attrs[] = {"ksize", "ints: [3, 3]", "strides", "ints: [2, 2]", "pooling_type", "s: \"avg\"", NULL};
  ot_run("pool2d", attrs, (pd_tensor *[]){x}, NULL, (pd_tensor *[]){y}, NULL);
  pd_tensor *dy = ot_rand(PD_F32, 4, y->dims, 6, -1, 1, 0);
  ot_run("pool2d_grad", attrs, (pd_tensor *[]){x, y, dy}, NULL, (pd_tensor *[]){dx}, NULL);
  double first[72];
  for (int i = 0; i < 72; i++) first[i] = pd_tensor_get(dx, i);
  ot_run("pool2d_grad", attrs, (pd_tensor *[]){x, y, dy}, NULL, (pd_tensor *[]){dx}, NULL);
  ot_assert_close(dx, first, 72, 0);
  ot_free(x), ot_free(y), ot_free(dy), ot_free(dx);
  /* max 2x2 on an odd size (its own path, zeroing dX row pairs as it goes):
   * over a dX full of junk, the same result, and the row and the column no
   * window covers hold 0 */
  pd_tensor *x2 = ot_rand(PD_F32, 4, (int64_t[]){2, 2, 7, 9}, 7, -1, 1, 0), *y2 = ot_out(), *dx2 = ot_out();
  const char *max2[] = {"ksize", "ints: [2, 2]", "strides", "ints: [2, 2]", NULL};
  ot_run("pool2d", max2, (pd_tensor *[]){x2}, NULL, (pd_tensor *[]){y2}, NULL);
  pd_tensor *dy2 = ot_rand(PD_F32, 4, y2->dims, 8, -1, 1, 0);
  ot_run("pool2d_grad", max2, (pd_tensor *[]){x2, y2, dy2}, NULL, (pd_tensor *[]){dx2}, NULL);
  double first2[252];
  for (int i = 0; i < 252; i++) {
    first2[i] = pd_tensor_get(dx2, i);
    if (i % 63 >= 54 || i % 9 == 8) assert_true(first2[i] == 0); /* row 6, column 8 of each plane */
    pd_tensor_set(dx2, i, 5.0);
  }
  ot_run("pool2d_grad", max2, (pd_tensor *[]){x2, y2, dy2}, NULL, (pd_tensor *[]){dx2}, NULL);
  ot_assert_close(dx2, first2, 252, 0);
  ot_free(x2), ot_free(y2), ot_free(dy2), ot_free(dx2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),          cmocka_unit_test(test_infer_shapes),
      cmocka_unit_test(test_errors),           cmocka_unit_test(test_padding_never_wins),
      cmocka_unit_test(test_gradients),        cmocka_unit_test(test_max_tie_rule),
      cmocka_unit_test(test_max_tie_rule_2x2), cmocka_unit_test(test_max2x2_float_path),
      cmocka_unit_test(test_grad_overwrites),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
