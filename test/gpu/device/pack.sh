#!/bin/sh
# pack.sh — gathers into DEST/payload.tar.xz (DEST default .dev, which git
# ignores: test/gpu/device/README.md) what a run of the GPU suite needs on a
# machine that has a GPU but none of Debian's packages (the lent device
# machine): BUILD's paddle-run, its GPU unit tests, gpu_parity and the GPU
# bench driver, every shared library they load but glibc's and the C++
# runtime's, Debian's Open MPI (mpirun, orted, its plugins and their
# libraries, for test/gpu/mpi_nccl.sh), the fortunes corpus (char_lm) and
# Fashion-MNIST, decompressed (xz compresses it 15% better
# than its gzip; run.sh writes the .gz files back where the nets name them).
# Debug info is stripped and the whole compressed with xz to fit the 64 MiB
# a call carries (symbols stay, so compute-sanitizer's traces name functions).
# Usage: sh test/gpu/device/pack.sh [BUILD] [DEST]
set -eu
BUILD=${1:-build}
DEST=${2:-.dev}
cd "$(dirname "$0")/../../.."
tests="test_gpu_runtime test_gpu_fault test_devalloc test_place test_gpunccl gpu_parity"
for f in "$BUILD/paddle-run" "$BUILD/bench/bench_gemm_gpu"; do
  [ -x "$f" ] || { echo "pack: $f is missing (make -j2 && make tests && BENCH_TORCH=0 BENCH_ONLY=gpu make bench)" >&2; exit 2; }
done
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
P="$STAGE/dev"
mkdir -p "$P/build/test" "$P/build/bench" "$P/lib" "$P/data"
strip --strip-debug -o "$P/build/paddle-run" "$BUILD/paddle-run"
strip --strip-debug -o "$P/build/bench/bench_gemm_gpu" "$BUILD/bench/bench_gemm_gpu"
for t in $tests; do
  [ -x "$BUILD/test/$t" ] || { echo "pack: $BUILD/test/$t is missing (make tests)" >&2; exit 2; }
  strip --strip-debug -o "$P/build/test/$t" "$BUILD/test/$t"
done
# Open MPI and PMIx's plugins (run.sh points Open MPI at them: OPAL_PREFIX)
mkdir -p "$P/mpi/bin"
cp -L /usr/bin/orterun /usr/bin/orted "$P/mpi/bin/"
cp -a /usr/lib/x86_64-linux-gnu/openmpi "$P/mpi/lib"
cp -a /etc/openmpi "$P/mpi/etc"
cp -a /usr/share/openmpi "$P/mpi/share"
cp -a /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix "$P/mpi/pmix"
# the libraries: everything ldd resolves outside glibc, libgcc_s and libstdc++
for f in "$P"/build/paddle-run "$P"/build/bench/* "$P"/build/test/* "$P"/mpi/bin/* \
  $(find "$P/mpi/lib" -name '*.so*' -type f); do
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
  libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libgcc_s* | libstdc++*) continue ;;
  esac
  strip --strip-debug -o "$P/lib/$(basename "$lib")" "$lib"
done
mkdir -p "$P/fortunes"
cp /usr/share/games/fortunes/*.u8 "$P/fortunes/" # char_lm's corpus
for f in /usr/share/datasets/fashion-mnist/*.gz; do
  gzip -dc "$f" >"$P/data/$(basename "$f" .gz)"
done
mkdir -p "$DEST"
rm -f "$DEST/payload.tar.xz"
tar -C "$STAGE" -cf - dev | xz -6 -T2 >"$DEST/payload.tar.xz"
ls -la "$DEST/payload.tar.xz"
