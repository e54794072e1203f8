/* gpu.c — the GPU runtime (gpurt.h) and what kernels call (gpu.h): one
 * device per process, a compute stream that every kernel launches on, a
 * copy stream for inputs, a cuBLAS handle bound to the compute stream,
 * device memory through the caching allocator, and runners on a GPU:
 * host-fed variables copied in through pinned buffers, the step captured in
 * a CUDA graph and replayed; the core reaches them through the GPU place's
 * table (core/place.h), registered when the device is opened. Plain C
 * against the CUDA runtime API; the few kernels it needs are in
 * gpu_util.cu. Without CUDA only the stubs at the end are built. */
#include "gpu/gpurt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/gpu.h"
#include "core/net.h"
#include "core/place.h"
#include "core/runner.h"

bool pd_place_parse(const char *s, pd_place *place) {
  if (strcmp(s, "cpu") == 0) {
    *place = (pd_place){PD_CPU, 0};
    return true;
  }
  if (strncmp(s, "gpu", 3) != 0) return false;
  if (s[3] == '\0') {
    *place = (pd_place){PD_GPU, 0};
    return true;
  }
  if (s[3] != ':' || s[4] < '0' || s[4] > '9') return false;
  long n = 0;
  for (const char *p = s + 4; *p; p++) {
    if (*p < '0' || *p > '9' || n > 1000) return false;
    n = n * 10 + (*p - '0');
  }
  *place = (pd_place){PD_GPU, (int)n};
  return true;
}

static const char *human(size_t b, char *buf, size_t size) {
  if (b >= (size_t)1 << 30)
    snprintf(buf, size, "%.2f GiB", (double)b / (double)(1u << 30));
  else if (b >= (size_t)1 << 20)
    snprintf(buf, size, "%.1f MiB", (double)b / (double)(1u << 20));
  else
    snprintf(buf, size, "%zu bytes", b);
  return buf;
}

#ifdef PD_WITH_CUDA

#include <cuda.h> /* CUDA_VERSION */
#include <dlfcn.h>

#include "base/dlsearch.h"
#include "gpu/devalloc.h"

/* gpu_util.cu */
cudaError_t pd_gpu_launch_fill_f32(float *p, size_t n, float v, cudaStream_t s);
cudaError_t pd_gpu_launch_count_nonfinite(const void *p, size_t n, int f64, unsigned long long *count, cudaStream_t s);
cudaError_t pd_gpu_launch_set_i64(int64_t *p, int64_t v, cudaStream_t s);

#define BLAS_WORKSPACE ((size_t)32 << 20) /* cuBLAS's recommendation for Hopper, set once (graph capture) */

static const pd_place_ops gpu_place; /* the GPU's table for the core (place.h), at the end of the CUDA part */

static struct {
  bool open;
  pd_gpu_opts opts;
  cudaStream_t stream, copy;
  cublasHandle_t blas;
  pd_devalloc alloc;
  void *blas_ws;
  size_t blas_ws_cap;
  char name[256];
  cudaError_t alloc_error; /* why the last cudaMalloc failed */
  /* the op launched last (a store or two per launch), for a kernel fault
   * that surfaces later: its definition (registered for the process's
   * life, unlike the net, which may be gone by then) and index; in_graph:
   * as part of a graph replay */
  const pd_op_def *last_def;
  int last_index;
  bool last_in_graph;
  pd_gpu_fault *fault;      /* device memory: what a kernel found wrong (gpu.h) */
  pd_gpu_fault *fault_seen; /* pinned: its copy, read back with each fetch */
  const int64_t *step;      /* the running runner's step counter (pd_gpu_step) */
} g;

bool pd_gpu_built(void) { return true; }

const char *pd_gpu_cuda_version(void) {
  static char v[32];
  snprintf(v, sizeof v, "%d.%d", CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
  return v;
}

static void *dev_alloc(void *ctx, size_t bytes, bool *fault) {
  (void)ctx;
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    g.alloc_error = e;
    /* only out of memory is worth a trim and a retry; anything else (a
     * sticky fault of an earlier kernel) fails every call from now on */
    *fault = e != cudaErrorMemoryAllocation;
    (void)cudaGetLastError(); /* clears out of memory; a sticky error stays */
    return NULL;
  }
  return p;
}

static void dev_free(void *ctx, void *p) {
  (void)ctx;
  cudaFree(p);
}

