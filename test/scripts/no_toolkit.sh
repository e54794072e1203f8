# A binary that starts without the CUDA toolkit (issue 23): the CUDA runtime
# is linked statically and cuBLAS and NCCL are loaded by dlopen when a GPU
# is asked for, so paddle-run names no CUDA library and no run path into the
# toolkit, and a CPU run maps neither. With the toolkit's directory hidden
# (an empty tmpfs over it in a mount namespace of its own; where none can be
# made, only the first half runs) --version and a CPU training still work,
# --device gpu says what is missing (no driver; on a GPU machine, cuBLAS)
# and exits 2, and under mpirun a GPU run on two ranks is refused for want
# of NCCL. A CPU-only build (make CUDA=0) passes the first half as it is.
set -u
fail() {
  echo "FAIL: $*"
  exit 1
}
net="$ROOT/netdescs/fit_a_line.pbtxt"
gpu_lib='libcuda\.|libcudart|libcublas|libnccl'

readelf -d "$PR" >dyn.txt || fail "readelf -d $PR"
! grep -E "NEEDED.*($gpu_lib)" dyn.txt || fail "$PR still links a CUDA library"
! grep -iE 'R(UN)?PATH.*cuda' dyn.txt || fail "$PR has a run path into the CUDA toolkit"
! ldd "$PR" | grep -E "$gpu_lib" || fail "ldd $PR shows a CUDA library"
echo "ok: no CUDA library and no toolkit run path: $(grep -E 'RUNPATH|RPATH' dyn.txt | sed 's/.*: //')"

# a CPU run (and --version) maps neither cuBLAS nor NCCL nor the driver
LD_DEBUG=files "$PR" train "$net" --iterations 3 >train.out 2>ld.txt || fail "CPU train: $(tail -n 3 ld.txt)"
! grep -E "file=[^ ]*($gpu_lib)" ld.txt || fail "a CPU run loaded a CUDA library"
echo "ok: a CPU training loads no CUDA library"

if "$PR" --version | grep -q 'built without CUDA'; then
  echo "a build without CUDA: nothing to hide"
  exit 0
fi
"$PR" --version | grep -qx 'gpu: CUDA [0-9.]* (sm_90 and PTX), cuBLAS and NCCL loaded when a GPU is used' ||
  "$PR" --version | grep -qx 'gpu: CUDA [0-9.]* (sm_90 and PTX), cuBLAS loaded when a GPU is used' ||
  fail "--version: $("$PR" --version)"

# The toolkit: where nvcc's lives and where /usr/local/cuda and $CUDA_HOME lead.
dirs=""
for d in "$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /nonexistent/bin/nvcc)")")" /usr/local/cuda \
  "${CUDA_HOME:-/nonexistent}"; do
  d=$(readlink -f "$d" 2>/dev/null) || continue
  # a toolkit has its runtime beside nvcc (a wrapper script in /usr/local/bin
  # makes /usr/local look like one, and hiding it hides the real one too)
  [ -e "$d/bin/nvcc" ] && ls "$d"/lib64/libcudart* "$d"/targets/*/lib/libcudart* >/dev/null 2>&1 || continue
  case " $dirs " in *" $d "*) ;; *) dirs="$dirs $d" ;; esac
done
[ -n "$dirs" ] || fail "no CUDA toolkit directory found to hide (a CUDA build without one?)"
if ! unshare -m true 2>unshare.err; then
  echo "the toolkit is not hidden (unshare -m: $(cat unshare.err)); the checks above hold"
  exit 0
fi

# a GPU where the toolkit is visible: then, hidden, cuBLAS is what is missing
if "$PR" check "$net" --device gpu >/dev/null 2>&1; then
  want='^paddle-run: --device gpu:0: cannot load cuBLAS: libcublas\.so\.[0-9]+ is not in the library search path .*; install the CUDA toolkit.s cuBLAS .* or add its directory to LD_LIBRARY_PATH$'
else
  want='^paddle-run: --device gpu:0: (no CUDA device found|the NVIDIA driver is too old).*; use --device cpu$'
fi
# NCCL outside the toolkit (Debian's libnccl2, say) stays visible: then the
# refusal for want of it is not checked
nccl_elsewhere=0
for f in $(ldconfig -p | awk '$1 == "libnccl.so.2" { print $NF }') /usr/lib/*/libnccl.so.2; do
  f=$(readlink -f "$f" 2>/dev/null) || continue
  [ -e "$f" ] || continue
  inside=0
  for d in $dirs; do case "$f" in "$d"/*) inside=1 ;; esac; done
  [ $inside -eq 1 ] || nccl_elsewhere=1
done
cat >hidden.sh <<INNER
set -u
for d in $dirs; do mount -t tmpfs -o size=1m none "\$d" || exit 3; done
[ ! -e "$(echo "$dirs" | cut -d' ' -f2)/bin/nvcc" ] || exit 3
INNER
cat >>hidden.sh <<'INNER'
fail() {
  echo "FAIL (toolkit hidden): $*"
  exit 1
}
"$PR" --version >version.out 2>&1 || fail "--version: exit $?: $(cat version.out)"
echo "ok: --version: $(head -n 1 version.out)"
"$PR" train "$net" --iterations 3 >train.out 2>&1 || fail "CPU train: $(tail -n 3 train.out)"
grep -q '^finished: 3 steps' train.out || fail "CPU train: $(tail -n 3 train.out)"
echo "ok: a CPU training"
"$PR" train "$net" --device gpu >out.txt 2>err.txt
rc=$?
[ $rc -eq 2 ] || fail "--device gpu: exit $rc, want 2: $(cat err.txt)"
[ ! -s out.txt ] && [ "$(wc -l <err.txt)" -eq 1 ] || fail "--device gpu: want one line: $(cat out.txt err.txt)"
grep -Eq "$want" err.txt || fail "--device gpu: \"$(cat err.txt)\" does not match /$want/"
echo "ok: --device gpu -> $(cat err.txt)"
if [ "$nccl_elsewhere" -eq 0 ] && command -v mpirun >/dev/null && ldd "$PR" | grep -q libmpi; then
  . "$ROOT/test/mpi/env.sh"
  mpirun -np 2 "$PR" train "$net" --device gpu >out.txt 2>err.txt
  rc=$?
  [ $rc -ne 0 ] || fail "mpirun -np 2 --device gpu: exit 0"
  grep -q '^paddle-run train: --device gpu on 2 ranks needs NCCL: NCCL cannot be loaded: libnccl\.so\.2 is not in the library search path (LD_LIBRARY_PATH, ld\.so\.cache), nor in .*; install NCCL (Debian and Ubuntu: libnccl2) or add its directory to LD_LIBRARY_PATH; run one rank or use --device cpu$' err.txt ||
    fail "mpirun -np 2 --device gpu: $(cat err.txt)"
  echo "ok: mpirun -np 2 --device gpu -> $(grep NCCL err.txt | head -n 1)"
fi
INNER
export net want nccl_elsewhere
unshare -m sh hidden.sh || fail "with$dirs hidden (exit $?)"
echo "no_toolkit: a binary that runs without$dirs"
