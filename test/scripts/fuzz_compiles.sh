# fuzz_compiles.sh — every libFuzzer target in test/fuzz/ still compiles
# (clang -fsyntax-only, -Werror): the targets are built only by `make fuzz`,
# so a changed library signature would otherwise break them unseen (a
# changed pd_cli_int once did). Skips without clang. Env: ROOT, BUILD.
command -v clang >/dev/null 2>&1 || { echo "skipped: clang not installed"; exit 77; }
rc=0
for f in "$ROOT"/test/fuzz/fuzz_*.c; do
  clang -I"$ROOT/lib" -I"$ROOT/ops" -I"$ROOT/cmd" -I"$BUILD/gen" -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
    -std=c11 -Wall -Wextra -Werror -fsyntax-only "$f" || { echo "FAIL: $(basename "$f") does not compile"; rc=1; }
done
[ $rc -eq 0 ] && echo "ok: $(ls "$ROOT"/test/fuzz/fuzz_*.c | wc -l) fuzz targets compile"
exit $rc