static pd_status cuda_fail(pd_error *err, pd_status st, cudaError_t e, const char *what) {
  return pd_errorf(err, st, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* A device fault found by a call that did not cause it: kernels run
 * asynchronously, so the op launched last is a suspect, not a culprit. */
static pd_status device_fault(pd_error *err, cudaError_t e, const char *what) {
  char op[160] = "";
  if (g.last_def)
    snprintf(op, sizeof op,
             "; the op launched last was op #%d \"%s\"%s: the fault may come from it or from an earlier op",
             g.last_index, g.last_def->type, g.last_in_graph ? " (in the step's CUDA graph)" : "");
  return pd_errorf(err, PD_ERR_RUNTIME, "%s: the GPU faulted: %s (%s)%s", what, cudaGetErrorString(e),
                   cudaGetErrorName(e), op);
}

/* The errors a faulting kernel leaves behind: sticky, every later call
 * returns them, whatever that call was. */
static bool sticky(cudaError_t e) {
  return e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorMisalignedAddress ||
         e == cudaErrorIllegalInstruction || e == cudaErrorInvalidPc || e == cudaErrorInvalidAddressSpace ||
         e == cudaErrorHardwareStackError || e == cudaErrorAssert || e == cudaErrorLaunchTimeout ||
         e == cudaErrorECCUncorrectable;
}

/* A failed call: a device fault when it is one, else the call's error. */
static pd_status call_fail(pd_error *err, cudaError_t e, const char *what) {
  return sticky(e) ? device_fault(err, e, what) : cuda_fail(err, PD_ERR_RUNTIME, e, what);
}

/* Why --device gpu cannot be had, as a sentence. Only "this machine has no
 * GPU" (no NVIDIA driver installed at all, or a driver that sees no device)
 * is PD_ERR_INPUT and says "no CUDA device found": test/gpu/gpu_env skips on
 * exactly that. A driver that is there but cannot be used is PD_ERR_RUNTIME
 * with its own message, so a broken GPU host fails the tests, never skips. */
static pd_status no_device(const pd_gpu_opts *o, cudaError_t e, const char *call, pd_error *err) {
  char dev[32];
  snprintf(dev, sizeof dev, "--device gpu:%d", o->device);
  const char *cause = cudaGetErrorString(e), *name = cudaGetErrorName(e);
  void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    if (!why || strstr(why, "No such file"))
      return pd_errorf(err, PD_ERR_INPUT,
                       "%s: no CUDA device found: no NVIDIA driver is installed (libcuda.so.1 not found) (%s: %s); "
                       "use --device cpu",
                       dev, call, cause);
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: the NVIDIA driver library cannot be loaded: %s", dev, why);
  }
  dlclose(lib);
  if (e == cudaErrorNoDevice)
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: no CUDA device found: the NVIDIA driver sees no GPU (%s: %s); use --device cpu", dev, call,
                     cause);
  const char *why;
  char more[192] = "";
  int drv = 0, rt = 0;
  switch (e) {
  case cudaErrorInsufficientDriver:
    why = "the NVIDIA driver is too old for this build";
    cudaRuntimeGetVersion(&rt);
    if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0)
      snprintf(more, sizeof more, ": it supports CUDA %d.%d, paddle-run was built with CUDA %d.%d", drv / 1000,
               drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
    break;
  case cudaErrorSystemDriverMismatch:
    why = "the NVIDIA driver library (libcuda.so.1) does not match the loaded kernel module: reboot after a driver "
          "update, or remove a stray cuda-compat libcuda from the library path";
    break;
  case cudaErrorCompatNotSupportedOnDevice:
    why = "a CUDA forward-compatibility driver (cuda-compat) is in use and this GPU does not support it: use the "
          "system's own driver";
    break;
  case cudaErrorSystemNotReady:
    why = "the GPUs are not ready; on an NVSwitch host (HGX/DGX) the nvidia-fabricmanager service must be "
          "running (systemctl start nvidia-fabricmanager)";
    break;
  case cudaErrorInitializationError:
    why = "the NVIDIA driver failed to initialise (see `nvidia-smi` and the kernel log)";
    break;
  case cudaErrorDevicesUnavailable:
    why = "the GPU is busy or unavailable (another process holds it in exclusive mode, or it is in a bad state; "
          "see `nvidia-smi`)";
    break;
  case cudaErrorStubLibrary:
    why = "the CUDA toolkit's stub libcuda was loaded instead of the driver: take lib64/stubs off the library path";
    break;
  case cudaErrorNotPermitted:
    why = "this process may not use the GPU (device file permissions?)";
    break;
  default:
    why = "the GPU cannot be used";
  }
  return pd_errorf(err, PD_ERR_RUNTIME, "%s: %s%s (%s: %s, %s)", dev, why, more, call, cause, name);
}

/* The trampolines of mk/cublas_tramp.sh: pointed at cuBLAS once it is loaded. */
extern const char *const pd_cublas_names[];
extern const size_t pd_cublas_count;
extern void *pd_cublas_slot[];

pd_status pd_gpu_load_cublas(const char *what, pd_error *err) {
  static void *lib;
  if (lib) return PD_OK;
  char why[1024];
  if (!(lib = pd_dl_search(PD_CUBLAS_SONAME, why, sizeof why)))
    return pd_errorf(err, PD_ERR_INPUT,
                     "%s: cannot load cuBLAS: %s; install the CUDA toolkit's cuBLAS (CUDA %s) or add its "
                     "directory to LD_LIBRARY_PATH",
                     what, why, pd_gpu_cuda_version());
  for (size_t i = 0; i < pd_cublas_count; i++) {
    void *f = dlsym(lib, pd_cublas_names[i]);
    if (f) pd_cublas_slot[i] = f;
  }
  return PD_OK;
}

