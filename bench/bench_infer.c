/* bench_infer.c — in-process inference of a trained net through pd_runner,
 * without process start-up or file reading: loads NET and its parameters,
 * keeps only the ops the fetched variable needs (as `paddle-run infer`
 * does), fills the data variable with random bytes of the declared dtype,
 * and times pd_runner_run. Prints one line per run: seconds per batch
 * (each run averages enough batches to last ~20 ms).
 *   bench_infer NET PARAMS_DIR DATA_VAR FETCH_VAR THREADS BATCH RUNS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/net.h"
#include "core/runner.h"
#include "io/params.h"
#include "cpu/parallel.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const pd_error *err) {
  fprintf(stderr, "bench_infer: %s\n", err->msg);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: bench_infer NET PARAMS_DIR DATA_VAR FETCH_VAR THREADS BATCH RUNS\n");
    return 2;
  }
  int threads = atoi(argv[5]), runs = atoi(argv[7]);
  int64_t batch = atoll(argv[6]);
  pd_set_threads(threads);
  pd_error err = {0};
  pd_net *net = NULL;
  if (pd_net_load(argv[1], NULL, &net, &err)) die(&err);
  int data = pd_net_var(net, argv[3]), fetch = pd_net_var(net, argv[4]);
  if (data < 0 || fetch < 0) {
    fprintf(stderr, "bench_infer: no variable %s or %s\n", argv[3], argv[4]);
    return 1;
  }
  bool *active = calloc((size_t)net->nops + 1, 1);
  pd_net_prune(net, &fetch, 1, active);
  if (pd_net_select_kernels(net, PD_CPU, &err)) die(&err);
  pd_scope *scope = pd_scope_new(NULL);
  if (pd_params_load(net, scope, argv[2], active, true, NULL, NULL, &err)) die(&err);
  pd_runner r;
  if (pd_runner_init(&r, net, scope, active, &err)) die(&err);
  r.exec.training = false;
  /* the data tensor: declared shape with the batch filled in */
  const pd_var_info *vi = &net->vars[data];
  int64_t dims[PD_MAX_DIMS];
  for (int d = 0; d < vi->meta.ndim; d++) dims[d] = vi->meta.dims[d] < 0 ? batch : vi->meta.dims[d];
  pd_tensor *x = r.t[data];
  x->dtype = vi->meta.dtype;
  if (pd_tensor_set_dims(x, vi->meta.ndim, dims, &err) || pd_tensor_alloc(x, &err)) die(&err);
  unsigned char *p = pd_tensor_data(x);
  uint64_t s = 88172645463325252ull;
  for (size_t i = 0; i < pd_tensor_bytes(x); i++) s ^= s << 13, s ^= s >> 7, s ^= s << 17, p[i] = (unsigned char)s;
  if (pd_dtype_is_float(x->dtype)) /* bytes would make NaNs: small values instead */
    for (int64_t i = 0; i < pd_tensor_numel(x); i++) pd_tensor_set(x, i, (double)(i % 256) / 255.0);
  double t0 = now();
  if (pd_runner_run(&r, 0, net->nops, &err)) die(&err);
  printf("# first_run_ms %.3f\n", (now() - t0) * 1e3);
  for (int w = 0; w < 5; w++)
    if (pd_runner_run(&r, 0, net->nops, &err)) die(&err);
  int iters = 1;
  for (;;) {
    t0 = now();
    for (int k = 0; k < iters; k++)
      if (pd_runner_run(&r, 0, net->nops, &err)) die(&err);
    if (now() - t0 > 0.02) break;
    iters *= 2;
  }
  for (int run = 0; run < runs; run++) {
    t0 = now();
    for (int k = 0; k < iters; k++)
      if (pd_runner_run(&r, 0, net->nops, &err)) die(&err);
    printf("%.9f\n", (now() - t0) / iters);
    fflush(stdout);
  }
  pd_runner_free(&r);
  pd_scope_free(scope);
  free(active);
  pd_net_free(net);
  return 0;
}
