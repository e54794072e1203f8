# no_x86.sh — the tree builds without its x86-only code (AVX-512 kernels,
# __builtin_cpu_*, the pause instruction), as it must on another CPU:
# `-DPD_NO_X86` (lib/base/arch.h) takes every such path out. Builds the CPU
# binary so (in BUILD-nox86, -O0 to be quick: ~2 minutes the first time,
# then only what changed), checks that no object holds a 256- or 512-bit
# vector instruction, `pause` or a CPU-model query, and that it trains
# netdescs/fit_a_line.pbtxt to the loss the normal build reaches.
# Env: PR, BUILD, ROOT. Writes in cwd and BUILD-nox86.
set -u
fail() { echo "FAIL: $*"; exit 1; }
case "$(uname -m)" in x86_64 | i?86) ;; *)
  echo "skipped: not an x86 host (the normal build is the proof)"
  exit 77
  ;;
esac
command -v objdump >/dev/null || { echo "skipped: objdump not installed"; exit 77; }
NB="$BUILD-nox86"
# a make started by `make test` passes its jobserver down: not to this one
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$ROOT" -j2 CUDA=0 OPT=-O0 BUILD="$NB" EXTRA_CFLAGS=-DPD_NO_X86 all \
  >make.log 2>&1 || { tail -n 30 make.log; fail "the build with -DPD_NO_X86"; }

# x86-only code leaves wide vector registers, pause or the CPU-model
# queries of __builtin_cpu_supports in the objects; the generic x86-64
# target alone never does.
x86_only='%[yz]mm[0-9]|\bpause\b|__cpu_model|__cpu_indicator_init|__cpu_features'
objdump -dr "$NB/libpaddle.a" >nox86.dis 2>/dev/null || fail "objdump of $NB/libpaddle.a"
if grep -Eq "$x86_only" nox86.dis; then
  grep -E "$x86_only|^[0-9a-f]+ <" nox86.dis | grep -B1 -E "$x86_only" | head -n 20
  fail "x86-only code left in the -DPD_NO_X86 build"
fi
# the check sees such code where it is: the normal build has it
objdump -dr "$BUILD/libpaddle.a" >x86.dis 2>/dev/null || fail "objdump of $BUILD/libpaddle.a"
grep -Eq '%zmm[0-9]' x86.dis || fail "the normal build has no AVX-512 code: the check above proves nothing"
grep -Eq '__cpu_model' x86.dis || fail "the normal build has no CPU-model query: the check above proves nothing"
echo "ok: no 256/512-bit vector code, pause or CPU-model query in the -DPD_NO_X86 build"

# it runs: a tiny training, the loss as the normal build's (the products
# are BLIS's either way; conv and gemv kernels are not used by this net)
"$NB/paddle-run" --version >version.out 2>&1 || { cat version.out; fail "--version"; }
grep -q "^blas: BLIS .*(BLIS's own choice)$" version.out || { cat version.out; fail "--version: BLIS's own choice expected"; }
loss() { sed -n 's/^finished: .* eval_avg_loss \([0-9.e+-]*\)$/\1/p' "$1"; }
"$NB/paddle-run" train "$ROOT/netdescs/fit_a_line.pbtxt" >nox86.out 2>&1 || { tail -n 5 nox86.out; fail "training"; }
"$PR" train "$ROOT/netdescs/fit_a_line.pbtxt" >x86.out 2>&1 || { tail -n 5 x86.out; fail "training (normal build)"; }
a=$(loss nox86.out) b=$(loss x86.out)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "final eval_avg_loss: $a without x86 code, $b with"
echo "ok: fit_a_line trains to eval_avg_loss $a, as the normal build"
