#!/bin/sh
# bundle.sh BIN BUILD NAME — writes BUILD/NAME.tar.gz (`make bundle`): NAME/
# with bin/paddle-run, lib/ (every shared library BIN needs that is not
# glibc's own or the C++ runtime's), the shipped netdescs with fit_a_line's
# data, and a README. The binary's run path is $ORIGIN/../lib and each
# library's $ORIGIN (patchelf), so the tree runs wherever it is unpacked:
# libmpi's own run path (Open MPI's directory) is replaced too, or its
# dependencies would be looked for there. Not bundled: glibc (the target's
# is newer: building on Debian 12 sets the floor, printed in the README) and
# libstdc++/libgcc_s (a newer distribution's are compatible, and cuBLAS and
# NCCL, loaded later from the target, may need that newer one: a bundled
# older copy, loaded first, would refuse them). cuBLAS and NCCL are not
# bundled either (600 MB; they belong to the GPU server's CUDA install).
set -eu
bin=$1 build=$2 name=$3
root=$(cd "$(dirname "$0")/.." && pwd)
stage=$build/bundle/$name
rm -rf "$build/bundle"
mkdir -p "$stage/bin" "$stage/lib" "$stage/netdescs/data"
objcopy --strip-debug "$bin" "$stage/bin/paddle-run"
libs=""
for pair in $(LD_LIBRARY_PATH='' ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $1 "=" $3 }'); do
  so=${pair%%=*} path=${pair#*=}
  case "$so" in
  ld-linux* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libresolv.so.* | libutil.so.* | \
    libanl.so.* | libmvec.so.* | libstdc++.so.* | libgcc_s.so.*) continue ;;
  esac
  cp -L "$path" "$stage/lib/$so"
  chmod 644 "$stage/lib/$so"
  patchelf --set-rpath '$ORIGIN' "$stage/lib/$so"
  libs="$libs $so"
done
patchelf --set-rpath '$ORIGIN/../lib' "$stage/bin/paddle-run"
cp "$root"/netdescs/*.pbtxt "$stage/netdescs/"
"$build/gen_data" "$stage/netdescs/data" >/dev/null

# the newest glibc and libstdc++ symbol versions anything here asks for
need() { objdump -T "$stage"/bin/paddle-run "$stage"/lib/* 2>/dev/null | grep -o "$1[0-9.]*" | sort -uV | tail -n 1; }
glibc=$(need 'GLIBC_2\.') glibcxx=$(need 'GLIBCXX_3\.')
[ -n "$glibcxx" ] || glibcxx=$(need 'CXXABI_1\.')
version=$("$stage/bin/paddle-run" --version | sed -n 's/^paddle-run //p')
gpu=$("$stage/bin/paddle-run" --version | sed -n 's/^gpu: //p')
host=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")
{
  echo "paddle-run $version for Linux $(uname -m), built on ${host:-Linux} ($(ldd --version | head -n 1 | sed 's/.* //'))"
  echo "GPU: $gpu"
  echo
  echo "  bin/paddle-run   the binary: it finds lib/ relative to itself, wherever this tree is"
  echo "  lib/            $libs"
  echo "  netdescs/        the shipped nets; fit_a_line's data in netdescs/data"
  echo
  echo "Needs: Linux $(uname -m) with glibc ${glibc#GLIBC_} or newer${glibcxx:+ and libstdc++ ($glibcxx) or newer}: any"
  echo "distribution released after the one this was built on (Ubuntu 24.04, say)."
  echo
  echo "  bin/paddle-run --version"
  echo "  bin/paddle-run train netdescs/fit_a_line.pbtxt"
  echo "  bin/paddle-run train netdescs/fit_a_line.pbtxt --device gpu"
  echo
  echo "--device gpu needs the NVIDIA driver (libcuda.so.1, one that supports this CUDA version or"
  echo "newer) and cuBLAS of the same CUDA major version (libcublas.so and libcublasLt.so), found"
  echo "through LD_LIBRARY_PATH, ld.so.cache, \$CUDA_HOME/lib64 or /usr/local/cuda/lib64; the CUDA"
  echo "runtime is inside the binary. Without them it says what is missing and exits 2; the CPU"
  echo "path needs neither. NCCL (libnccl.so.2), loaded the same way, is only for GPU runs under"
  echo "mpirun."
  echo
  echo "The fashion_* nets read Debian's dataset-fashion-mnist files from /usr/share/datasets;"
  echo "elsewhere copy them over and point at them with --data VAR=FILE."
  echo
  echo "MPI: lib/ holds Open MPI's libraries from the build machine, so the binary starts where"
  echo "Open MPI is not installed; a single process (not started by mpirun) never initialises MPI."
  echo "Under mpirun, Open MPI loads its plugins from the build machine's install directory, so"
  echo "data-parallel runs need the same Open MPI there (or paddle-run built on that machine)."
} >"$stage/README"

# a tar that is the same for the same inputs: names sorted, no owners or dates
tar -C "$build/bundle" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - "$name" |
  gzip -n -9 >"$build/$name.tar.gz.tmp"
mv "$build/$name.tar.gz.tmp" "$build/$name.tar.gz"