pd_status pd_gpu_open(const pd_gpu_opts *opts, pd_error *err) {
  if (g.open) {
    if (g.opts.device == opts->device) {
      g.opts = *opts;
      return cublasSetMathMode(g.blas, opts->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) ==
                     CUBLAS_STATUS_SUCCESS
                 ? PD_OK
                 : pd_errorf(err, PD_ERR_RUNTIME, "cublasSetMathMode failed");
    }
    return pd_errorf(err, PD_ERR_INPUT, "--device gpu:%d: this process already uses gpu:%d", opts->device,
                     g.opts.device);
  }
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    (void)cudaGetLastError();
    return no_device(opts, e == cudaSuccess ? cudaErrorNoDevice : e, "cudaGetDeviceCount", err);
  }
  if (opts->device >= n)
    return pd_errorf(err, PD_ERR_INPUT, "--device gpu:%d: there %s only %d CUDA device%s (gpu:0%s)", opts->device,
                     n == 1 ? "is" : "are", n, n == 1 ? "" : "s", n == 1 ? "" : "..");
  char what[64];
  snprintf(what, sizeof what, "--device gpu:%d", opts->device);
  if ((e = cudaSetDevice(opts->device)) != cudaSuccess) { /* a device that is there but cannot be used */
    (void)cudaGetLastError();
    return no_device(opts, e, "cudaSetDevice", err);
  }
  pd_status lst = pd_gpu_load_cublas(what, err);
  if (lst) return lst;
  struct cudaDeviceProp prop;
  if ((e = cudaGetDeviceProperties(&prop, opts->device)) != cudaSuccess) return cuda_fail(err, PD_ERR_RUNTIME, e, what);
  char mem[32];
  snprintf(g.name, sizeof g.name, "%.200s (gpu:%d, sm_%d%d, %s)", prop.name, opts->device, prop.major, prop.minor,
           human(prop.totalGlobalMem, mem, sizeof mem));
  pd_status st = PD_OK;
  if ((e = cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking)) != cudaSuccess ||
      (e = cudaStreamCreateWithFlags(&g.copy, cudaStreamNonBlocking)) != cudaSuccess) {
    st = cuda_fail(err, PD_ERR_RUNTIME, e, "creating CUDA streams");
    goto fail;
  }
  cublasStatus_t bs = cublasCreate(&g.blas);
  if (bs != CUBLAS_STATUS_SUCCESS) g.blas = NULL;
  if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(g.blas, g.stream);
  if (bs == CUBLAS_STATUS_SUCCESS)
    bs = cublasSetMathMode(g.blas, opts->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
  if (bs != CUBLAS_STATUS_SUCCESS) {
    st = pd_errorf(err, PD_ERR_RUNTIME, "%s: cuBLAS: %s", what, cublasGetStatusString(bs));
    goto fail;
  }
  if ((e = cudaMalloc((void **)&g.fault, sizeof *g.fault)) != cudaSuccess ||
      (e = cudaMemset(g.fault, 0, sizeof *g.fault)) != cudaSuccess ||
      (e = cudaHostAlloc((void **)&g.fault_seen, sizeof *g.fault_seen, cudaHostAllocDefault)) != cudaSuccess) {
    st = cuda_fail(err, PD_ERR_RUNTIME, e, "allocating the device's fault record");
    goto fail;
  }
  pd_devalloc_init(&g.alloc, (pd_devalloc_backend){dev_alloc, dev_free, NULL});
  g.opts = *opts;
  g.open = true;
  /* a fixed workspace: cuBLAS then allocates nothing inside a graph capture */
  if (!(g.blas_ws = pd_devalloc_get(&g.alloc, BLAS_WORKSPACE, &g.blas_ws_cap)) ||
      cublasSetWorkspace(g.blas, g.blas_ws, g.blas_ws_cap) != CUBLAS_STATUS_SUCCESS) {
    pd_gpu_close();
    return pd_errorf(err, PD_ERR_RUNTIME, "%s: cannot set up cuBLAS's %zu-byte workspace", what, BLAS_WORKSPACE);
  }
  pd_place_register(PD_GPU, &gpu_place); /* tensors and runners on the GPU now reach this file */
  return PD_OK;
fail: /* what was made so far, in reverse; the process may try again */
  if (g.fault_seen) cudaFreeHost(g.fault_seen);
  if (g.fault) cudaFree(g.fault);
  if (g.blas) cublasDestroy(g.blas);
  if (g.copy) cudaStreamDestroy(g.copy);
  if (g.stream) cudaStreamDestroy(g.stream);
  memset(&g, 0, sizeof g);
  (void)cudaGetLastError();
  return st;
}

bool pd_gpu_is_open(void) { return g.open; }

int pd_gpu_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) (void)cudaGetLastError(), n = 0;
  return n;
}

void pd_gpu_close(void) {
  if (!g.open) return;
  cudaDeviceSynchronize();
  if (g.blas_ws) pd_devalloc_put(&g.alloc, g.blas_ws, g.blas_ws_cap);
  cublasDestroy(g.blas);
  pd_devalloc_destroy(&g.alloc);
  cudaStreamDestroy(g.stream);
  cudaStreamDestroy(g.copy);
  cudaFree(g.fault);
  cudaFreeHost(g.fault_seen);
  memset(&g, 0, sizeof g);
  pd_place_register(PD_GPU, NULL);
}

const char *pd_gpu_describe(char *buf, size_t size) {
  snprintf(buf, size, "%s", g.open ? g.name : "no GPU open");
  return buf;
}

pd_gpu_mem pd_gpu_mem_stats(void) {
  return (pd_gpu_mem){g.alloc.in_use, g.alloc.peak, g.alloc.cached, g.alloc.backend_allocs};
}

void *pd_gpu_mem_alloc(size_t bytes, size_t *cap, const char *what, pd_error *err) {
  if (!g.open) {
    pd_errorf(err, PD_ERR_RUNTIME, "allocating %s on a GPU before the GPU was opened", what);
    return NULL;
  }
  void *p = pd_devalloc_get(&g.alloc, bytes, cap);
  if (!p && g.alloc.fault) {
    char a[32], w[300];
    snprintf(w, sizeof w, "allocating %s for %s", human(bytes, a, sizeof a), what);
    device_fault(err, g.alloc_error, w);
    return NULL;
  }
  if (!p) {
    char a[32], b[32];
    pd_errorf(err, PD_ERR_RUNTIME,
              "out of GPU memory: %s for %s, with %s already in use on %s; try a smaller --batch-size",
              human(bytes, a, sizeof a), what, human(g.alloc.in_use, b, sizeof b), g.name);
    return NULL;
  }
  cudaError_t e = cudaMemsetAsync(p, 0, *cap, g.stream);
  if (e != cudaSuccess) {
    pd_devalloc_put(&g.alloc, p, *cap);
    cuda_fail(err, PD_ERR_RUNTIME, e, "clearing new GPU memory");
    return NULL;
  }
  return p;
}

void pd_gpu_mem_free(void *p, size_t cap) {
  if (g.open) pd_devalloc_put(&g.alloc, p, cap);
}

