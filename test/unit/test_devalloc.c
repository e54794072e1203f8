/* test_devalloc.c — the GPU caching allocator's bookkeeping over a fake
 * device (malloc with a byte budget): size classes waste at most a quarter,
 * a freed block is reused for the next request of its class without calling
 * the device, a steady loop of the same requests calls the device only in
 * its first round, in-use and peak bytes are exact, out of memory first
 * gives the cached blocks back and tries again, and any other failure of
 * the device (a kernel fault) is reported as a fault at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>

#include "gpu/devalloc.h"

typedef struct fake_dev {
  size_t budget, used;
  int allocs, frees, calls;
  bool faulted; /* every allocation fails as a sticky kernel fault would */
} fake_dev;

/* Each block records its size in front of the pointer handed out. */
static void *fake_alloc(void *ctx, size_t bytes, bool *fault) {
  fake_dev *d = ctx;
  d->calls++;
  *fault = d->faulted;
  if (d->faulted || d->used + bytes > d->budget) return NULL;
  size_t *p = malloc(sizeof(size_t) + bytes);
  if (!p) return NULL;
  *p = bytes;
  d->used += bytes;
  d->allocs++;
  return p + 1;
}

static void fake_free(void *ctx, void *q) {
  fake_dev *d = ctx;
  size_t *p = (size_t *)q - 1;
  d->used -= *p;
  d->frees++;
  free(p);
}

static pd_devalloc make(fake_dev *d) {
  pd_devalloc a;
  pd_devalloc_init(&a, (pd_devalloc_backend){fake_alloc, fake_free, d});
  return a;
}

static void test_class_sizes(void **state) {
  (void)state;
  assert_int_equal(pd_devalloc_class_size(0), 256);
  assert_int_equal(pd_devalloc_class_size(1), 256);
  assert_int_equal(pd_devalloc_class_size(256), 256);
  assert_int_equal(pd_devalloc_class_size(257), 320);
  assert_int_equal(pd_devalloc_class_size(512), 512);
  assert_int_equal(pd_devalloc_class_size(513), 640);
  assert_int_equal(pd_devalloc_class_size(1000), 1024);
  assert_int_equal(pd_devalloc_class_size(1025), 1280);
  for (size_t b = 1; b < (1u << 22); b = b * 3 + 7) {
    size_t s = pd_devalloc_class_size(b);
    assert_true(s >= b);
    assert_true(s <= 256 || (double)s <= (double)b * 1.25 + 1);
  }
  assert_int_equal(pd_devalloc_class_size(SIZE_MAX), SIZE_MAX);
}

static void test_reuse_without_device_calls(void **state) {
  (void)state;
  fake_dev d = {.budget = 1 << 24};
  pd_devalloc a = make(&d);
  size_t sizes[] = {784 * 64 * 4, 256 * 4, 64 * 10 * 4, 4, 784 * 256 * 4};
  void *p[5];
  size_t cap[5];
  for (int round = 0; round < 10; round++) {
    for (int i = 0; i < 5; i++) {
      p[i] = pd_devalloc_get(&a, sizes[i], &cap[i]);
      assert_non_null(p[i]);
      assert_true(cap[i] >= sizes[i]);
    }
    size_t in_use = 0;
    for (int i = 0; i < 5; i++) in_use += cap[i];
    assert_int_equal(a.in_use, in_use);
    assert_int_equal(a.peak, in_use);
    for (int i = 0; i < 5; i++) pd_devalloc_put(&a, p[i], cap[i]);
    assert_int_equal(a.in_use, 0);
    assert_int_equal(a.cached, in_use);
  }
  assert_int_equal(d.allocs, 5); /* only the first round reached the device */
  assert_int_equal(d.frees, 0);
  assert_int_equal(a.backend_allocs, 5);
  pd_devalloc_destroy(&a);
  assert_int_equal(d.frees, 5);
  assert_int_equal(d.used, 0);
}

static void test_same_class_shares_blocks(void **state) {
  (void)state;
  fake_dev d = {.budget = 1 << 20};
  pd_devalloc a = make(&d);
  size_t c1, c2;
  void *p = pd_devalloc_get(&a, 1000, &c1);
  pd_devalloc_put(&a, p, c1);
  void *q = pd_devalloc_get(&a, 900, &c2); /* same class (1024): the same block */
  assert_ptr_equal(p, q);
  assert_int_equal(c1, c2);
  assert_int_equal(d.allocs, 1);
  pd_devalloc_put(&a, q, c2);
  pd_devalloc_destroy(&a);
  assert_int_equal(d.used, 0);
}

static void test_out_of_memory_trims_cache_then_fails(void **state) {
  (void)state;
  fake_dev d = {.budget = 4096};
  pd_devalloc a = make(&d);
  size_t c1, c2, c3;
  void *p = pd_devalloc_get(&a, 3000, &c1); /* 3072 */
  assert_non_null(p);
  pd_devalloc_put(&a, p, c1);
  assert_int_equal(a.cached, 3072);
  /* 2048 does not fit beside the cached 3072: the cache goes back first */
  void *q = pd_devalloc_get(&a, 2048, &c2);
  assert_non_null(q);
  assert_int_equal(a.cached, 0);
  assert_int_equal(d.frees, 1);
  assert_int_equal(a.in_use, 2048);
  /* and a request larger than what is left fails cleanly */
  assert_null(pd_devalloc_get(&a, 4096, &c3));
  assert_int_equal(a.in_use, 2048);
  assert_int_equal(a.peak, 3072);
  pd_devalloc_put(&a, q, c2);
  pd_devalloc_destroy(&a);
  assert_int_equal(d.used, 0);
}

/* A device that fails for another reason than memory: reported as a fault,
 * with no trim (the cache stays) and no second try. */
static void test_fault_is_not_out_of_memory(void **state) {
  (void)state;
  fake_dev d = {.budget = 1 << 20};
  pd_devalloc a = make(&d);
  size_t c1, c2;
  void *p = pd_devalloc_get(&a, 3000, &c1);
  assert_non_null(p);
  pd_devalloc_put(&a, p, c1);
  d.faulted = true;
  d.calls = 0;
  assert_null(pd_devalloc_get(&a, 100000, &c2));
  assert_true(a.fault);
  assert_int_equal(d.calls, 1);
  assert_int_equal(a.cached, 3072);
  assert_int_equal(d.frees, 0);
  /* out of memory is not a fault */
  d.faulted = false;
  assert_null(pd_devalloc_get(&a, 2 << 20, &c2));
  assert_false(a.fault);
  assert_int_equal(a.cached, 0);
  pd_devalloc_destroy(&a);
  assert_int_equal(d.used, 0);
}

static void test_odd_sizes_go_straight_back(void **state) {
  (void)state;
  fake_dev d = {.budget = 1 << 20};
  pd_devalloc a = make(&d);
  bool fault;
  void *p = fake_alloc(&d, 1000, &fault); /* a size get never hands out */
  pd_devalloc_put(&a, p, 1000);
  assert_int_equal(d.frees, 1);
  assert_int_equal(a.cached, 0);
  pd_devalloc_put(&a, NULL, 256); /* ignored */
  pd_devalloc_destroy(&a);
  assert_int_equal(d.used, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_class_sizes),
      cmocka_unit_test(test_reuse_without_device_calls),
      cmocka_unit_test(test_same_class_shares_blocks),
      cmocka_unit_test(test_out_of_memory_trims_cache_then_fails),
      cmocka_unit_test(test_fault_is_not_out_of_memory),
      cmocka_unit_test(test_odd_sizes_go_straight_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
