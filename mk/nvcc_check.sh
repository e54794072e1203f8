#!/bin/sh
# nvcc_check.sh — compiles every ops/*.cu with the flags the GPU build uses
# (sm_90 + PTX, warnings as errors) and every ops/*.c with PD_WITH_CUDA, to
# catch compile errors where no GPU build is wired up yet (and lib/, cmd/
# with PD_WITH_CUDA, since lib/base/rng.h is PD_HD code). Not run by
# `make test`. Usage: sh mk/nvcc_check.sh [FILE.cu|FILE.c ...]
set -e
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
BUILD=${BUILD:-build}
OUT=${OUT:-/tmp/nvcc_check}
mkdir -p "$OUT"
files="$*"
[ -n "$files" ] || files="$(ls ops/*.cu) $(ls ops/*.c lib/*/*.c cmd/*.c)"
status=0
for f in $files; do
  o="$OUT/$(basename "$f").o"
  case "$f" in
  *.cu)
    "$NVCC" -std=c++17 -DPD_WITH_CUDA -Ilib -Iops -I"$BUILD/gen" -gencode 'arch=compute_90,code=[sm_90,compute_90]' \
      -Xcompiler -Wall,-Wextra -Werror all-warnings -c "$f" -o "$o" || status=1 ;;
  *.c)
    ${CC:-cc} -DPD_WITH_CUDA -I"$CUDA_INC" -Ilib -Iops -I"$BUILD/gen" -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
      -DPD_VERSION='"0"' -isystem /usr/include/x86_64-linux-gnu/blis-pthread -std=c11 -Wall -Wextra -Werror -O2 \
      -fno-strict-aliasing -c "$f" -o "$o" || status=1 ;;
  esac
done
exit $status