pd_status pd_gpu_sync(const char *what, pd_error *err) {
  cudaError_t e = cudaStreamSynchronize(g.copy);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g.stream);
  return e == cudaSuccess ? PD_OK : call_fail(err, e, what);
}

pd_status pd_gpu_copy(void *dst, pd_place dplace, const void *src, pd_place splace, size_t bytes, pd_error *err) {
  if (!bytes) return PD_OK;
  enum cudaMemcpyKind k = dplace.kind == PD_GPU
                              ? (splace.kind == PD_GPU ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                              : (splace.kind == PD_GPU ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, k, g.stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g.stream);
  return e == cudaSuccess
             ? PD_OK
             : call_fail(err, e, k == cudaMemcpyDeviceToHost ? "copying from the GPU" : "copying to the GPU");
}

pd_status pd_gpu_fill_f32(float *p, size_t n, float v, pd_error *err) {
  cudaError_t e = pd_gpu_launch_fill_f32(p, n, v, g.stream);
  return e == cudaSuccess ? PD_OK : cuda_fail(err, PD_ERR_RUNTIME, e, "fill");
}

pd_status pd_gpu_count_nonfinite(const void *p, size_t n, bool f64, size_t *count, pd_error *err) {
  size_t cap;
  unsigned long long *d = pd_gpu_mem_alloc(sizeof *d, &cap, "a counter", err), h = 0;
  if (!d) return PD_ERR_RUNTIME;
  cudaError_t e = pd_gpu_launch_count_nonfinite(p, n, f64, d, g.stream);
  if (e == cudaSuccess) e = cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, g.stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g.stream);
  pd_gpu_mem_free(d, cap);
  *count = (size_t)h;
  return e == cudaSuccess ? PD_OK : cuda_fail(err, PD_ERR_RUNTIME, e, "counting non-finite values");
}

/* ---- what kernels call (gpu.h) ---- */

cudaStream_t pd_gpu_stream(pd_ctx *c) {
  (void)c;
  return g.stream;
}

cublasHandle_t pd_gpu_blas(pd_ctx *c) {
  (void)c;
  return g.blas;
}

