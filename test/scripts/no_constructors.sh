# no_constructors.sh — nothing of lib/ or ops/ runs before main: no object
# of libpaddle.a has a constructor (.init_array or .ctors section), so a
# process pays only for what it calls (the BLIS kernel choice, which timed
# the FMA units from a constructor in blas.c, is now made on the first
# product). A .cu file's object is left out: nvcc gives it the CUDA
# runtime's registration of its kernels. Skipped in a sanitizer build,
# whose objects carry ASan's own.
# Env: BUILD.
set -u
command -v objdump >/dev/null || { echo "skipped: objdump not installed"; exit 77; }
LIB="$BUILD/libpaddle.a"
[ -f "$LIB" ] || { echo "FAIL: no $LIB"; exit 1; }
if nm -u "$LIB" 2>/dev/null | grep -q '__asan_'; then
  echo "skipped: a sanitizer build (ASan adds a constructor to every object)"
  exit 77
fi
objdump -h "$LIB" >sections.txt 2>&1 || { cat sections.txt; echo "FAIL: objdump -h $LIB"; exit 1; }
bad=$(awk '/file format/ { obj = $1 } $2 == ".init_array" || $2 == ".ctors" { print obj }' sections.txt | sed 's/:$//' | grep -v '\.cu\.o$')
if [ -n "$bad" ]; then
  echo "FAIL: objects with a constructor (code run before main):"
  echo "$bad"
  exit 1
fi
echo "ok: no constructor in $(grep -c 'file format' sections.txt) objects"
