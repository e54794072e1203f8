/* test_gpu_fault.c — the GPU's fault record as the op's failure
 * (gpu/fault.h), built on the host: a bad label reported through the
 * record gives the CPU kernel's message, status and batch row, for
 * cross_entropy (forward and backward), accuracy and
 * softmax_with_cross_entropy ([N, C], and [batch, time, C] where the
 * message names the position); an embedding id, a sequence length, no
 * valid step to average, and a bad row list of a row-sparse update give
 * their CPU kernels' messages too, and so does a bad length for the fused
 * recurrent ops, and a slice's window that leaves its dim; no device
 * needed. */
#include "gpu/fault.h"
#include "optest.h"

/* The CPU run of op `type` over ins fails; the record {label, row} on the
 * same op must fail it alike (code: a label's unless f gives one). */
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

static void test_embedding(void **state) {
  (void)state;
  pd_tensor *w = ot_rand(PD_F32, 2, (int64_t[]){5, 2}, 5, -1, 1, 0), *out = ot_out();
  /* ids [2, 3]: flat position 4 is row 1, position 1 */
  pd_tensor *ids = labels(2, (int64_t[]){2, 3}, (int64_t[]){0, 4, 1, 2, 7, -1});
  same_failure("embedding", NULL, (pd_tensor *[]){ids, w}, (pd_tensor *[]){out}, 0,
               (pd_gpu_fault){.code = PD_GPU_FAULT_ID, .label = 7, .row = 4, .limit = 5, .per_row = 3});
  ot_free(ids), ot_free(out);
  ids = labels(1, (int64_t[]){3}, (int64_t[]){1, -3, 0}), out = ot_out();
  same_failure("embedding", NULL, (pd_tensor *[]){ids, w}, (pd_tensor *[]){out}, 0,
               (pd_gpu_fault){.code = PD_GPU_FAULT_ID, .label = -3, .row = 1, .limit = 5, .per_row = 1});
  ot_free(w), ot_free(ids), ot_free(out);
}

static void test_sequence_lengths(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 3, (int64_t[]){3, 4, 2}, 6, -1, 1, 0), *out = ot_out();
  pd_tensor *len = labels(1, (int64_t[]){3}, (int64_t[]){2, 5, 0});
  same_failure("sequence_pool", NULL, (pd_tensor *[]){x, len}, (pd_tensor *[]){out}, 1,
               (pd_gpu_fault){.code = PD_GPU_FAULT_LENGTH, .label = 5, .row = 1, .limit = 4, .per_row = 1});
  same_failure("sequence_last", NULL, (pd_tensor *[]){x, len}, (pd_tensor *[]){out}, 1,
               (pd_gpu_fault){.code = PD_GPU_FAULT_LENGTH, .label = 5, .row = 1, .limit = 4, .per_row = 1});
  PD_DATA(len, int64_t)[1] = 3; /* now the 0, which sequence_mask and sequence_mean allow */
  same_failure("sequence_pool", NULL, (pd_tensor *[]){x, len}, (pd_tensor *[]){out}, 1,
               (pd_gpu_fault){.code = PD_GPU_FAULT_LENGTH, .label = 0, .row = 2, .limit = 4, .per_row = 1});
  PD_DATA(len, int64_t)[0] = -1;
  same_failure("sequence_mask", NULL, (pd_tensor *[]){len, x}, (pd_tensor *[]){out}, 0,
               (pd_gpu_fault){.code = PD_GPU_FAULT_LENGTH, .label = -1, .row = 0, .limit = 4, .per_row = 0});
  for (int r = 0; r < 3; r++) PD_DATA(len, int64_t)[r] = 0;
  same_failure("sequence_mean", NULL, (pd_tensor *[]){x, len}, (pd_tensor *[]){out}, 1,
               (pd_gpu_fault){.code = PD_GPU_FAULT_NO_STEP});
  ot_free(x), ot_free(len), ot_free(out);
}

static void test_rows(void **state) {
  (void)state;
  pd_tensor *p = ot_rand(PD_F32, 2, (int64_t[]){4, 2}, 7, -1, 1, 0),
            *g = ot_rand(PD_F32, 2, (int64_t[]){3, 2}, 8, -1, 1, 0);
  pd_tensor *lr = ot_rand(PD_F32, 1, (int64_t[]){1}, 9, 0.1, 0.2, 0), *out = ot_out();
  pd_tensor *rows = labels(1, (int64_t[]){3}, (int64_t[]){1, 0, -1}); /* not ascending at entry 1 */
  same_failure("sgd", NULL, (pd_tensor *[]){p, g, lr, rows}, (pd_tensor *[]){out}, 3,
               (pd_gpu_fault){.code = PD_GPU_FAULT_ROWS, .label = 0, .row = 1, .limit = 4});
  ot_free(p), ot_free(g), ot_free(lr), ot_free(rows), ot_free(out);
}

/* slice: the first entry of Starts whose window leaves its dim (entry 1:
 * a window of 3 from 4 along dim 2, of 5) */
static void test_slice_window(void **state) {
  (void)state;
  pd_tensor *x = ot_rand(PD_F32, 3, (int64_t[]){3, 4, 5}, 10, -1, 1, 0), *out = ot_out();
  pd_tensor *st = labels(1, (int64_t[]){2}, (int64_t[]){1, 4});
  const char *attrs[] = {"axes", "ints: [1, 2]", "sizes", "ints: [2, 3]", NULL};
  same_failure("slice", attrs, (pd_tensor *[]){x, st}, (pd_tensor *[]){out}, 1,
               (pd_gpu_fault){.code = PD_GPU_FAULT_WINDOW, .label = 4, .row = 1, .limit = 5, .per_row = 3, .value = 2});
  ot_free(x), ot_free(st), ot_free(out);
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
               (pd_gpu_fault){.code = PD_GPU_FAULT_LENGTH, .label = 5, .row = 1, .limit = 4, .per_row = 1});
  ot_free(x), ot_free(w), ot_free(r), ot_free(l), ot_free(y), ot_free(res);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cross_entropy),
      cmocka_unit_test(test_accuracy),
      cmocka_unit_test(test_softmax_with_cross_entropy),
      cmocka_unit_test(test_embedding),
      cmocka_unit_test(test_sequence_lengths),
      cmocka_unit_test(test_rows),
      cmocka_unit_test(test_rnn_lengths),
      cmocka_unit_test(test_slice_window),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
