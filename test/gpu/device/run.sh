#!/bin/sh
# run.sh — runs on the GPU machine, from the repository's root, after
# pack.sh's payload has been carried there (.dev/payload.tar.xz): unpacks
# it, puts the data and Open MPI where the nets and mpirun look, then runs
# the stages named (default: info unit suite), each under a time limit,
# with PADDLE_RUN_GPU_REQUIRED=1 so that nothing passes by skipping. Logs go
# to $OUT/STAGE.log (OUT defaults to ./device-out); the last lines of each
# stage are printed.
#   info      nvidia-smi, the driver, --version, the probe gpu_env makes
#   unit      the GPU unit tests (cmocka)
#   suite     test/gpu/*.sh, as test/run.sh runs them
#   sanitize  compute-sanitizer memcheck, racecheck, synccheck (and initcheck)
#             over the GPU unit tests, gpu_parity and short trainings
#   bench     bench/bench.py --only gpu --merge (bench/RESULTS.md copied to $OUT)
#   repro     the same CPU training (checkpoint_cross.sh's) ten times: its
#             loss must not change between processes (seen once on an H100
#             machine: 0.645704 against 0.645283; cause not found yet)
#   cmd       $DEVICE_CMD, in this environment ($PR, $BUILD, the libraries)
# Usage: sh test/gpu/device/run.sh [STAGE...]
set -u
cd "$(dirname "$0")/../../.." || exit 2
ROOT=$(pwd)
OUT=${OUT:-$ROOT/device-out}
mkdir -p "$OUT"
D=/tmp/prdev
if [ ! -d "$D/dev" ]; then
  mkdir -p "$D"
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .dev/payload.tar.xz "$D" || exit 1
  mkdir -p /usr/share/datasets/fashion-mnist
  python3 - "$D/dev/data" /usr/share/datasets/fashion-mnist <<'PY' || exit 1
import gzip, os, shutil, sys
for f in os.listdir(sys.argv[1]):
    with open(os.path.join(sys.argv[1], f), "rb") as i, gzip.open(os.path.join(sys.argv[2], f + ".gz"), "wb", 1) as o:
        shutil.copyfileobj(i, o)