pd_status pd_gpu_check(pd_ctx *c, cudaError_t e, const char *what) {
  if (e == cudaSuccess) return PD_OK;
  return pd_ctx_fail(c, PD_ERR_RUNTIME, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

pd_status pd_gpu_blas_check(pd_ctx *c, cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS) return PD_OK;
  return pd_ctx_fail(c, PD_ERR_RUNTIME, "%s: cuBLAS %s", what, cublasGetStatusString(s));
}

const int64_t *pd_gpu_step(pd_ctx *c) {
  (void)c;
  return g.step;
}

pd_gpu_fault *pd_gpu_fault_record(pd_ctx *c) {
  (void)c;
  return g.fault;
}

void *pd_gpu_work(pd_ctx *c, int i, size_t bytes) {
  pd_tensor *w = &c->op->work[i];
  if (w->storage && w->storage->cap >= bytes && w->place.kind == PD_GPU) return w->storage->data;
  pd_tensor_release(w);
  w->place = (pd_place){PD_GPU, g.opts.device};
  w->dtype = PD_U8;
  int64_t dims[1] = {(int64_t)bytes};
  pd_status st = pd_tensor_set_dims(w, 1, dims, c->err);
  if (!st) st = pd_tensor_alloc(w, c->err);
  if (st) {
    pd_ctx_fail(c, st, "scratch: %s", c->err->msg);
    return NULL;
  }
  return w->storage->data;
}

/* ---- runners ---- */

/* The variables the host writes before every run: data, and the learning
 * rate and step count of AddOptimizerOps. */
static bool host_fed(const pd_net *net, int v) {
  return net->vars[v].kind == PD_VAR_DATA || strcmp(net->vars[v].name, "@lr") == 0 ||
         strcmp(net->vars[v].name, "@step") == 0;
}

/* Two slots, used in turn, so that the inputs of step k+1 are copied in on
 * the copy stream while step k computes: the host fills pinned[s], the copy
 * stream copies it to staging[s] (event copied[s]), the compute stream waits
 * for that, copies staging[s] into the variables' own buffers (which the
 * graph reads) and records consumed[s]. */
typedef struct stage_slot {
  void *pinned, *staging;
  size_t cap, staging_cap;
  cudaEvent_t copied, consumed;
  bool used;
} stage_slot;

struct pd_gpu_run {
  stage_slot slot[2];
  int next;
  int *fed; /* host-fed variables */
  int nfed;
  /* the graph and what it was captured for */
  cudaGraphExec_t exec;
  bool have_graph, graph_broken;
  int g_begin, g_end;
  int64_t *g_key;              /* the runner's shape key at capture */
  void **g_ptrs;               /* every variable's device buffer at capture */
  void **g_work;               /* every op's scratch at capture */
  const pd_op_def *g_last_def; /* the graph's last op, and its index */
  int g_last_index;
  long eager_runs, replays, captures;
  char note[1024]; /* why graphs were given up, or "" */
  /* the step counter in device memory, written before every run (random
   * ops read it, so a graph replays fresh masks), and its size class */
  int64_t *d_step;
  size_t d_step_cap;
  bool random;     /* the net has random ops: only then is the counter written */
  bool g_training; /* exec.training at capture: host values kernels read */
  uint64_t g_seed; /* exec.seed at capture */
};

static size_t key_len(const pd_runner *r) { return (size_t)(r->net->nvars + 1) * (PD_MAX_DIMS + 1); }

pd_status pd_gpu_runner_attach(pd_runner *r, pd_error *err) {
  pd_net *net = r->net;
  if (!g.open) return pd_errorf(err, PD_ERR_RUNTIME, "a runner was placed on a GPU that is not open");
  struct pd_gpu_run *gr = calloc(1, sizeof *gr);
  r->place_data = gr;
  r->d = calloc((size_t)net->nvars + 1, sizeof *r->d);
  if (!gr || !r->d || !(gr->fed = calloc((size_t)net->nvars + 1, sizeof *gr->fed)) ||
      !(gr->g_key = calloc(key_len(r), sizeof *gr->g_key)) ||
      !(gr->g_ptrs = calloc((size_t)net->nvars + 1, sizeof *gr->g_ptrs)) ||
      !(gr->g_work = calloc((size_t)net->nops * 2 + 1, sizeof *gr->g_work)))
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  if (!(gr->d_step = pd_gpu_mem_alloc(sizeof *gr->d_step, &gr->d_step_cap, "the step counter", err)))
    return PD_ERR_RUNTIME;
  for (int o = 0; o < net->nops; o++) gr->random = gr->random || net->ops[o].def->random;
  for (int s = 0; s < 2; s++) {
    cudaError_t e = cudaEventCreateWithFlags(&gr->slot[s].copied, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&gr->slot[s].consumed, cudaEventDisableTiming);
    if (e != cudaSuccess) return cuda_fail(err, PD_ERR_RUNTIME, e, "creating CUDA events");
    gr->slot[s].used = true;
  }
  for (int v = 0; v < net->nvars; v++) {
    pd_var *var = pd_scope_var(r->scope, net->vars[v].name);
    if (!var) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    pd_tensor *h = r->t[v], *d = &var->dev;
    r->d[v] = d;
    d->place = (pd_place){PD_GPU, g.opts.device};
    if (host_fed(net, v)) gr->fed[gr->nfed++] = v;
    d->dtype = h->dtype;
    if (net->vars[v].kind != PD_VAR_PARAM && net->vars[v].kind != PD_VAR_STATE) continue;
    /* parameters and state: uploaded once (a runner sharing the scope finds them there) */
    if (d->storage && pd_dims_equal(d->ndim, d->dims, h->ndim, h->dims)) continue;
    char what[512];
    snprintf(what, sizeof what, "\"%s\"", net->vars[v].name);
    pd_status st = pd_tensor_set_dims(d, h->ndim, h->dims, err);
    if (!st) st = pd_tensor_alloc(d, err);
    if (!st && h->storage)
      st = pd_gpu_copy(d->storage->data, d->place, h->storage->data, h->place, pd_tensor_bytes(h), err);
    if (st) {
      pd_error_prefix(err, "%s", what);
      return st;
    }
  }
  return PD_OK;
}

static void drop_graph(struct pd_gpu_run *gr) {
  if (gr->have_graph) cudaGraphExecDestroy(gr->exec);
  gr->have_graph = false;
}

void pd_gpu_runner_detach(pd_runner *r) {
  struct pd_gpu_run *gr = r->place_data;
  if (gr) {
    if (g.open) cudaStreamSynchronize(g.stream);
    drop_graph(gr);
    for (int s = 0; s < 2; s++) {
      if (gr->slot[s].used) {
        cudaEventDestroy(gr->slot[s].copied);
        cudaEventDestroy(gr->slot[s].consumed);
      }
      if (gr->slot[s].pinned) cudaFreeHost(gr->slot[s].pinned);
      pd_gpu_mem_free(gr->slot[s].staging, gr->slot[s].staging_cap);
    }
    pd_gpu_mem_free(gr->d_step, gr->d_step_cap);
    free(gr->fed), free(gr->g_key), free(gr->g_ptrs), free(gr->g_work);
    free(gr);
  }
  free(r->d);
  r->d = NULL;
  r->place_data = NULL;
}

#define ALIGN_UP(x) (((x) + 255) & ~(size_t)255)

/* Bytes of a host-fed tensor to copy: 0 before it has a shape and data. */
static size_t fed_bytes(const pd_tensor *h) {
  size_t b = pd_tensor_bytes(h);
  return h->ndim < 0 || !h->storage || b == SIZE_MAX ? 0 : b;
}

/* The host-fed variables into their device copies, through the next slot. */
pd_status pd_gpu_runner_stage(pd_runner *r, pd_error *err) {
  struct pd_gpu_run *gr = r->place_data;
  stage_slot *sl = &gr->slot[gr->next];
  gr->next ^= 1;
  size_t total = 0;
  for (int i = 0; i < gr->nfed; i++) total += ALIGN_UP(fed_bytes(r->t[gr->fed[i]]));
  cudaError_t e;
  /* the slot's previous copy must be done before the host refills it */
  if ((e = cudaEventSynchronize(sl->copied)) != cudaSuccess) return cuda_fail(err, PD_ERR_RUNTIME, e, "input copy");
  if (total > sl->cap) {
    if (sl->pinned) cudaFreeHost(sl->pinned);
    sl->pinned = NULL, sl->cap = 0;
    if ((e = cudaHostAlloc(&sl->pinned, total, cudaHostAllocDefault)) != cudaSuccess)
      return cuda_fail(err, PD_ERR_RUNTIME, e, "allocating pinned host memory for the inputs");
    sl->cap = total;
  }
  if (total > sl->staging_cap) {
    if ((e = cudaStreamSynchronize(g.stream)) != cudaSuccess)
      return cuda_fail(err, PD_ERR_RUNTIME, e, "waiting for the step");
    pd_gpu_mem_free(sl->staging, sl->staging_cap);
    sl->staging = pd_gpu_mem_alloc(total, &sl->staging_cap, "the input staging buffer", err);
    if (!sl->staging) {
      sl->staging_cap = 0;
      return PD_ERR_RUNTIME;
    }
    /* the copy stream must not write it before the compute stream cleared it */
    if ((e = cudaEventRecord(sl->consumed, g.stream)) != cudaSuccess)
      return cuda_fail(err, PD_ERR_RUNTIME, e, "input copy");
  }
  size_t off = 0;
  for (int i = 0; i < gr->nfed; i++) {
    const pd_tensor *h = r->t[gr->fed[i]];
    size_t b = fed_bytes(h);
    if (b) memcpy((char *)sl->pinned + off, h->storage->data, b);
    off += ALIGN_UP(b);
  }
  if (total && ((e = cudaStreamWaitEvent(g.copy, sl->consumed, 0)) != cudaSuccess ||
                (e = cudaMemcpyAsync(sl->staging, sl->pinned, total, cudaMemcpyHostToDevice, g.copy)) != cudaSuccess ||
                (e = cudaEventRecord(sl->copied, g.copy)) != cudaSuccess ||
                /* into the variables' own buffers, in the compute stream's order */
                (e = cudaStreamWaitEvent(g.stream, sl->copied, 0)) != cudaSuccess))
    return cuda_fail(err, PD_ERR_RUNTIME, e, "copying the inputs to the GPU");
  off = 0;
  for (int i = 0; i < gr->nfed; i++) {
    int v = gr->fed[i];
    const pd_tensor *h = r->t[v];
    pd_tensor *d = r->d[v];
    size_t b = fed_bytes(h);
    if (h->ndim < 0 || !h->storage) continue;
    d->dtype = h->dtype;
    pd_status st = pd_tensor_set_dims(d, h->ndim, h->dims, err);
    if (!st) st = pd_tensor_alloc(d, err);
    if (st) {
      pd_error_prefix(err, "\"%s\"", r->net->vars[v].name);
      return st;
    }
    if (b && (e = cudaMemcpyAsync(d->storage->data, (char *)sl->staging + off, b, cudaMemcpyDeviceToDevice,
                                  g.stream)) != cudaSuccess)
      return cuda_fail(err, PD_ERR_RUNTIME, e, "copying the inputs to the GPU");
    off += ALIGN_UP(b);
  }
  if ((e = cudaEventRecord(sl->consumed, g.stream)) != cudaSuccess)
    return cuda_fail(err, PD_ERR_RUNTIME, e, "copying the inputs to the GPU");
  return PD_OK;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Launches ops [begin, end); with op_seconds (`time`), waits for each op and
 * stores its time from launch to completion. */
static pd_status run_ops(pd_runner *r, int begin, int end, pd_error *err) {
  pd_ctx c = {.vars = r->d, .exec = &r->exec, .err = err};
  cudaError_t e;
  if (r->op_seconds && (e = cudaStreamSynchronize(g.stream)) != cudaSuccess)
    return cuda_fail(err, PD_ERR_RUNTIME, e, "waiting for the GPU");
  for (int o = begin; o < end; o++) {
    if (!r->active[o]) continue;
    c.op = &r->net->ops[o];
    g.last_def = c.op->def, g.last_index = c.op->index, g.last_in_graph = false;
    double t0 = r->op_seconds ? now() : 0;
    pd_status st = c.op->kernel->fn(&c);
    if (st) return st;
    if (r->op_seconds) {
      if ((e = cudaStreamSynchronize(g.stream)) != cudaSuccess)
        return pd_ctx_fail(&c, PD_ERR_RUNTIME, "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
      r->op_seconds[o] = now() - t0;
    }
  }
  return PD_OK;
}

/* A graph replays the launches exactly as captured: only for ops whose
 * launches do not depend on host values that change per step (random ops
 * read the step from device memory, pd_gpu_step), without per-op timing. */
static bool graph_allowed(const pd_runner *r) {
  if (g.opts.no_graph || r->op_seconds) return false;
  /* if_else reads its condition on the host (docs/architecture.md) */
  if (r->net->nblocks) return false;
  return r->net->ranks <= 1 && !r->net->nccl; /* the allreduce op's row counts change per step on the host */
}

/* Compares the runner's shapes (key) and every device buffer with those
 * remembered, and remembers the current ones when `store`. */
static void snapshot(pd_runner *r, bool store, bool *key_eq, bool *ptr_eq) {
  struct pd_gpu_run *gr = r->place_data;
  bool keq = memcmp(gr->g_key, r->shape_key, key_len(r) * sizeof *gr->g_key) == 0 &&
             gr->g_training == r->exec.training && gr->g_seed == r->exec.seed,
       peq = true;
  if (store) {
    memcpy(gr->g_key, r->shape_key, key_len(r) * sizeof *gr->g_key);
    gr->g_training = r->exec.training, gr->g_seed = r->exec.seed;
  }
  for (int v = 0; v < r->net->nvars; v++) {
    void *p = pd_tensor_data(r->d[v]);
    peq = peq && gr->g_ptrs[v] == p;
    if (store) gr->g_ptrs[v] = p;
  }
  for (int o = 0; o < r->net->nops; o++)
    for (int i = 0; i < 2; i++) {
      void *p = pd_tensor_data(&r->net->ops[o].work[i]);
      peq = peq && gr->g_work[o * 2 + i] == p;
      if (store) gr->g_work[o * 2 + i] = p;
    }
  if (key_eq) *key_eq = keq;
  if (ptr_eq) *ptr_eq = peq;
}

/* A capture that failed, at any point: the stream leaves capture mode (the
 * partial graph is dropped), the error is cleared, the reason is kept for
 * the run's summary (pd_gpu_runner_graph_note) and this runner runs eagerly
 * from now on, starting with this step. */
static pd_status capture_failed(pd_runner *r, int begin, int end, const char *why, pd_error *err) {
  struct pd_gpu_run *gr = r->place_data;
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(g.stream, &cs) == cudaSuccess && cs != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = NULL;
    (void)cudaStreamEndCapture(g.stream, &partial);
    if (partial) cudaGraphDestroy(partial);
  }
  (void)cudaGetLastError();
  snprintf(gr->note, sizeof gr->note, "capturing a CUDA graph failed, so this run ran eagerly: %s", why);
  gr->graph_broken = true;
  pd_error_clear(err);
  return run_ops(r, begin, end, err);
}

static pd_status capture(pd_runner *r, int begin, int end, pd_error *err) {
  struct pd_gpu_run *gr = r->place_data;
  drop_graph(gr);
  cudaError_t e = cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeRelaxed);
  char why[PD_ERROR_MAX];
  if (e != cudaSuccess) {
    snprintf(why, sizeof why, "cudaStreamBeginCapture: %s", cudaGetErrorName(e));
    return capture_failed(r, begin, end, why, err);
  }
  /* an op that fails here may only be refusing the capture: the eager run
   * that follows tells (a real failure fails there again) */
  pd_status st = run_ops(r, begin, end, err);
  if (st) {
    snprintf(why, sizeof why, "%s", err->msg);
    return capture_failed(r, begin, end, why, err);
  }
  cudaGraph_t graph = NULL;
  if ((e = cudaStreamEndCapture(g.stream, &graph)) != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    snprintf(why, sizeof why, "cudaStreamEndCapture: %s", cudaGetErrorName(e));
    return capture_failed(r, begin, end, why, err);
  }
  e = cudaGraphInstantiate(&gr->exec, graph, 0);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess) {
    snprintf(why, sizeof why, "cudaGraphInstantiate: %s", cudaGetErrorName(e));
    return capture_failed(r, begin, end, why, err);
  }
  gr->have_graph = true;
  gr->g_begin = begin, gr->g_end = end;
  gr->g_last_def = g.last_def, gr->g_last_index = g.last_index, g.last_in_graph = true;
  snapshot(r, true, NULL, NULL);
  gr->captures++;
  e = cudaGraphLaunch(gr->exec, g.stream);
  return e == cudaSuccess ? PD_OK : cuda_fail(err, PD_ERR_RUNTIME, e, "launching the step's CUDA graph");
}

