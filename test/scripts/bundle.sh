# make bundle (mk/bundle.sh): BUILD/paddle-run-VERSION-linux-ARCH.tar.gz,
# unpacked into an empty directory, runs with LD_LIBRARY_PATH empty and
# every library it needs beyond glibc and the C++ runtime taken from its own
# lib/ (ldd, and the loader's own record of a training run), never from the
# build tree or the system. Then, in a mount namespace where one can be made,
# the same training with the build tree, Open MPI's install directory and
# the CUDA toolkit hidden and each system copy of a bundled library made
# unreadable: what a machine without Debian's packages looks like to it.
set -u
fail() {
  echo "FAIL: $*"
  exit 1
}
version=$("$PR" --version | sed -n 's/^paddle-run //p')
tgz="$BUILD/paddle-run-$version-linux-$(uname -m).tar.gz"
if [ ! -f "$tgz" ]; then
  case $(basename "$BUILD") in build-san*)
    echo "skipped: no bundle of a sanitizer build"
    exit 77
    ;;
  esac
  fail "no $tgz (make tests makes it; so does make bundle)"
fi
[ ! "$PR" -nt "$tgz" ] || fail "$tgz is older than $PR: make bundle"
mkdir unpacked && tar -C unpacked -xzf "$tgz" || fail "tar xzf $tgz"
top=$(ls unpacked)
[ "$top" = "paddle-run-$version-linux-$(uname -m)" ] || fail "the tarball's top directory is $top"
dir="$PWD/unpacked/$top"
for f in bin/paddle-run README netdescs/fit_a_line.pbtxt netdescs/data/fit_a_line_train_x.npy lib/libprotobuf-c.so.1 \
  lib/libblis.so.4 lib/libdeflate.so.0; do
  [ -f "$dir/$f" ] || fail "no $f in the bundle: $(cd "$dir" && find . -type f | sort)"
done
readelf -d "$dir/bin/paddle-run" | grep -q 'RUNPATH.*\[\$ORIGIN/\.\./lib\]$' || fail "bin/paddle-run: run path $(readelf -d "$dir/bin/paddle-run" | grep PATH)"
for l in "$dir"/lib/*; do
  readelf -d "$l" | grep -q 'RUNPATH.*\[\$ORIGIN\]$' || fail "$l: run path $(readelf -d "$l" | grep PATH)"
done

# what may come from the system: glibc's own libraries and the C++ runtime
system='^(linux-vdso|ld-linux[^ ]*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libmvec|libstdc\+\+|libgcc_s)\.so'
export LD_LIBRARY_PATH=
LD_LIBRARY_PATH='' ldd "$dir/bin/paddle-run" >ldd.txt 2>&1 || fail "ldd: $(cat ldd.txt)"
! grep 'not found' ldd.txt || fail "unresolved libraries"
awk '$2 == "=>" { print $1, $3 }' ldd.txt | while read -r so path; do
  case "$(readlink -f "$path")" in
  "$dir"/lib/*) ;;
  *) echo "$so" | grep -Eq "$system" || {
    echo "FAIL: $so resolves to $path, outside the bundle"
    exit 1
  } ;;
  esac
done || exit 1
echo "ok: ldd: $(grep -c "$dir/bin/../lib/" ldd.txt) libraries from the bundle's lib/, the rest glibc's and the C++ runtime"

cd "$dir" || exit 1
LD_DEBUG=libs LD_DEBUG_OUTPUT="$OLDPWD/ld" bin/paddle-run train netdescs/fit_a_line.pbtxt --epochs 2 \
  >"$OLDPWD/train.out" 2>&1 || fail "train: $(tail -n 5 "$OLDPWD/train.out")"
cd "$OLDPWD" || exit 1
grep -q '^finished: 32 steps' train.out || fail "train: $(tail -n 3 train.out)"
cat ld.* | sed -n 's/.*calling init: \([^ ]*\).*/\1/p' | sort -u >inits.txt
[ -s inits.txt ] || fail "LD_DEBUG=libs recorded nothing"
while read -r path; do
  case "$path" in
  "$dir"/*) ;;
  *) basename "$path" | grep -Eq "$system" || fail "the training loaded $path, outside the bundle" ;;
  esac
done <inits.txt
echo "ok: a training from the unpacked bundle loads $(grep -c "^$dir/" inits.txt) libraries from it, the rest glibc's and the C++ runtime"

# --device gpu from the bundle: a GPU, or a clear message and exit 2
bin="$dir/bin/paddle-run"
"$bin" check "$dir/netdescs/fit_a_line.pbtxt" --device gpu >gpu.out 2>gpu.err
rc=$?
if [ $rc -ne 0 ]; then
  [ $rc -eq 2 ] && [ "$(wc -l <gpu.err)" -eq 1 ] || fail "--device gpu: exit $rc: $(cat gpu.err)"
  grep -Eq '^paddle-run: --device gpu:0: .*; use --device cpu$|built without CUDA|cannot load cuBLAS' gpu.err ||
    fail "--device gpu: $(cat gpu.err)"
  echo "ok: --device gpu from the bundle -> $(cat gpu.err)"
fi

# the same in a mount namespace without the build tree, Open MPI's install
# directory, the CUDA toolkit, or any system copy of a bundled library
if ! unshare -m true 2>unshare.err; then
  echo "bundle: not run with the build tree hidden (unshare -m: $(cat unshare.err)); the checks above hold"
  exit 0
fi
{
  echo 'set -u'
  echo "mount -t tmpfs -o size=1m none '$ROOT' || exit 3"
  echo "[ ! -e '$PR' ] || exit 3"
  for d in /usr/lib/*/openmpi /usr/local/cuda /usr/local/cuda-*; do
    d=$(readlink -f "$d") && [ -d "$d" ] && echo "mount -t tmpfs -o size=1m none '$d' || exit 3"
  done
  awk '$2 == "=>" { print $1 }' ldd.txt | while read -r so; do
    [ -f "$dir/lib/$so" ] || continue
    for f in /lib/*/"$so" /usr/lib/*/"$so" /usr/lib/*/*/"$so"; do
      f=$(readlink -f "$f" 2>/dev/null) && [ -f "$f" ] && echo "mount --bind /dev/null '$f' || exit 3"
    done
  done
  echo "cd '$dir' && bin/paddle-run train netdescs/fit_a_line.pbtxt --epochs 2 >'$PWD/hidden.out' 2>&1"
} | awk '!seen[$0]++' >hidden.sh
unshare -m sh hidden.sh || fail "with the build tree, Open MPI and the system's copies hidden: exit $?: $(tail -n 5 hidden.out 2>/dev/null) ($(cat hidden.sh))"
grep -q '^finished: 32 steps' hidden.out || fail "hidden: $(tail -n 3 hidden.out)"
echo "ok: the same training with $(grep -c '^mount' hidden.sh) directories and system libraries hidden"
echo "bundle: $(basename "$tgz"), $(wc -c <"$tgz") bytes, runs from an empty directory"