PY
  mkdir -p /usr/share/games/fortunes
  cp "$D"/dev/fortunes/*.u8 /usr/share/games/fortunes/
  # Debian's Open MPI relocated (OPAL_PREFIX below) to a tree of its own
  # layout: the machine may have another Open MPI at Debian's prefix, whose
  # plugins do not go with these libraries
  mkdir -p "$D/root/lib/x86_64-linux-gnu/openmpi" "$D/root/share"
  ln -s "$D/dev/mpi/lib/lib" "$D/root/lib/x86_64-linux-gnu/openmpi/lib"
  ln -s "$D/dev/mpi/share" "$D/root/share/openmpi"
  ln -sf orterun "$D/dev/mpi/bin/mpirun"
  ln -sf orterun "$D/dev/mpi/bin/mpiexec"
fi
BUILD="$D/dev/build"
# NCCL from PyTorch's wheel where the system has none (the product finds it by
# its soname: README, "Running on a GPU server")
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
export LD_LIBRARY_PATH="$D/dev/lib${nccl:+:$nccl}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$D/dev/mpi/bin:$PATH:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false
export OPAL_PREFIX="$D/root" OMPI_MCA_mca_base_component_path="$D/dev/mpi/lib/lib/openmpi3"
export PMIX_MCA_mca_base_component_path="$D/dev/mpi/pmix"
export PR="$BUILD/paddle-run" BUILD ROOT PYTHON="${PYTHON:-python3}" PADDLE_RUN_GPU_REQUIRED=1
export PADDLE_RUN_CACHE=/tmp/prcache
T=${STAGE_TIMEOUT:-240}

stage_info() {
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  uname -r; date -u
  "$PR" --version
  "$PR" check "$ROOT/netdescs/fit_a_line.pbtxt" --device gpu; echo "check --device gpu: exit $?"
  compute-sanitizer --version | tail -n 2
  mpirun --version | head -n 1
  mpirun -np 1 "$PR" --version; echo "mpirun -np 1 paddle-run --version: exit $?"
  echo "nccl: $nccl"
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
}

stage_unit() {
  for t in "$BUILD"/test/test_*; do
    echo "== $(basename "$t")"
    timeout "$T" "$t"; echo "exit $?"
  done
}

stage_suite() {
  for s in "$ROOT"/test/gpu/*.sh; do
    n=$(basename "$s" .sh)
    [ -n "${SUITE_ONLY:-}" ] && case " $SUITE_ONLY " in *" $n "*) ;; *) continue ;; esac
    w=$(mktemp -d)
    echo "== $n"
    t0=$(date +%s)
    (cd "$w" && timeout "$T" sh "$s") >"$OUT/suite-$n.txt" 2>&1
    rc=$?
    echo "$n: exit $rc ($(( $(date +%s) - t0 )) s)"
    [ $rc -eq 0 ] || tail -n 25 "$OUT/suite-$n.txt"
    cat "$OUT/suite-$n.txt" >>"$OUT/suite-full.txt"; rm -f "$OUT/suite-$n.txt"
  done
}

cs() {  # cs TOOL CMD...: one compute-sanitizer run, its verdict
  tool=$1; shift
  echo "-- $tool: $*"
  # --target-processes all: the unit tests run each case in a child process
  timeout "$T" compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 99 --print-limit 20 "$@" \
    >"$OUT/cs.txt" 2>&1
  rc=$?
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|========= (Invalid|Race|Barrier|Uninit|Program hit)" "$OUT/cs.txt" | sort | uniq -c | head -n 20
  echo "   exit $rc"
  [ $rc -eq 0 ] || sed -n 1,60p "$OUT/cs.txt"
  rm -f "$OUT/cs.txt"
}

stage_sanitize() {
  # every shipped net the GPU can run, and the cover nets
  nets=""
  for n in "$ROOT"/netdescs/*.pbtxt; do
    "$PR" check "$n" --device gpu >/dev/null 2>&1 && nets="$nets $n"
  done
  nets="$nets $(echo "$ROOT"/test/gpu/nets/*.pbtxt)"
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck initcheck}; do
    # test_gpu_fault and test_devalloc call no CUDA (a host-built fault
    # record, a fake device): compute-sanitizer refuses them
    for t in ${SAN_UNITS:-"$BUILD"/test/test_gpu_runtime}; do
      cs "$tool" "$t"
    done
    [ "${SAN_UNITS_ONLY:-0}" = 1 ] && continue
    # shellcheck disable=SC2086
    cs "$tool" "$BUILD/test/gpu_parity" --batch 8 --steps 3 --no-coverage $nets
    cs "$tool" "$PR" train "$ROOT/netdescs/fashion_mlp.pbtxt" --device gpu --iterations 6 --batch-size 64 --log-every 2
    # racecheck takes minutes per step of the convolutions: the fewest steps that capture and replay a graph
    cs "$tool" "$PR" train "$ROOT/netdescs/fashion_cnn.pbtxt" --device gpu --iterations 3 --batch-size 8 --log-every 1
    for n in fashion_lstm_fused fashion_lstm char_lm; do
      case "$nets" in *"/$n.pbtxt"*) cs "$tool" "$PR" train "$ROOT/netdescs/$n.pbtxt" --device gpu --iterations 3 \
        --batch-size 8 --log-every 1 ;; esac
    done
  done
}

stage_repro() {
  w=$(mktemp -d)
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    "$PR" train "$ROOT/netdescs/fashion_mlp.pbtxt" --seed 5 --no-shuffle --log-every 60 --iterations 120 --device cpu \
      --log "$w/r.jsonl" 2>/dev/null
    python3 -c 'import json, sys
s = [json.loads(l) for l in open(sys.argv[1])]
print([x["avg_loss"] for x in s if x["type"] == "step"][-1])' "$w/r.jsonl"
  done | sort | uniq -c
  for _ in 1 2 3 4 5 6 7 8; do "$PR" --version | grep blas; done | sort | uniq -c
}

stage_cmd() {
  eval "$DEVICE_CMD"
}

stage_bench() {
  python3 bench/bench.py --build "$BUILD" --torch yes --only gpu --merge
  cp bench/RESULTS.md "$OUT/RESULTS.md"
}

[ $# -eq 0 ] && set -- info unit suite
for st in "$@"; do
  echo "######## $st"
  t0=$(date +%s)
  "stage_$st" >"$OUT/$st.log" 2>&1
  echo "(stage $st: $(( $(date +%s) - t0 )) s)" >>"$OUT/$st.log"
  tail -n "${TAIL:-40}" "$OUT/$st.log"
done
