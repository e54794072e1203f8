/* bench_gemm_gpu.c — large SGEMM on the GPU: our matrix-product path (the
 * fc op's GPU kernel, no bias, as a net runs it) against one cuBLAS call
 * alone on the same device buffers. Prints one JSON line per size:
 *   {"m":..,"n":..,"k":..,"ours_tflops":..,"cublas_tflops":..}
 * or a line starting "skipped:" (exit 0) where there is no GPU or no CUDA.
 *   bench_gemm_gpu [SIZE...]      (square sizes; default 4096 8192) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/gpurt.h"
#include "core/net.h"
#include "core/runner.h"

#ifdef PD_WITH_CUDA
#include "gpu/gpu.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int one_size(long n) {
  char text[512];
  snprintf(text, sizeof text,
           "name: \"gemm\"\nvar { name: \"x\" shape: [-1, %ld] dtype: FLOAT32 }\n"
           "op { type: \"fc\" inputs: [\"x\", \"w\", \"\"] outputs: \"y\" attrs { key: \"size\" value { i: %ld } } }\n",
           n, n);
  pd_error err = {0};
  pd_net *net = NULL;
  pd_scope *scope = NULL;
  pd_runner r = {0};
  pd_status st = pd_net_from_text("gemm", text, strlen(text), NULL, &net, &err);
  if (!st) st = pd_net_select_kernels(net, PD_GPU, &err);
  if (!st && !(scope = pd_scope_new(NULL))) st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
  if (!st) st = pd_runner_init(&r, net, scope, NULL, &err);
  int x = st ? -1 : pd_net_var(net, "x"), w = st ? -1 : pd_net_var(net, "w"), y = st ? -1 : pd_net_var(net, "y");
  if (!st) {
    int64_t dims[2] = {n, n};
    st = pd_tensor_set_dims(r.t[x], 2, dims, &err);
    if (!st) st = pd_tensor_alloc(r.t[x], &err);
    for (int64_t i = 0; !st && i < n * n; i++) {
      PD_DATA(r.t[x], float)[i] = (float)((i * 7919) % 1000) * 1e-3f;
      PD_DATA(r.t[w], float)[i] = (float)((i * 104729) % 1000) * 1e-3f;
    }
  }
  if (!st) st = pd_runner_set_place(&r, (pd_place){PD_GPU, 0}, &err);
  if (!st) st = pd_runner_run(&r, 0, net->nops, &err); /* uploads x, allocates y, warms up */
  if (!st) st = pd_gpu_sync("warm-up", &err);
  double ours = 0, theirs = 0;
  int reps = n >= 8192 ? 10 : 30;
  if (!st) {
    pd_ctx c = {.op = &net->ops[0], .vars = r.d, .exec = &r.exec, .err = &err};
    double t0 = now();
    for (int i = 0; i < reps && !st; i++) st = net->ops[0].kernel->fn(&c);
    if (!st) st = pd_gpu_sync("our fc", &err);
    ours = (now() - t0) / reps;
  }
  if (!st) {
    /* row-major Y = X W is column-major Y^T = W^T X^T */
    const float one = 1, zero = 0;
    cublasHandle_t h = pd_gpu_blas(NULL);
    const float *dx = r.d[x]->storage->data, *dw = r.d[w]->storage->data;
    float *dy = r.d[y]->storage->data;
    double t0 = now();
    for (int i = 0; i < reps; i++)
      if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &one, dw, (int)n, dx, (int)n, &zero, dy,
                      (int)n) != CUBLAS_STATUS_SUCCESS)
        st = pd_errorf(&err, PD_ERR_RUNTIME, "cublasSgemm failed");
    if (!st) st = pd_gpu_sync("cuBLAS alone", &err);
    theirs = (now() - t0) / reps;
  }
  double flops = 2.0 * (double)n * (double)n * (double)n;
  if (!st)
    printf("{\"m\":%ld,\"n\":%ld,\"k\":%ld,\"ours_tflops\":%.3f,\"cublas_tflops\":%.3f}\n", n, n, n,
           flops / ours * 1e-12, flops / theirs * 1e-12);
  else
    fprintf(stderr, "bench_gemm_gpu: %ld: %s\n", n, err.msg);
  pd_runner_free(&r);
  pd_scope_free(scope);
  pd_net_free(net);
  return st ? 1 : 0;
}
#endif

int main(int argc, char **argv) {
#ifndef PD_WITH_CUDA
  (void)argc, (void)argv;
  printf("skipped: this build has no CUDA\n");
  return 0;
#else
  pd_error err = {0};
  pd_gpu_opts go = {0};
  if (pd_gpu_open(&go, &err)) {
    printf("skipped: no GPU: %s\n", err.msg);
    return 0;
  }
  int rc = 0;
  if (argc < 2) {
    rc |= one_size(4096);
    rc |= one_size(8192);
  }
  for (int i = 1; i < argc; i++) rc |= one_size(atol(argv[i]));
  pd_gpu_close();
  return rc;
#endif
}
