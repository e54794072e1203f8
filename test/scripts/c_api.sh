# c_api.sh — the C API as a user gets it: include/paddle_run.h and
# libpaddle-run.so in an installed layout (PREFIX/include, PREFIX/lib with
# the soname links), docs/examples/infer.c compiled against them with `cc`
# and run on fit_a_line with parameters trained here; its output equals
# `paddle-run infer`'s on the same rows, byte for byte. The .so exports only
# pdr_ symbols, has soname libpaddle-run.so.MAJOR, and the header's version
# macros agree with VERSION and pdr_version().
set -eu
so="$BUILD/libpaddle-run.so.0"
if [ ! -e "$so" ]; then
  case "$(basename "$BUILD")" in *san*) echo "skipped: no libpaddle-run.so in a sanitizer build"; exit 77 ;; esac
  echo "no $so"; exit 1
fi
real=$(basename "$(readlink -f "$so")")
mkdir -p prefix/include prefix/lib
cp "$ROOT/include/paddle_run.h" prefix/include/
cp "$(readlink -f "$so")" "prefix/lib/$real"
ln -s "$real" prefix/lib/libpaddle-run.so.0
ln -s libpaddle-run.so.0 prefix/lib/libpaddle-run.so

v=$(cat "$ROOT/VERSION")
readelf -d "prefix/lib/$real" | grep -q 'SONAME.*\[libpaddle-run\.so\.'"${v%%.*}"'\]' || { echo "soname"; exit 1; }
other=$(nm -D --defined-only "prefix/lib/$real" | awk '$3 != "" && $3 !~ /^pdr_/ && $3 != "PADDLE_RUN_0" {print $3}')
[ -z "$other" ] || { echo "exported beyond pdr_: $other" | head -n 5; exit 1; }
# the library writes nothing to stdout (its only stderr lines are PD_ASSERT's and the op table's, on a bug)
prints=$(nm -D --undefined-only "prefix/lib/$real" | awk '$2 ~ /^(stdout|printf|puts|putchar|vprintf)@/ {print $2}')
[ -z "$prints" ] || { echo "the library prints: $prints"; exit 1; }

cc -std=c11 -Wall -Wextra -Werror -Iprefix/include -o infer "$ROOT/docs/examples/infer.c" -Lprefix/lib -lpaddle-run \
  -Wl,-rpath,"$PWD/prefix/lib"
cat >ver.c <<'C'
#include <paddle_run.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  char want[64];
  snprintf(want, sizeof want, "%d.%d.%d", PADDLE_RUN_VERSION_MAJOR, PADDLE_RUN_VERSION_MINOR, PADDLE_RUN_VERSION_PATCH);
  puts(pdr_version());
  return strcmp(want, pdr_version()) != 0;
}
C
cc -std=c11 -Iprefix/include -o ver ver.c -Lprefix/lib -lpaddle-run -Wl,-rpath,"$PWD/prefix/lib"
[ "$(./ver)" = "$v" ] || { echo "pdr_version $(./ver), header or VERSION $v"; exit 1; }

"$PR" train "$ROOT/netdescs/fit_a_line.pbtxt" --iterations 20 --save ck >/dev/null 2>&1
"$PYTHON" -c "
import numpy as np
x = np.load('$ROOT/netdescs/data/fit_a_line_test_x.npy')[:50]
np.save('x.npy', x)
open('x.txt', 'w').write(''.join(' '.join('%.9g' % v for v in r) + '\n' for r in x))"
./infer "$ROOT/netdescs/fit_a_line.pbtxt" ck x y_predict <x.txt >api.txt
"$PR" infer "$ROOT/netdescs/fit_a_line.pbtxt" --params ck --data x=x.npy --fetch y_predict >cli.txt
cmp api.txt cli.txt
[ "$(wc -l <api.txt)" -eq 51 ]
# an error is a message from the handle, exit 1, and nothing on stdout
if ./infer "$ROOT/netdescs/fit_a_line.pbtxt" nowhere x y_predict <x.txt >out.txt 2>err.txt; then exit 1; fi
[ ! -s out.txt ] && grep -q "nowhere" err.txt || { cat err.txt; exit 1; }
echo ok
