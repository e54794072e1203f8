/* test_gpu_runtime.c — the parts of the GPU runtime that need no GPU:
 * --device values, the no-GPU (or no-CUDA) error of pd_gpu_open, and, in a
 * CUDA build, the cuBLAS trampolines: before cuBLAS is loaded a call returns
 * CUBLAS_STATUS_NOT_INITIALIZED, after pd_gpu_load_cublas it reaches the
 * real library (which answers its version without a GPU). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "gpu/gpurt.h"
#ifdef PD_WITH_CUDA
#include "gpu/gpu.h"
#endif

static void test_place_parse(void **state) {
  (void)state;
  pd_place p;
  assert_true(pd_place_parse("cpu", &p));
  assert_int_equal(p.kind, PD_CPU);
  assert_true(pd_place_parse("gpu", &p));
  assert_int_equal(p.kind, PD_GPU);
  assert_int_equal(p.device, 0);
  assert_true(pd_place_parse("gpu:3", &p));
  assert_int_equal(p.kind, PD_GPU);
  assert_int_equal(p.device, 3);
  const char *bad[] = {"", "GPU", "gpu:", "gpu:-1", "gpu:1x", "gpu:99999", "gpu0", "cuda", "cpu:0", "tpu"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_false(pd_place_parse(bad[i], &p));
}

static bool have_gpu(void) {
#ifdef PD_WITH_CUDA
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
#else
  return false;
#endif
}

/* Without a GPU: the "no GPU here" error (exit 2), the only one the GPU tests
 * skip on. With one: a device number past the last is the same kind of
 * error, so this case runs (and never skips) on a GPU machine too. */
static void test_open_without_gpu(void **state) {
  (void)state;
  pd_error err = {0};
  pd_gpu_opts o = {.device = 0};
  if (have_gpu()) {
    o.device = pd_gpu_count();
    assert_int_equal(pd_gpu_open(&o, &err), PD_ERR_INPUT);
    assert_false(pd_gpu_is_open());
    assert_non_null(strstr(err.msg, " only "));
    return;
  }
  if (getenv("PADDLE_RUN_GPU_REQUIRED") && strcmp(getenv("PADDLE_RUN_GPU_REQUIRED"), "1") == 0)
    fail_msg("PADDLE_RUN_GPU_REQUIRED=1 and there is no GPU");
  assert_int_equal(pd_gpu_open(&o, &err), PD_ERR_INPUT); /* a broken driver is PD_ERR_RUNTIME, and fails here */
  assert_false(pd_gpu_is_open());
  assert_non_null(strstr(err.msg, "--device gpu:0: "));
  if (pd_gpu_built())
    assert_non_null(strstr(err.msg, "no CUDA device found"));
  else
    assert_non_null(strstr(err.msg, "built without CUDA"));
  pd_gpu_mem m = pd_gpu_mem_stats();
  assert_int_equal(m.in_use, 0);
}

static void test_cublas_trampolines(void **state) {
  (void)state;
#ifdef PD_WITH_CUDA
  int major = -1;
  if (!pd_gpu_is_open()) /* not loaded yet in this process: the stub answers */
    assert_int_equal(cublasGetProperty(MAJOR_VERSION, &major), CUBLAS_STATUS_NOT_INITIALIZED);
  pd_error err = {0};
  assert_int_equal(pd_gpu_load_cublas("test", &err), PD_OK);
  assert_int_equal(cublasGetProperty(MAJOR_VERSION, &major), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(major, CUBLAS_VER_MAJOR);
  assert_string_equal(cublasGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  assert_int_equal(pd_gpu_load_cublas("test", &err), PD_OK); /* once is enough */
#else
  pd_error err = {0};
  assert_int_equal(pd_gpu_load_cublas("test", &err), PD_ERR_INPUT);
  skip();
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_place_parse),
      cmocka_unit_test(test_open_without_gpu),
      cmocka_unit_test(test_cublas_trampolines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
