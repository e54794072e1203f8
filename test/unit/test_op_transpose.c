/* test_op_transpose.c — transpose: Out.dims[i] = X.dims[perm[i]] and
 * Out[j] = X[k] where Out's multi-index at dim i is X's at dim perm[i]; an
 * empty perm reverses the dims. Checked against a loop over multi-indices
 * for every permutation of rank 3, rank 4, int64 and uint8; errors; the
 * gradient (the inverse permutation) by finite differences. */
#include "optest.h"

static void check(pd_dtype dt, int nd, const int64_t *dims, const int *perm) {
  pd_tensor *x = ot_rand(dt, nd, dims, 3, -100, 100, 0), *out = ot_out();
  char p[64] = "ints: [";
  for (int i = 0; perm && i < nd; i++) snprintf(p + strlen(p), sizeof p - strlen(p), "%s%d", i ? ", " : "", perm[i]);
  strcat(p, "]");
  const char *attrs[] = {"perm", p, NULL};
  ot_run("transpose", attrs, &x, NULL, &out, NULL);
  int pm[PD_MAX_DIMS];
  for (int i = 0; i < nd; i++) pm[i] = perm ? perm[i] : nd - 1 - i;
  for (int i = 0; i < nd; i++) assert_int_equal(out->dims[i], dims[pm[i]]);
  int64_t n = pd_tensor_numel(x), idx[PD_MAX_DIMS];
  double *ref = malloc(sizeof(double) * (size_t)(n + 1));
  for (int64_t j = 0; j < n; j++) {
    int64_t r = j, k = 0;
    for (int d = nd - 1; d >= 0; d--) idx[d] = r % out->dims[d], r /= out->dims[d];
    int64_t xi[PD_MAX_DIMS];
    for (int d = 0; d < nd; d++) xi[pm[d]] = idx[d];
    for (int d = 0; d < nd; d++) k = k * dims[d] + xi[d];
    ref[j] = pd_tensor_get(x, k);
  }
  ot_assert_close(out, ref, n, 0);
  free(ref);
  ot_free(x), ot_free(out);
}

static void test_permutations(void **state) {
  (void)state;
  const int p3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int i = 0; i < 6; i++) {
    check(PD_F32, 3, (int64_t[]){2, 3, 4}, p3[i]);
    check(PD_F64, 3, (int64_t[]){2, 3, 4}, p3[i]);
  }
  check(PD_F32, 4, (int64_t[]){2, 3, 4, 5}, (int[]){0, 2, 3, 1}); /* NCHW -> NHWC */
  check(PD_I64, 2, (int64_t[]){3, 5}, (int[]){1, 0});
  check(PD_U8, 3, (int64_t[]){2, 1, 3}, NULL); /* empty perm: reversed */
  check(PD_F32, 3, (int64_t[]){2, 3, 4}, NULL);
  check(PD_F32, 1, (int64_t[]){7}, (int[]){0});
}

static void test_errors(void **state) {
  (void)state;
  const char *msg;
  pd_tensor *x = ot_shaped(PD_F32, 3, (int64_t[]){-1, 3, 4}), *out = ot_out();
  assert_int_equal(ot_infer("transpose", (const char *[]){"perm", "ints: [0, 2, 1]", NULL}, &x, NULL, &out, NULL, NULL),
                   PD_OK);
  ot_assert_dims(out, -1, 4, 3);
  assert_int_equal(ot_infer("transpose", (const char *[]){"perm", "ints: [0, 1]", NULL}, &x, NULL, &out, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "perm [0, 1] has 2 entries but X of shape [-1, 3, 4] has 3 dims"));
  assert_int_equal(ot_infer("transpose", (const char *[]){"perm", "ints: [0, 1, 1]", NULL}, &x, NULL, &out, NULL, &msg),
                   PD_ERR_INPUT);
  assert_non_null(strstr(msg, "perm [0, 1, 1] is not a permutation of 0 .. 2"));
  ot_free(x), ot_free(out);
}

static void test_gradients(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F64, 3, (int64_t[]){2, 3, 4}, 5, -1, 1, 0);
  ot_gradcheck("transpose", (const char *[]){"perm", "ints: [1, 2, 0]", NULL}, &x, 1, 1);
  ot_gradcheck("transpose", NULL, &x, 1, 1);
  ot_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_permutations),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
