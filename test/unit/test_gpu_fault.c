/* test_gpu_fault.c — the GPU's fault record as the op's failure
 * (gpu/fault.h), built on the host: a bad label reported through the
 * record gives the CPU kernel's message, status and batch row, for
 * cross_entropy (forward and backward), accuracy and
 * softmax_with_cross_entropy ([N, C], and [batch, time, C] where the
 * message names the position), and a bad sequence length for the fused
 * recurrent ops; no device needed. */
#include "gpu/fault.h"
#include "optest.h"

/* The CPU run of op `type` over ins fails; the record {label, row} on the
 * same op must fail it alike. */
static void same_failure(const char *type, const char *const *attrs, pd_tensor *const *ins, pd_tensor *const *outs,
                         int slot, pd_gpu_fault f) {
  pd_opcall call;
  pd_error cpu = {0}, gpu = {0};
  pd_exec exec = {.training = true, .seed = 1, .threads = 1};
  assert_int_equal(pd_opcall_init(&call, type, attrs, ins, NULL, outs, NULL, &cpu), PD_OK);
  pd_status cst = pd_opcall_run(&call, &exec, &cpu);
  assert_int_not_equal(cst, PD_OK);
  f.raised = 1, f.code = f.code ? f.code : PD_GPU_FAULT_LABEL, f.slot = slot,
  f.op = (unsigned long long)(uintptr_t)&call.op;
  pd_ctx c = {.op = &call.op, .vars = call.vars, .exec = &exec, .err = &gpu};
  pd_status gst = pd_gpu_fault_fail(&c, &f);
  assert_string_equal(gpu.msg, cpu.msg);
  assert_int_equal(gst, cst);
  assert_int_equal(gpu.status, cpu.status);
  assert_int_equal(gpu.row, cpu.row);
  pd_opcall_free(&call);
}

static pd_tensor *labels(int ndim, const int64_t *dims, const int64_t *v) {
  pd_tensor *l = ot_tensor(PD_I64, ndim, dims);
  for (int64_t i = 0; i < pd_tensor_numel(l); i++) PD_DATA(l, int64_t)[i] = v[i];
  return l;
}

static void test_cross_entropy(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){5, 4}, 1, 0.1, 1, 0), *y = ot_out();
  /* two bad labels: both kernels report the first row's */
  pd_tensor *l = labels(2, (int64_t[]){5, 1}, (int64_t[]){0, 3, 4, 1, -2});
  same_failure("cross_entropy", NULL, (pd_tensor *[]){x, l}, (pd_tensor *[]){y}, 1,
               (pd_gpu_fault){.label = 4, .row = 2, .limit = 4});
  PD_DATA(l, int64_t)[2] = 2; /* now the negative one */
  same_failure("cross_entropy", NULL, (pd_tensor *[]){x, l}, (pd_tensor *[]){y}, 1,
               (pd_gpu_fault){.label = -2, .row = 4, .limit = 4});
  ot_free(x), ot_free(l), ot_free(y);
}

static void test_accuracy(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 2, (int64_t[]){3, 10}, 2, 0, 1, 0);
  pd_tensor *l = labels(1, (int64_t[]){3}, (int64_t[]){9, 10, 0});
  pd_tensor *a = ot_out(), *cr = ot_out(), *tt = ot_out();
  same_failure("accuracy", NULL, (pd_tensor *[]){x, l}, (pd_tensor *[]){a, cr, tt}, 1,
               (pd_gpu_fault){.label = 10, .row = 1, .limit = 10});
  ot_free(x), ot_free(l), ot_free(a), ot_free(cr), ot_free(tt);
}

static void test_softmax_with_cross_entropy(void **state) {
  (void)state;
  pd_tensor *z = ot_rand(PD_F32, 2, (int64_t[]){4, 3}, 3, -1, 1, 0), *s = ot_out(), *loss = ot_out();
  pd_tensor *l = labels(2, (int64_t[]){4, 1}, (int64_t[]){0, 1, 2, 3});
  same_failure("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z, l}, (pd_tensor *[]){s, loss}, 1,
               (pd_gpu_fault){.label = 3, .row = 3, .limit = 3});
  ot_free(z), ot_free(l), ot_free(s), ot_free(loss);
  /* [batch 2, time 3, C 4]: flat row 4 is batch row 1, position 1 */
  z = ot_rand(PD_F32, 3, (int64_t[]){2, 3, 4}, 4, -1, 1, 0), s = ot_out(), loss = ot_out();
  l = labels(2, (int64_t[]){2, 3}, (int64_t[]){0, 1, 2, 3, 7, -1});
  same_failure("softmax_with_cross_entropy", NULL, (pd_tensor *[]){z, l}, (pd_tensor *[]){s, loss}, 1,
               (pd_gpu_fault){.label = 7, .row = 4, .limit = 4, .per_row = 3});
  ot_free(z), ot_free(l), ot_free(s), ot_free(loss);
}

/* lstm (rnn_core.c's check, shared by gru and rnn): the first bad row's length */
static void test_rnn_lengths(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 3, (int64_t[]){3, 4, 2}, 5, 0, 1, 0);
  pd_tensor *w = ot_rand(PD_F32, 3, (int64_t[]){1, 8, 2}, 6, -1, 1, 0);
  pd_tensor *r = ot_rand(PD_F32, 3, (int64_t[]){1, 8, 2}, 7, -1, 1, 0);
  pd_tensor *l = labels(1, (int64_t[]){3}, (int64_t[]){4, 5, 0});
  pd_tensor *y = ot_out(), *res = ot_out();
  const char *attrs[] = {"hidden_size", "i: 2", NULL};
  same_failure("lstm", attrs, (pd_tensor *[]){x, w, r, NULL, l, NULL, NULL, NULL, NULL},
               (pd_tensor *[]){y, NULL, NULL, res}, 4,
               (pd_gpu_fault){.code = PD_GPU_FAULT_LENGTH, .label = 5, .row = 1, .limit = 4});
  ot_free(x), ot_free(w), ot_free(r), ot_free(l), ot_free(y), ot_free(res);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cross_entropy),
      cmocka_unit_test(test_accuracy),
      cmocka_unit_test(test_softmax_with_cross_entropy),
      cmocka_unit_test(test_rnn_lengths),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
