#!/bin/sh
# run.sh — `make bench`: compiles the C drivers in bench/ against
# BUILD/libpaddle.a into BUILD/bench/, installs PyTorch from Debian for the
# comparison when it installs quickly (BENCH_TORCH=0 skips it), then runs
# bench/bench.py, which prints a table and writes bench/RESULTS.md.
#   sh bench/run.sh [BUILD]        BENCH_QUICK=1: fewer runs, shorter training
# BENCH_ONLY=section,... runs only those (peak parse dispatch startup train gemm
# infer cnn tiny rnn dist gpu) and writes bench/out/RESULTS.only.md; add BENCH_MERGE=1 to put
# their figures into bench/RESULTS.md instead, keeping the other sections'.
# BENCH_SMOKE=1: a few steps of everything to check the machinery (report in
# bench/out/RESULTS.smoke.md; its figures mean nothing). BENCH_PEER=alone,blis,...
# narrows the PyTorch configurations tried (bench.py's PEER_CONFIGS; default all).
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
CC=${CC:-cc}

if [ ! -f "$BUILD/libpaddle.a" ] || [ ! -x "$BUILD/paddle-run" ]; then
  echo "bench: $BUILD/libpaddle.a or $BUILD/paddle-run is missing; run make first" >&2
  exit 2
fi
if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  sh mk/deps.sh dataset-fashion-mnist
fi

# ---- the drivers -----------------------------------------------------------------
mkdir -p "$BUILD/bench" bench/out
CFLAGS_B="-std=c11 -O2 -g -Wall -Wextra -Werror -fno-strict-aliasing"
# the Makefile passes its own flags (BLIS flavour included); these are fallbacks
CPPFLAGS_B="${BENCH_CPPFLAGS:--Ilib -Iops -I$BUILD/gen -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE}"
LIBS_B="$BUILD/libpaddle.a ${BENCH_LDLIBS:--lprotobuf-c -lblis -lz -lm -lpthread}"
for src in bench/*.c; do  # always rebuilt: a few small files, and the library may have changed
  # shellcheck disable=SC2086
  $CC $CPPFLAGS_B $CFLAGS_B -o "$BUILD/bench/$(basename "$src" .c)" "$src" $LIBS_B
done

# ---- PyTorch, from Debian, only if it comes quickly ---------------------------------
# Download first under a time limit (safe to interrupt), then install from the
# cache with mk/deps.sh (never interrupted, so dpkg is not left half-done).
torch=no
reason="BENCH_TORCH=0"
if [ "${BENCH_TORCH:-1}" = 1 ]; then
  if $PY -c 'import torch' >/dev/null 2>&1; then
    torch=yes
  else
    SUDO=""
    [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && SUDO=sudo
    echo "bench: fetching python3-torch from Debian (at most ${BENCH_TORCH_TIMEOUT:-300} s)"
    t0=$(date +%s)
    if [ "$(id -u)" != 0 ] && [ -z "$SUDO" ]; then
      reason="python3-torch is not installed and installing it needs root"
    elif ! $SUDO env DEBIAN_FRONTEND=noninteractive timeout "${BENCH_TORCH_TIMEOUT:-300}" \
        apt-get install -y -qq --no-install-recommends --download-only -o DPkg::Lock::Timeout=60 \
        python3-torch >/dev/null 2>&1; then
      reason="python3-torch did not download within ${BENCH_TORCH_TIMEOUT:-300} s (or apt failed)"
    elif ! sh mk/deps.sh python3-torch; then
      reason="installing python3-torch failed"
    elif ! $PY -c 'import torch' >/dev/null 2>&1; then
      reason="python3-torch installed but does not import"
    else
      torch=yes
      echo "bench: python3-torch installed in $(( $(date +%s) - t0 )) s"
    fi
  fi
  [ "$torch" = yes ] && reason=""
fi
[ "$torch" = no ] && echo "bench: PyTorch comparison skipped: $reason"

quick=""
[ "${BENCH_QUICK:-0}" = 1 ] && quick="--quick"
[ "${BENCH_SMOKE:-0}" = 1 ] && quick="--smoke"
merge=""
[ -n "${BENCH_ONLY:-}" ] && [ "${BENCH_MERGE:-0}" = 1 ] && merge="--merge"
exec $PY bench/bench.py --build "$BUILD" --torch "$torch" --torch-reason "$reason" $quick \
  ${BENCH_ONLY:+--only "$BENCH_ONLY"} $merge
