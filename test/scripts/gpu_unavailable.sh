# Where no GPU can be used, asking for one is a plain message and exit 2 on
# every command that runs a net (never an abort), and nothing else changes;
# bad --device values are usage errors. The same for a CPU-only build
# (`make CUDA=0`, built here into build-cpu/ when this build has CUDA):
# "built without CUDA", no CUDA library linked, and under mpirun a GPU run
# on two ranks refused for want of NCCL. A machine with a usable
# GPU skips the no-GPU half.
set -u
net="$ROOT/netdescs/fashion_mlp.pbtxt"
fail() { echo "FAIL: $*"; exit 1; }

# expect PATTERN CMD...: exit 2, one line on stderr matching PATTERN, no stdout
expect() {
  pat=$1; shift
  "$@" >out.txt 2>err.txt
  rc=$?
  [ $rc -eq 2 ] || fail "$*: exit $rc, want 2: $(cat err.txt)"
  [ ! -s out.txt ] || fail "$*: printed to stdout: $(cat out.txt)"
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "$*: want one line: $(cat err.txt)"
  grep -Eq "$pat" err.txt || fail "$*: message \"$(cat err.txt)\" does not match /$pat/"
  echo "ok: $* -> $(cat err.txt)"
}

# all_commands BINARY PATTERN: train, infer, check and time with --device gpu
all_commands() {
  b=$1 pat=$2
  expect "$pat" "$b" train "$net" --device gpu
  expect "$pat" "$b" train "$net" --device gpu:1 --tf32 --no-cuda-graph
  expect "$pat" "$b" infer "$net" --device gpu --params nowhere --fetch prob
  expect "$pat" "$b" check "$net" --device gpu
  expect "$pat" "$b" time "$net" --device gpu
  expect '^paddle-run train: --device must be cpu, gpu or gpu:N, got "tpu"$' "$b" train "$net" --device tpu
  expect '^paddle-run train: --device must be cpu, gpu or gpu:N, got "gpu:-1"$' "$b" train "$net" --device gpu:-1
  expect '^paddle-run time: --tf32 is for --device gpu$' "$b" time "$net" --tf32
  "$b" check "$net" --device cpu >/dev/null || fail "--device cpu does not work"
}

nocuda='^paddle-run: --device gpu:[01]: this paddle-run was built without CUDA \(no nvcc when it was built, or make CUDA=0\); use --device cpu$'
if "$PR" --version | grep -q 'built without CUDA'; then
  all_commands "$PR" "$nocuda"
  exit 0
fi

# this build has CUDA: a CPU-only build beside it must say so
(unset MAKEFLAGS MFLAGS MAKELEVEL; make -s -C "$ROOT" -j2 CUDA=0 SANITIZE=0 BUILD=build-cpu build-cpu/paddle-run) \
  >make.log 2>&1 || { cat make.log; fail "make CUDA=0 failed"; }
cpu="$ROOT/build-cpu/paddle-run"
"$cpu" --version | grep -qx 'gpu: none (built without CUDA)' || fail "CUDA=0 build: $("$cpu" --version)"
! ldd "$cpu" | grep -q 'libcuda\|libcublas' || fail "CUDA=0 build links CUDA: $(ldd "$cpu")"
all_commands "$cpu" "$nocuda"

# NCCL: built in where CUDA and MPI are (loaded by dlopen, never linked:
# test/scripts/no_toolkit.sh); a build without it (CUDA=0 here) refuses a
# GPU run on more than one rank (exit 2, the reason, before any GPU is
# looked for)
! ldd "$cpu" | grep -q libnccl || fail "CUDA=0 build links NCCL"
if ldd "$PR" | grep -q libmpi; then
  "$PR" --version | grep -q 'and NCCL loaded' || fail "a build with CUDA and MPI has no NCCL: $("$PR" --version)"
  (
    . "$ROOT/test/mpi/env.sh"
    mpirun -np 2 "$cpu" train "$net" --device gpu >out.txt 2>err.txt
    rc=$?
    [ $rc -eq 2 ] || fail "CUDA=0 build, mpirun -np 2 --device gpu: exit $rc, want 2: $(cat err.txt)"
    grep -q '^paddle-run train: --device gpu on 2 ranks needs NCCL, and this paddle-run was built without it (it needs CUDA and MPI when built); run one rank or use --device cpu$' err.txt ||
      fail "CUDA=0 build, mpirun -np 2 --device gpu: $(cat err.txt)"
    [ ! -s out.txt ] || fail "printed to stdout: $(cat out.txt)"
    echo "ok: CUDA=0 build under mpirun -np 2 --device gpu -> $(grep NCCL err.txt)"
  ) || exit 1
fi

probe=$("$PR" check "$ROOT/netdescs/fit_a_line.pbtxt" --device gpu 2>&1)
case "$probe" in
*"no CUDA device found"*) ;; # a driver that is there but unusable is exit 1: test/gpu/driver_errors.sh
*)
  echo "skipped: a GPU is present ($probe)"
  exit 77
  ;;
esac
all_commands "$PR" '^paddle-run: --device gpu:[01]: no CUDA device found: .* \(cudaGetDeviceCount: .*\); use --device cpu$'
