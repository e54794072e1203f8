/* gpurt.h — the GPU place as the runtime sees it (gpu.h is what a kernel
 * sees): opening a device with clear errors, device memory through the
 * caching allocator (devalloc.h), copies between places, and what a runner
 * does on a GPU (inputs staged through pinned buffers on a copy stream,
 * the step captured in a CUDA graph and replayed, fetches back to the host).
 * pd_gpu_open registers the GPU's table of these with the core (place.h),
 * which tensors and runners on a GPU call through; pd_gpu_close withdraws
 * it. Declared in every build; without CUDA, opening fails with "built
 * without CUDA" and nothing else can be reached. */
#ifndef PD_GPURT_H
#define PD_GPURT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "core/tensor.h"

/* Whether this build has CUDA, and its toolkit's version ("13.0"), or NULL. */
bool pd_gpu_built(void);
const char *pd_gpu_cuda_version(void);

/* Parses "cpu", "gpu" or "gpu:N" (a --device value) into *place; false when
 * it is none of those. */
bool pd_place_parse(const char *s, pd_place *place);

typedef struct pd_gpu_opts {
  int device;
  bool tf32;     /* cuBLAS may use TF32 tensor cores for float32 products */
  bool no_graph; /* never capture CUDA graphs */
} pd_gpu_opts;

/* Opens the device for this process (once; a second call with the same
 * device is a no-op): no build support, no driver, a driver older than the
 * runtime, no device, or a device number out of range are PD_ERR_INPUT
 * errors that say which ("--device gpu:1: ..."). */
pd_status pd_gpu_open(const pd_gpu_opts *opts, pd_error *err);
bool pd_gpu_is_open(void);
/* Number of CUDA devices this process can use (0: none, or no driver). */
int pd_gpu_count(void);
/* Loads cuBLAS (pd_gpu_open does; it is not linked, see mk/cublas_tramp.sh):
 * until then every cuBLAS function returns CUBLAS_STATUS_NOT_INITIALIZED.
 * Needs no GPU. `what` prefixes the message when it cannot be loaded. */
pd_status pd_gpu_load_cublas(const char *what, pd_error *err);
/* Waits for the device, frees every cached block, destroys streams. */
void pd_gpu_close(void);
/* "NVIDIA H100 80GB HBM3 (gpu:0, sm_90, 79.1 GiB)" into buf. */
const char *pd_gpu_describe(char *buf, size_t size);

typedef struct pd_gpu_mem {
  size_t in_use, peak, cached;
  size_t device_allocs; /* cudaMalloc calls */
} pd_gpu_mem;
pd_gpu_mem pd_gpu_mem_stats(void);

/* Device memory of at least `bytes` (real size in *cap), zero-filled on the
 * run's stream; on out of memory an error with the size, the shape in
 * `what`, the bytes in use and a hint to use a smaller batch. */
void *pd_gpu_mem_alloc(size_t bytes, size_t *cap, const char *what, pd_error *err);
void pd_gpu_mem_free(void *p, size_t cap);

/* Copies bytes between places (either side may be the host); waits. */
pd_status pd_gpu_copy(void *dst, pd_place dplace, const void *src, pd_place splace, size_t bytes, pd_error *err);
/* Waits for everything queued on the run's streams; a fault of an earlier
 * kernel surfaces here, with `what` in the message. */
pd_status pd_gpu_sync(const char *what, pd_error *err);

/* ---- runners on a GPU: the GPU place's runner hooks (core/place.h),
 * which the core's runner calls once pd_gpu_open has registered them ---- */
struct pd_runner;
/* Gives the runner device copies of its variables (kept in the scope's
 * variables, so runners on one scope share parameters) and uploads the
 * persistable ones that have none yet. */
pd_status pd_gpu_runner_attach(struct pd_runner *r, pd_error *err);
void pd_gpu_runner_detach(struct pd_runner *r);
/* Copies the host-fed variables (data, @lr, @step) in through pinned
 * buffers on the copy stream, one of two slots in turn, and sets their
 * device copies' shapes; the compute stream waits for the copy by an event. */
pd_status pd_gpu_runner_stage(struct pd_runner *r, pd_error *err);
/* Runs ops [begin, end) (after stage and pd_runner_prepare): eagerly, or by
 * capturing them in a CUDA graph after the first step and replaying it
 * while the shapes and buffers stay the same. Does not wait. */
pd_status pd_gpu_runner_run(struct pd_runner *r, int begin, int end, pd_error *err);
/* Copies variable v back into its host tensor; waits. */
pd_status pd_gpu_runner_fetch(struct pd_runner *r, int v, pd_error *err);
/* Times the runner replayed a graph, and captured one. */
void pd_gpu_runner_graph_stats(const struct pd_runner *r, long *replays, long *captures);
/* Why the runner gave up CUDA graphs and ran eagerly (a capture failed), or
 * NULL; the command reports it (lib/ prints nothing). */
const char *pd_gpu_runner_graph_note(const struct pd_runner *r);

/* Fills a float32 device array with a value (the parity harness poisons
 * outputs with NaN before each run). */
pd_status pd_gpu_fill_f32(float *p, size_t n, float v, pd_error *err);
/* Number of non-finite values in a float32 / float64 device array. */
pd_status pd_gpu_count_nonfinite(const void *p, size_t n, bool f64, size_t *count, pd_error *err);

#endif