pd_status pd_gpu_runner_run(pd_runner *r, int begin, int end, pd_error *err) {
  struct pd_gpu_run *gr = r->place_data;
  /* this step's counter, ahead of the ops (eager or a graph) on the stream */
  cudaError_t se;
  if (gr->random && (se = pd_gpu_launch_set_i64(gr->d_step, r->exec.step, g.stream)) != cudaSuccess)
    return call_fail(err, se, "setting the step counter");
  g.step = gr->d_step;
  if (!graph_allowed(r) || gr->graph_broken) return run_ops(r, begin, end, err);
  bool key_eq = false, ptr_eq = false;
  snapshot(r, false, &key_eq, &ptr_eq);
  if (gr->have_graph && gr->g_begin == begin && gr->g_end == end) {
    if (key_eq && ptr_eq) {
      gr->replays++;
      g.last_def = gr->g_last_def, g.last_index = gr->g_last_index, g.last_in_graph = true;
      cudaError_t e = cudaGraphLaunch(gr->exec, g.stream);
      return e == cudaSuccess ? PD_OK : cuda_fail(err, PD_ERR_RUNTIME, e, "replaying the step's CUDA graph");
    }
    /* other shapes (the short last batch): eagerly, keeping the graph for
     * when the full batches come back; moved buffers: capture again */
    if (key_eq) drop_graph(gr);
    if (gr->have_graph) return run_ops(r, begin, end, err);
  } else if (gr->have_graph) {
    drop_graph(gr); /* another range of ops */
    key_eq = ptr_eq = false;
  }
  /* capture once a step has run eagerly at these shapes and buffers (its
   * allocations made, cuBLAS set up) */
  if (gr->eager_runs > 0 && key_eq && ptr_eq) return capture(r, begin, end, err);
  gr->eager_runs++;
  pd_status st = run_ops(r, begin, end, err);
  /* the buffers as this run leaves them: an op's first run allocates its
   * work buffers, so a snapshot taken before it would differ from the next
   * step's and put the capture off by a step (seen on an H100: gpu_parity's
   * four steps captured at step 3 and never replayed) */
  if (!st) snapshot(r, true, NULL, NULL);
  return st;
}

