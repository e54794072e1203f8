/* test_place.c — the place table (core/place.h) with a fake device in host
 * memory registered as the GPU: tensors on it are allocated, copied and
 * freed through its table only; a runner placed on it calls its hooks
 * (attach once, then stage, prepare and run per run, stage not again after
 * pd_runner_stage, fetch on asking, detach when freed) and computes what
 * the CPU runner computes; with no table registered, allocating or placing
 * a runner there is an error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/net.h"
#include "core/place.h"
#include "core/runner.h"
#include "core/scope.h"

static struct {
  int allocs, frees, copies;
  size_t live;   /* bytes allocated and not freed */
  char log[256]; /* the runner hooks called, one letter each */
} fake;

static void note(char c) {
  size_t n = strlen(fake.log);
  if (n + 1 < sizeof fake.log) fake.log[n] = c, fake.log[n + 1] = '\0';
}

static void *fake_alloc(size_t bytes, size_t *cap, const char *what, pd_error *err) {
  (void)what, (void)err;
  size_t c = bytes ? bytes : 1;
  void *p = calloc(1, c);
  if (p) fake.allocs++, fake.live += c, *cap = c;
  return p;
}

static void fake_free(void *p, size_t cap) {
  fake.frees++, fake.live -= cap;
  free(p);
}

static pd_status fake_copy(void *dst, pd_place dplace, const void *src, pd_place splace, size_t bytes, pd_error *err) {
  (void)err;
  assert_true(dplace.kind == PD_GPU || splace.kind == PD_GPU); /* host to host is the CPU's */
  fake.copies++;
  memcpy(dst, src, bytes);
  return PD_OK;
}

/* The runner hooks: device copies in the scope (as lib/gpu does), data copied
 * in by stage, the CPU kernels run on the copies (the memory is the host's). */
static pd_status fake_attach(pd_runner *r, pd_error *err) {
  note('a');
  r->d = calloc((size_t)r->net->nvars + 1, sizeof *r->d);
  if (!r->d) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int v = 0; v < r->net->nvars; v++) {
    pd_tensor *d = &pd_scope_var(r->scope, r->net->vars[v].name)->dev;
    d->place = (pd_place){PD_GPU, 0};
    d->dtype = r->t[v]->dtype;
    r->d[v] = d;
  }
  r->vars = r->d;
  return PD_OK;
}

static void fake_detach(pd_runner *r) {
  note('x');
  free(r->d);
  r->d = NULL;
}

static pd_status fake_stage(pd_runner *r, pd_error *err) {
  note('s');
  for (int v = 0; v < r->net->nvars; v++)
    if (r->net->vars[v].kind == PD_VAR_DATA) {
      pd_status st = pd_tensor_copy(r->d[v], r->t[v], err);
      if (st) return st;
    }
  return PD_OK;
}

static pd_status fake_prepare(pd_runner *r, pd_error *err) {
  note('p');
  return pd_runner_alloc_outputs(r, err);
}

static pd_status fake_run(pd_runner *r, int begin, int end, pd_error *err) {
  note('r');
  pd_ctx c = {.vars = r->d, .exec = &r->exec, .err = err};
  for (int o = begin; o < end; o++) {
    c.op = &r->net->ops[o];
    pd_status st = c.op->kernel->fn(&c);
    if (st) return st;
  }
  return PD_OK;
}

static pd_status fake_fetch(pd_runner *r, int v, pd_error *err) {
  note('f');
  return pd_tensor_copy(r->t[v], r->d[v], err);
}

static const pd_place_runner fake_runner = {fake_attach, fake_detach, fake_stage, fake_prepare, fake_run, fake_fetch};
static const pd_place_ops fake_place = {"GPU", fake_alloc, fake_free, fake_copy, &fake_runner};

static int setup(void **state) {
  (void)state;
  memset(&fake, 0, sizeof fake);
  pd_place_register(PD_GPU, &fake_place);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  pd_place_register(PD_GPU, NULL);
  return 0;
}

static void test_kinds(void **state) {
  (void)state;
  const pd_place_ops *cpu = pd_place_ops_of(PD_CPU);
  assert_non_null(cpu);
  assert_string_equal(cpu->name, "CPU");
  assert_null(cpu->runner);
  pd_place_register(PD_CPU, NULL); /* the CPU's table stays */
  assert_ptr_equal(pd_place_ops_of(PD_CPU), cpu);
  assert_null(pd_place_ops_of((pd_place_kind)7));
  assert_string_equal(pd_place_kind_name(PD_GPU), "GPU");
}

