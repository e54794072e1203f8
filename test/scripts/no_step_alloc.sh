# no_step_alloc.sh — a steady training step allocates nothing: the heap
# allocations (malloc, calloc, realloc, aligned_alloc, posix_memalign) of a
# run of 2 steps and of a run of 42 steps, counted by an LD_PRELOAD shim, are
# the same, for an MLP, a small CNN and a recurrent net (two stacked
# recurrent ops: the step scopes are laid out once per shape), on 1 and 2
# threads. BLIS's own allocations inside each matrix product (its control
# tree, 2 per call in BLIS 0.9) are counted apart and reported, not failed.
command -v cc >/dev/null || { echo "skipped: no C compiler"; exit 77; }
if ldd "$PR" | grep -q libasan; then echo "skipped: sanitizer build (ASan owns malloc; the counting shim needs the plain build)"; exit 77; fi
cat > shim.c <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef int (*memalign_fn)(void **, size_t, size_t);
static malloc_fn real_malloc;
static calloc_fn real_calloc;
static realloc_fn real_realloc;
static calloc_fn real_aligned_alloc;
static memalign_fn real_posix_memalign;
static unsigned long ours, blis;
static int busy; /* dladdr and dlsym may allocate */
static char early[8192];
static size_t used;
static void count(void *ret) {
  if (busy) return;
  busy = 1;
  Dl_info info;
  if (dladdr(ret, &info) && info.dli_fname && strstr(info.dli_fname, "libblis")) blis++;
  else ours++;
  busy = 0;
}
static void init(void) {
  if (real_malloc || busy) return;
  busy = 1;
  real_malloc = (malloc_fn)dlsym(RTLD_NEXT, "malloc");
  real_calloc = (calloc_fn)dlsym(RTLD_NEXT, "calloc");
  real_realloc = (realloc_fn)dlsym(RTLD_NEXT, "realloc");
  real_aligned_alloc = (calloc_fn)dlsym(RTLD_NEXT, "aligned_alloc");
  real_posix_memalign = (memalign_fn)dlsym(RTLD_NEXT, "posix_memalign");
  busy = 0;
}
static void *from_early(size_t n) {
  void *p = early + used;
  used += (n + 15) & ~(size_t)15;
  return p;
}
void *malloc(size_t n) { init(); if (!real_malloc) return from_early(n); count(__builtin_return_address(0)); return real_malloc(n); }
void *calloc(size_t a, size_t b) { init(); if (!real_calloc) return from_early(a * b); count(__builtin_return_address(0)); return real_calloc(a, b); }
void *realloc(void *p, size_t n) { init(); count(__builtin_return_address(0)); return real_realloc(p, n); }
void *aligned_alloc(size_t a, size_t n) { init(); count(__builtin_return_address(0)); return real_aligned_alloc(a, n); }
int posix_memalign(void **p, size_t a, size_t n) { init(); count(__builtin_return_address(0)); return real_posix_memalign(p, a, n); }
void free(void *p) {
  static void (*real_free)(void *);
  if ((char *)p >= early && (char *)p < early + sizeof early) return;
  if (!real_free) real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
  real_free(p);
}
__attribute__((destructor)) static void report(void) {
  char buf[96];
  int len = snprintf(buf, sizeof buf, "allocations: ours %lu blis %lu\n", ours, blis);
  if (write(2, buf, (size_t)len) < 0) return;
}
C
cc -shared -fPIC -O2 -o shim.so shim.c -ldl || exit 1
/usr/bin/python3 -c "
import numpy as np; r = np.random.default_rng(1)
np.save('x.npy', r.normal(size=(4096, 32)).astype(np.float32)); np.save('y.npy', r.integers(0, 5, 4096))"
cat > net.pbtxt <<'N'
var { name: "x" shape: [-1, 32] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 64 } } attrs { key: "act" value { s: "relu" } } }
op { type: "fc" inputs: ["h", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 5 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg" }
op { type: "accuracy" inputs: ["sm", "y"] outputs: "acc" }
train { loss: "avg" metrics: "acc" batch_size: 64 log_every: 1000 optimizer { type: "adam" lr: 0.001 clip_norm: 5 }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" } }
N
# and a small CNN: conv2d, batch_norm, relu, pool2d, flatten, concat, dropout
/usr/bin/python3 -c "
import numpy as np; r = np.random.default_rng(1)
np.save('img.npy', r.normal(size=(2048, 2, 12, 12)).astype(np.float32))"
cat > cnn.pbtxt <<'N'
var { name: "x" shape: [-1, 2, 12, 12] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "conv2d" inputs: ["x", "cw", "cb"] outputs: "c" attrs { key: "num_filters" value { i: 8 } } attrs { key: "kernel_size" value { ints: [3, 3] } } attrs { key: "paddings" value { ints: [1, 1] } } }
op { type: "batch_norm" inputs: ["c", "bs", "bb", "bm", "bv"] outputs: ["n", "bm", "bv"] }
op { type: "relu" inputs: "n" outputs: "r" }
op { type: "pool2d" inputs: "r" outputs: "p" attrs { key: "ksize" value { ints: [2, 2] } } attrs { key: "strides" value { ints: [2, 2] } } }
op { type: "flatten" inputs: "p" outputs: "f" }
op { type: "concat" inputs: ["f", "f"] outputs: "cat" attrs { key: "axis" value { i: 1 } } }
op { type: "fc" inputs: ["cat", "w1", "b1"] outputs: "h" attrs { key: "size" value { i: 32 } } attrs { key: "act" value { s: "relu" } } }
op { type: "dropout" inputs: "h" outputs: ["d", "dm"] attrs { key: "dropout_prob" value { f: 0.3 } } }
op { type: "fc" inputs: ["d", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 5 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg" }
train { loss: "avg" batch_size: 64 log_every: 1000 optimizer { type: "momentum" lr: 0.01 }
        data { var: "x" file: "img.npy" } data { var: "y" file: "y.npy" } }
N
# and a recurrent net: a hand-written tanh cell over 6 steps, per-row
# lengths, a second recurrent op reversed over the first's outputs
/usr/bin/python3 -c "
import numpy as np; r = np.random.default_rng(1)
np.save('seq.npy', r.normal(size=(4096, 6, 8)).astype(np.float32)); np.save('lens.npy', r.integers(0, 7, 4096))"
cat > rnn.pbtxt <<'N'
var { name: "s" shape: [-1, 6, 8] }
var { name: "len" shape: [-1] dtype: INT64 }
var { name: "y" shape: [-1, 1] dtype: INT64 }
block { name: "cell" var { name: "h_prev" shape: [-1, 16] }
  op { type: "concat" inputs: ["x_t", "h_prev"] outputs: "xh" attrs { key: "axis" value { i: 1 } } }
  op { type: "fc" inputs: ["xh", "cw", "cb"] outputs: "a" attrs { key: "size" value { i: 16 } } }
  op { type: "tanh" inputs: "a" outputs: "h" } }
block { name: "back" var { name: "g_prev" shape: [-1, 16] }
  op { type: "fc" inputs: ["u_t", "bw"] outputs: "p" attrs { key: "size" value { i: 16 } } }
  op { type: "fc" inputs: ["g_prev", "bu", "bb"] outputs: "q" attrs { key: "size" value { i: 16 } } }
  op { type: "elementwise_add" inputs: ["p", "q"] outputs: "pq" }
  op { type: "sigmoid" inputs: "pq" outputs: "g" } }
op { type: "recurrent" inputs: ["s", "", "len"] outputs: ["hs", "hT"] attrs { key: "step_block" value { block: "cell" } }
     attrs { key: "inputs" value { strings: "x_t" } } attrs { key: "prev_states" value { strings: "h_prev" } }
     attrs { key: "states" value { strings: "h" } } attrs { key: "outputs" value { strings: "h" } } }
op { type: "recurrent" inputs: ["hs", "", "len"] outputs: ["gs", "gT"] attrs { key: "step_block" value { block: "back" } }
     attrs { key: "inputs" value { strings: "u_t" } } attrs { key: "prev_states" value { strings: "g_prev" } }
     attrs { key: "states" value { strings: "g" } } attrs { key: "outputs" value { strings: "g" } }
     attrs { key: "reverse" value { b: true } } }
op { type: "concat" inputs: ["hT", "gT"] outputs: "f" attrs { key: "axis" value { i: 1 } } }
op { type: "fc" inputs: ["f", "w2", "b2"] outputs: "logits" attrs { key: "size" value { i: 5 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg" }
train { loss: "avg" batch_size: 64 log_every: 1000 optimizer { type: "adam" lr: 0.001 }
  data { var: "s" file: "seq.npy" } data { var: "len" file: "lens.npy" } data { var: "y" file: "y.npy" } }
N
fail=0
for net in net.pbtxt cnn.pbtxt rnn.pbtxt; do
  for threads in 1 2; do
    a=$(LD_PRELOAD=./shim.so "$PR" train $net --iterations 2 --threads $threads 2>&1 | sed -n 's/^allocations: //p')
    b=$(LD_PRELOAD=./shim.so "$PR" train $net --iterations 42 --threads $threads 2>&1 | sed -n 's/^allocations: //p')
    echo "$net, threads $threads: 2 steps: $a; 42 steps: $b"
    ours_a=$(echo "$a" | awk '{print $2}'); ours_b=$(echo "$b" | awk '{print $2}')
    [ -n "$ours_a" ] && [ "$ours_a" = "$ours_b" ] || { echo "FAIL: 40 more steps made $((ours_b - ours_a)) more allocations"; fail=1; }
  done
done
exit $fail