/* The fault a kernel raised (gpu.h), as the failure of its op with the
 * CPU kernel's message; the record is cleared for the next one. */
static pd_status report_fault(pd_runner *r, pd_error *err) {
  pd_gpu_fault f = *g.fault_seen;
  memset(g.fault_seen, 0, sizeof *g.fault_seen);
  cudaError_t e = cudaMemsetAsync(g.fault, 0, sizeof *g.fault, g.stream);
  if (e != cudaSuccess) return cuda_fail(err, PD_ERR_RUNTIME, e, "clearing the GPU's fault record");
  const pd_op *op = NULL;
  for (int o = 0; o < r->net->nops && !op; o++)
    if ((unsigned long long)(uintptr_t)&r->net->ops[o] == f.op) op = &r->net->ops[o];
  if (!op)
    return pd_errorf(err, PD_ERR_INPUT, "an op on the GPU (of another net) rejected its input (GPU fault %d)", f.code);
  pd_ctx c = {.op = (pd_op *)op, .vars = r->d, .exec = &r->exec, .err = err};
  return pd_gpu_fault_fail(&c, &f);
}

pd_status pd_gpu_runner_fetch(pd_runner *r, int v, pd_error *err) {
  pd_tensor *h = r->t[v], *d = r->d[v];
  if (!d->storage || d->ndim < 0) return PD_OK;
  h->dtype = d->dtype;
  size_t bytes = pd_tensor_bytes(d);
  pd_status st = pd_tensor_set_dims(h, d->ndim, d->dims, err);
  if (!st) st = pd_tensor_alloc(h, err);
  /* the fault record comes back in the same wait as the variable */
  cudaError_t e;
  if (!st && bytes &&
      (e = cudaMemcpyAsync(g.fault_seen, g.fault, sizeof *g.fault, cudaMemcpyDeviceToHost, g.stream)) != cudaSuccess)
    st = call_fail(err, e, "reading the GPU's fault record");
  if (!st) st = pd_gpu_copy(h->storage->data, h->place, d->storage->data, d->place, bytes, err);
  if (st) {
    pd_error_prefix(err, "fetching \"%s\" from the GPU", r->net->vars[v].name);
    return st;
  }
  return bytes && g.fault_seen->raised ? report_fault(r, err) : PD_OK;
}

