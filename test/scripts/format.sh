# format.sh — every C file follows the committed .clang-format (STYLE.md);
# `make format` fixes what this reports.
cd "$ROOT" || exit 1
command -v clang-format >/dev/null || { echo "skipped: clang-format not installed"; exit 77; }
bad=0
for f in lib/*/*.[ch] api/*.c include/*.h docs/examples/*.c cmd/*.[ch] ops/*.[ch] test/unit/*.[ch] test/tools/*.c test/fuzz/*.c netdescs/*.c bench/*.c; do
  [ -f "$f" ] || continue
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (run \`make format\`)"; bad=1
  fi
done
exit $bad
