# How a broken GPU host is told from one without a GPU, on any machine with a
# CUDA build (no GPU needed): test/gpu/fake_libcuda.c stands in for the
# driver and fails the CUDA runtime's first call the way a real host does.
# "No device" is exit 2 and "no CUDA device found", and gpu_env skips on it;
# each broken case (driver too old, library/kernel mismatch, cuda-compat on
# an unsupported GPU, fabric manager down, init failure, busy, unknown, an
# unloadable libcuda.so.1) is exit 1 with its own message, and gpu_env fails
# on it, never skips. PADDLE_RUN_GPU_REQUIRED=1 makes the skip a failure.
set -u
if "$PR" --version | grep -q 'built without CUDA'; then
  [ "${PADDLE_RUN_GPU_REQUIRED:-0}" = 1 ] && { echo "FAIL: PADDLE_RUN_GPU_REQUIRED=1 in a build without CUDA"; exit 1; }
  echo "skipped: built without CUDA"
  exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p drv
${CC:-cc} -shared -fPIC -o drv/libcuda.so.1 "$ROOT/test/gpu/fake_libcuda.c" || fail "cannot build the fake driver"
net="$ROOT/netdescs/fit_a_line.pbtxt"

# case ERROR DRIVER_VERSION WANT_RC PATTERN
case_() {
  LD_LIBRARY_PATH="$PWD/drv${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKE_CUDA_ERROR=$1 FAKE_CUDA_DRIVER=$2 \
    "$PR" check "$net" --device gpu >out.txt 2>err.txt
  rc=$?
  [ $rc -eq "$3" ] || fail "cuInit $1, driver $2: exit $rc, want $3: $(cat err.txt)"
  grep -Eq "^paddle-run: --device gpu:0: $4" err.txt || fail "cuInit $1: \"$(cat err.txt)\" does not match /$4/"
  # what the GPU tests make of it
  LD_LIBRARY_PATH="$PWD/drv${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKE_CUDA_ERROR=$1 FAKE_CUDA_DRIVER=$2 \
    PADDLE_RUN_GPU_REQUIRED=0 sh -c '. "$ROOT/test/gpu/gpu_env"; echo "did not skip"' >env.txt 2>&1
  erc=$?
  if [ "$3" -eq 2 ]; then
    [ $erc -eq 77 ] && [ "$(tail -n 1 env.txt)" = "skipped: no GPU" ] || fail "cuInit $1: gpu_env exit $erc, want a skip: $(cat env.txt)"
    LD_LIBRARY_PATH="$PWD/drv${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKE_CUDA_ERROR=$1 FAKE_CUDA_DRIVER=$2 \
      PADDLE_RUN_GPU_REQUIRED=1 sh -c '. "$ROOT/test/gpu/gpu_env"; echo "did not skip"' >env.txt 2>&1
    erc=$?
    [ $erc -eq 1 ] || fail "cuInit $1 with PADDLE_RUN_GPU_REQUIRED=1: gpu_env exit $erc, want 1: $(cat env.txt)"
  else
    [ $erc -eq 1 ] || fail "cuInit $1: gpu_env exit $erc, want 1 (a failure, not a skip): $(cat env.txt)"
  fi
  echo "ok: cuInit $1, driver $2: exit $rc, gpu_env exit $erc: $(head -n 1 err.txt)"
}
case_ 100 13000 2 'no CUDA device found: the NVIDIA driver sees no GPU'
case_ 999 12080 1 'the NVIDIA driver is too old for this build: it supports CUDA 12\.8, paddle-run was built with CUDA'
case_ 803 13000 1 'the NVIDIA driver library \(libcuda\.so\.1\) does not match the loaded kernel module'
case_ 804 13000 1 'a CUDA forward-compatibility driver \(cuda-compat\) is in use'
case_ 802 13000 1 'the GPUs are not ready; on an NVSwitch host .*nvidia-fabricmanager'
case_ 3 13000 1 'the NVIDIA driver failed to initialise'
case_ 46 13000 1 'the GPU is busy or unavailable'
case_ 999 13000 1 'the GPU cannot be used \(cudaGetDeviceCount: unknown error, cudaErrorUnknown\)'
echo "not a library" >drv/libcuda.so.1
case_ 0 0 1 'the NVIDIA driver library cannot be loaded: .*libcuda\.so\.1'
# no driver at all: only where there is none (a GPU host's own libcuda.so.1
# cannot be hidden from here without a mount namespace)
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' && [ ! -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ]; then
  rm -f drv/libcuda.so.1
  case_ 0 0 2 'no CUDA device found: no NVIDIA driver is installed \(libcuda\.so\.1 not found\)'
fi