void pd_gpu_runner_graph_stats(const pd_runner *r, long *replays, long *captures) {
  const struct pd_gpu_run *gr = r->place_data;
  *replays = gr ? gr->replays : 0;
  *captures = gr ? gr->captures : 0;
}

const char *pd_gpu_runner_graph_note(const pd_runner *r) {
  const struct pd_gpu_run *gr = r->place_data;
  return gr && gr->note[0] ? gr->note : NULL;
}

/* ---- the GPU place: what core/ calls (place.h) ---- */

static pd_status place_attach(pd_runner *r, pd_error *err) {
  pd_status st = pd_gpu_runner_attach(r, err);
  if (!st) r->vars = r->d; /* the kernels see the device copies */
  return st;
}

/* one tensor per variable: no memory plan (the caching allocator reuses
 * memory here), no BLIS, no op binding its inputs in host memory */
static pd_status place_prepare(pd_runner *r, pd_error *err) { return pd_runner_alloc_outputs(r, err); }

static const pd_place_runner gpu_runner = {place_attach,  pd_gpu_runner_detach, pd_gpu_runner_stage,
                                           place_prepare, pd_gpu_runner_run,    pd_gpu_runner_fetch};
static const pd_place_ops gpu_place = {"GPU", pd_gpu_mem_alloc, pd_gpu_mem_free, pd_gpu_copy, &gpu_runner};

#else /* no CUDA: the runtime's entry points say so */

bool pd_gpu_built(void) { return false; }
const char *pd_gpu_cuda_version(void) { return NULL; }

pd_status pd_gpu_open(const pd_gpu_opts *opts, pd_error *err) {
  return pd_errorf(err, PD_ERR_INPUT,
                   "--device gpu:%d: this paddle-run was built without CUDA (no nvcc when it was built, or make "
                   "CUDA=0); use --device cpu",
                   opts->device);
}
bool pd_gpu_is_open(void) { return false; }
int pd_gpu_count(void) { return 0; }
void pd_gpu_close(void) {}
const char *pd_gpu_describe(char *buf, size_t size) {
  snprintf(buf, size, "no GPU support in this build");
  return buf;
}
pd_gpu_mem pd_gpu_mem_stats(void) { return (pd_gpu_mem){0}; }
void *pd_gpu_mem_alloc(size_t bytes, size_t *cap, const char *what, pd_error *err) {
  char b[32];
  (void)cap;
  pd_errorf(err, PD_ERR_RUNTIME, "cannot allocate %s for %s on a GPU: built without CUDA", human(bytes, b, sizeof b),
            what);
  return NULL;
}
void pd_gpu_mem_free(void *p, size_t cap) { (void)p, (void)cap; }
pd_status pd_gpu_copy(void *dst, pd_place dplace, const void *src, pd_place splace, size_t bytes, pd_error *err) {
  (void)dst, (void)dplace, (void)src, (void)splace, (void)bytes;
  return pd_errorf(err, PD_ERR_RUNTIME, "built without CUDA");
}
pd_status pd_gpu_sync(const char *what, pd_error *err) {
  (void)what, (void)err;
  return PD_OK;
}
pd_status pd_gpu_load_cublas(const char *what, pd_error *err) {
  return pd_errorf(err, PD_ERR_INPUT, "%s: built without CUDA", what);
}
pd_status pd_gpu_runner_attach(pd_runner *r, pd_error *err) {
  (void)r;
  return pd_errorf(err, PD_ERR_INPUT, "built without CUDA");
}
void pd_gpu_runner_detach(pd_runner *r) { (void)r; }
pd_status pd_gpu_runner_stage(pd_runner *r, pd_error *err) {
  (void)r;
  return pd_errorf(err, PD_ERR_RUNTIME, "built without CUDA");
}
pd_status pd_gpu_runner_run(pd_runner *r, int begin, int end, pd_error *err) {
  (void)r, (void)begin, (void)end;
  return pd_errorf(err, PD_ERR_RUNTIME, "built without CUDA");
}
pd_status pd_gpu_runner_fetch(pd_runner *r, int v, pd_error *err) {
  (void)r, (void)v;
  return pd_errorf(err, PD_ERR_RUNTIME, "built without CUDA");
}
void pd_gpu_runner_graph_stats(const pd_runner *r, long *replays, long *captures) {
  (void)r;
  *replays = *captures = 0;
}
const char *pd_gpu_runner_graph_note(const pd_runner *r) {
  (void)r;
  return NULL;
}
pd_status pd_gpu_fill_f32(float *p, size_t n, float v, pd_error *err) {
  (void)p, (void)n, (void)v;
  return pd_errorf(err, PD_ERR_RUNTIME, "built without CUDA");
}
pd_status pd_gpu_count_nonfinite(const void *p, size_t n, bool f64, size_t *count, pd_error *err) {
  (void)p, (void)n, (void)f64, (void)count;
  return pd_errorf(err, PD_ERR_RUNTIME, "built without CUDA");
}

#endif
