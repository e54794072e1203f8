/* bench_dispatch.c — per-op dispatch overhead: a chain of N `scale` ops on a
 * one-element tensor, built as NetDesc text in memory, loaded with
 * pd_net_from_text and run through pd_runner_run (which checks the data
 * shapes, then calls each op's kernel). The same chain is also run by
 * calling each op's kernel directly (no runner) and as plain arithmetic, so
 * the runner's own cost per op can be read off. Prints one line per run:
 *   runner_ns_per_op kernel_ns_per_op inline_ns_per_op
 * after a line "# build_ms_per_1000_ops ..." for loading the net.
 *   bench_dispatch NOPS RUNS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/net.h"
#include "core/runner.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const pd_error *err) {
  fprintf(stderr, "bench_dispatch: %s\n", err->msg);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: bench_dispatch NOPS RUNS\n");
    return 2;
  }
  int nops = atoi(argv[1]), runs = atoi(argv[2]);
  pd_buf text = {0};
  pd_buf_printf(&text, "name: \"chain\"\nvar { name: \"x0\" shape: [1] }\n");
  for (int i = 0; i < nops; i++)
    pd_buf_printf(&text,
                  "op { type: \"scale\" inputs: \"x%d\" outputs: \"x%d\" "
                  "attrs { key: \"scale\" value { f: 1.0 } } attrs { key: \"bias\" value { f: 0.5 } } }\n",
                  i, i + 1);
  pd_error err = {0};
  pd_net *net = NULL;
  double t0 = now();
  if (pd_net_from_text("chain.pbtxt", text.data, text.len, NULL, &net, &err)) die(&err);
  if (pd_net_select_kernels(net, PD_CPU, &err)) die(&err);
  double t_build = now() - t0;
  pd_scope *scope = pd_scope_new(NULL);
  pd_runner r;
  if (pd_runner_init(&r, net, scope, NULL, &err)) die(&err);
  r.exec.training = false;
  int x0 = pd_net_var(net, "x0");
  int64_t one = 1;
  if (pd_tensor_set_dims(r.t[x0], 1, &one, &err) || pd_tensor_alloc(r.t[x0], &err)) die(&err);
  PD_DATA(r.t[x0], float)[0] = 0;
  t0 = now();
  if (pd_runner_run(&r, 0, net->nops, &err)) die(&err); /* first run: shapes, allocation */
  double t_first = now() - t0;
  printf("# build_ms %.3f first_run_ms %.3f nops %d result %g\n", t_build * 1e3, t_first * 1e3, net->nops,
         (double)PD_DATA(r.t[pd_net_var(net, "x1")], float)[0]);

  /* iterations per run: about 20 ms each */
  int iters = 1;
  for (;;) {
    t0 = now();
    for (int k = 0; k < iters; k++)
      if (pd_runner_run(&r, 0, net->nops, &err)) die(&err);
    if (now() - t0 > 0.02) break;
    iters *= 2;
  }
  float *x = PD_DATA(r.t[x0], float);
  for (int run = 0; run < runs; run++) {
    t0 = now();
    for (int k = 0; k < iters; k++)
      if (pd_runner_run(&r, 0, net->nops, &err)) die(&err);
    double t_runner = now() - t0;

    /* the kernels alone, called the way the runner calls them */
    pd_ctx c = {.vars = r.t, .exec = &r.exec, .err = &err};
    t0 = now();
    for (int k = 0; k < iters; k++)
      for (int o = 0; o < net->nops; o++) {
        c.op = &net->ops[o];
        if (c.op->kernel->fn(&c)) die(&err);
      }
    double t_kernel = now() - t0;

    /* plain arithmetic on one element per op, through memory like the chain */
    t0 = now();
    for (int k = 0; k < iters; k++) {
      for (int o = 0; o < net->nops; o++) {
        volatile float *in = PD_DATA(r.t[o], float), *out = PD_DATA(r.t[o + 1], float);
        *out = 1.0f * *in + 0.5f;
      }
    }
    double t_inline = now() - t0;
    double per = 1e9 / ((double)iters * net->nops);
    printf("%.2f %.2f %.2f\n", t_runner * per, t_kernel * per, t_inline * per);
    fflush(stdout);
    x[0] += 1;
  }
  pd_runner_free(&r);
  pd_scope_free(scope);
  pd_net_free(net);
  pd_buf_free(&text);
  return 0;
}