static void test_unregistered(void **state) {
  (void)state;
  assert_null(pd_place_ops_of(PD_GPU)); /* no GPU was opened in this process */
  pd_error err = {0};
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  t.place = (pd_place){PD_GPU, 0};
  assert_int_equal(pd_tensor_set_dims(&t, 2, (int64_t[]){2, 3}, &err), PD_OK);
  assert_int_equal(pd_tensor_alloc(&t, &err), PD_ERR_RUNTIME);
  assert_string_equal(err.msg, "allocating a tensor of shape [2, 3] on a GPU before the GPU was opened");
  assert_null(t.storage);
}

static void test_memory(void **state) {
  (void)state;
  pd_error err = {0};
  pd_tensor h, d, back;
  pd_tensor_init(&h, PD_F32);
  pd_tensor_init(&d, PD_F32);
  pd_tensor_init(&back, PD_F32);
  d.place = (pd_place){PD_GPU, 0};
  assert_int_equal(pd_tensor_set_dims(&h, 1, (int64_t[]){5}, &err), PD_OK);
  assert_int_equal(pd_tensor_alloc(&h, &err), PD_OK);
  assert_int_equal(fake.allocs, 0); /* host memory is the CPU's */
  assert_int_equal((uintptr_t)pd_tensor_data(&h) % 64, 0);
  for (int i = 0; i < 5; i++) PD_DATA(&h, float)[i] = (float)i + 0.5f;

  assert_int_equal(pd_tensor_copy(&d, &h, &err), PD_OK); /* host to device */
  assert_int_equal(fake.allocs, 1);
  assert_int_equal(fake.copies, 1);
  assert_int_equal(d.storage->place.kind, PD_GPU);
  assert_int_equal(d.storage->cap, 20);
  assert_int_equal(pd_tensor_copy(&back, &d, &err), PD_OK); /* device to host */
  assert_int_equal(fake.copies, 2);
  assert_int_equal(back.storage->place.kind, PD_CPU);
  for (int i = 0; i < 5; i++) assert_true(PD_DATA(&back, float)[i] == (float)i + 0.5f);

  pd_tensor d2;
  pd_tensor_init(&d2, PD_F32);
  d2.place = (pd_place){PD_GPU, 0};
  assert_int_equal(pd_tensor_copy(&d2, &d, &err), PD_OK); /* within the device */
  assert_int_equal(fake.copies, 3);
  assert_int_equal(pd_tensor_alloc(&d2, &err), PD_OK); /* holds its shape: no new block */
  assert_int_equal(fake.allocs, 2);

  pd_tensor_release(&d);
  pd_tensor_release(&d2);
  assert_int_equal(fake.frees, 2);
  assert_int_equal(fake.live, 0);
  pd_tensor_release(&h);
  pd_tensor_release(&back);
  assert_int_equal(fake.frees, 2);
}

static const char NET[] = "name: \"chain\"\n"
                          "var { name: \"x\" shape: [-1, 3] }\n"
                          "op { type: \"scale\" inputs: \"x\" outputs: \"y\" "
                          "attrs { key: \"scale\" value { f: 2.0 } } attrs { key: \"bias\" value { f: 1.0 } } }\n"
                          "op { type: \"scale\" inputs: \"y\" outputs: \"z\" "
                          "attrs { key: \"scale\" value { f: 3.0 } } }\n";

static void feed(pd_runner *r, int x, int64_t n, float base) {
  pd_error err = {0};
  assert_int_equal(pd_tensor_set_dims(r->t[x], 2, (int64_t[]){n, 3}, &err), PD_OK);
  assert_int_equal(pd_tensor_alloc(r->t[x], &err), PD_OK);
  for (int64_t i = 0; i < n * 3; i++) PD_DATA(r->t[x], float)[i] = base + (float)i;
}

