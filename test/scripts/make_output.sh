# make_output.sh — `make` says one short line a step (`  CC     lib/base/error.c`),
# `make V=1` prints the commands in full. Builds one object (and the
# generated headers it waits for) in a build directory here, twice.
# Env: ROOT. Writes only in cwd.
set -u
fail() { echo "FAIL: $*"; exit 1; }
B="$PWD/qb"
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -C "$ROOT" CUDA=0 BUILD="$B" "$@" "$B/obj/lib/base/error.o" 2>&1; }
out=$(mk) || fail "make: $out"
want="  CC     lib/base/error.c"
printf '%s\n' "$out" | grep -v '^  PROTOC ' >quiet.out
[ "$(cat quiet.out)" = "$want" ] || fail "make printed:
$out
want (besides PROTOC lines): $want"
printf '%s\n' "$out" | grep -q '^  PROTOC proto/paddle.proto$' || fail "no PROTOC line for proto/paddle.proto:
$out"
rm -f "$B/obj/lib/base/error.o"
out=$(mk V=1) || fail "make V=1: $out"
case "$out" in
*" -c lib/base/error.c -o $B/obj/lib/base/error.o"*) ;;
*) fail "make V=1 printed no full command:
$out" ;;
esac
[ "$(printf '%s\n' "$out" | grep -c '^  CC ')" -eq 0 ] || fail "make V=1 printed short lines too:
$out"
echo "ok: make prints \"$want\"; make V=1 the command"
