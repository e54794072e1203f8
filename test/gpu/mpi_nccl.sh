# Data-parallel training on GPUs (NCCL): `mpirun -np 1 ... --device gpu`
# runs the allreduce op's NCCL kernel on one rank (a one-rank communicator;
# no CUDA graph then) and logs the loss curve of a plain GPU run within 1e-4
# relative at every logged step; with two GPUs, `mpirun -np 2` (one GPU per
# rank: gpu:0 and gpu:1 by local rank) at the same global batch does too.
# Skips without a GPU, without MPI, or in a build without NCCL (each a
# failure under PADDLE_RUN_GPU_REQUIRED=1). NCCL is told by `--version`:
# it is loaded with dlopen, so ldd does not show it.
. "$ROOT/test/gpu/gpu_env"
. "$ROOT/test/mpi/env.sh"
why=$(mpi_available) || gpu_skip "${why#skipped: }"
"$PR" --version | grep -q 'and NCCL loaded' || gpu_skip "$PR was built without NCCL"
set -e
run() { "$PR" train "$ROOT/netdescs/fashion_mlp.pbtxt" --iterations 100 --batch-size 64 --log-every 10 --seed 3 "$@"; }
run --device gpu --log plain.jsonl 2>plain.err || {
  rc=$?
  cat plain.err
  echo "the plain GPU run failed (exit $rc)"
  exit 1
}
mpirun -np 1 "$PR" train "$ROOT/netdescs/fashion_mlp.pbtxt" --iterations 100 --batch-size 64 --log-every 10 --seed 3 \
  --device gpu --log np1.jsonl 2>np1.err || {
  rc=$?
  cat np1.err
  echo "mpirun -np 1 --device gpu failed (exit $rc)"
  exit 1
}
grep -q 'CUDA graph captured 0,' np1.err || {
  cat np1.err
  echo "mpirun -np 1 --device gpu captured a CUDA graph: the NCCL allreduce did not run"
  exit 1
}
curves="plain.jsonl np1.jsonl"
if "$PR" check "$ROOT/netdescs/fit_a_line.pbtxt" --device gpu:1 >/dev/null 2>&1; then
  mpirun -np 2 "$PR" train "$ROOT/netdescs/fashion_mlp.pbtxt" --iterations 100 --batch-size 64 --log-every 10 \
    --seed 3 --device gpu --log np2.jsonl 2>np2.err || {
    cat np2.err
    exit 1
  }
  curves="$curves np2.jsonl"
else
  echo "one GPU: mpirun -np 2 not run"
fi
# shellcheck disable=SC2086
"$PYTHON" - $curves <<'PY'
import json, sys
def curve(p):
    return [json.loads(l) for l in open(p) if '"type":"step"' in l]
base = curve(sys.argv[1])
assert len(base) == 10, len(base)
for p in sys.argv[2:]:
    c = curve(p)
    assert len(c) == len(base), (p, len(c))
    worst = 0
    for a, b in zip(base, c):
        d = abs(a["avg_loss"] - b["avg_loss"]) / max(abs(a["avg_loss"]), 1e-12)
        worst = max(worst, d)
        assert d <= 1e-4, (p, a["step"], a["avg_loss"], b["avg_loss"], d)
    print("%s: the loss curve of the plain GPU run; largest relative difference %.3g" % (p, worst))
PY