static void test_runner(void **state) {
  (void)state;
  pd_error err = {0};
  pd_net *net = NULL;
  if (pd_net_from_text("chain.pbtxt", NET, strlen(NET), NULL, &net, &err)) fail_msg("%s", err.msg);
  assert_int_equal(pd_net_select_kernels(net, PD_CPU, &err), PD_OK);
  int x = pd_net_var(net, "x"), z = pd_net_var(net, "z");
  pd_scope *scope = pd_scope_new(NULL);
  pd_runner r;
  assert_int_equal(pd_runner_init(&r, net, scope, NULL, &err), PD_OK);
  assert_ptr_equal(r.vars, r.t);
  assert_int_equal(pd_runner_set_place(&r, (pd_place){PD_GPU, 0}, &err), PD_OK);
  assert_string_equal(fake.log, "a");
  assert_ptr_equal(r.vars, r.d);

  feed(&r, x, 4, 0);
  assert_int_equal(pd_runner_run(&r, 0, -1, &err), PD_OK);
  assert_string_equal(fake.log, "aspr");
  assert_null(r.t[z]->storage); /* the result stays on the device until fetched */
  assert_int_equal(pd_runner_fetch(&r, z, &err), PD_OK);
  assert_string_equal(fake.log, "asprf");
  for (int i = 0; i < 12; i++) assert_true(PD_DATA(r.t[z], float)[i] == 3 * (2 * (float)i + 1));

  /* staged ahead: the run does not stage again; same shapes: no prepare */
  feed(&r, x, 4, 100);
  assert_int_equal(pd_runner_stage(&r, &err), PD_OK);
  assert_int_equal(pd_runner_run(&r, 0, -1, &err), PD_OK);
  assert_int_equal(pd_runner_fetch(&r, -1, &err), PD_OK); /* no variable: nothing */
  assert_int_equal(pd_runner_fetch(&r, z, &err), PD_OK);
  assert_string_equal(fake.log, "asprfsrf");
  assert_true(PD_DATA(r.t[z], float)[0] == 3 * (2 * 100.0f + 1));

  /* a short batch: prepared again */
  feed(&r, x, 2, 0);
  assert_int_equal(pd_runner_run(&r, 0, -1, &err), PD_OK);
  assert_string_equal(fake.log, "asprfsrfspr");
  assert_true(fake.allocs > 0);
  assert_true(fake.copies > 0);

  /* back on the CPU: detached, the CPU's kernels on the host tensors */
  assert_int_equal(pd_runner_set_place(&r, (pd_place){PD_CPU, 0}, &err), PD_OK);
  assert_string_equal(fake.log, "asprfsrfsprx");
  assert_ptr_equal(r.vars, r.t);
  assert_null(r.d);
  feed(&r, x, 3, 10);
  assert_int_equal(pd_runner_run(&r, 0, -1, &err), PD_OK);
  assert_int_equal(r.t[z]->dims[0], 3);
  for (int i = 0; i < 9; i++) assert_true(PD_DATA(r.t[z], float)[i] == 3 * (2 * (10 + (float)i) + 1));

  assert_int_equal(pd_runner_set_place(&r, (pd_place){PD_GPU, 0}, &err), PD_OK);
  pd_runner_free(&r);
  assert_string_equal(fake.log, "asprfsrfsprxax");
  pd_scope_free(scope); /* the device copies live in the scope */
  assert_int_equal(fake.frees, fake.allocs);
  assert_int_equal(fake.live, 0);
  pd_net_free(net);
}

static void test_runner_unregistered(void **state) {
  (void)state;
  pd_error err = {0};
  pd_net *net = NULL;
  if (pd_net_from_text("chain.pbtxt", NET, strlen(NET), NULL, &net, &err)) fail_msg("%s", err.msg);
  pd_scope *scope = pd_scope_new(NULL);
  pd_runner r;
  assert_int_equal(pd_runner_init(&r, net, scope, NULL, &err), PD_OK);
  assert_int_equal(pd_runner_set_place(&r, (pd_place){PD_GPU, 0}, &err), PD_ERR_RUNTIME);
  assert_string_equal(err.msg, "a runner was placed on a GPU that is not open");
  assert_int_equal(r.exec.place.kind, PD_CPU);
  pd_runner_free(&r);
  pd_scope_free(scope);
  pd_net_free(net);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kinds),
      cmocka_unit_test(test_unregistered),
      cmocka_unit_test(test_runner_unregistered),
      cmocka_unit_test_setup_teardown(test_memory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_runner, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
