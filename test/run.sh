#!/bin/sh
# run.sh — runs every test and prints the closing line "N passed, N failed, N skipped".
#   unit:    each build/test/test_* (cmocka); its cases are counted one by one
#   cli:     each test/cli/NAME.sh, compared with NAME.out (golden; `UPDATE=1` rewrites)
#   scripts: each test/scripts/*.sh or *.py; exit 0 passes, 77 skips, other fails
#   gpu:     each test/gpu/*.sh, likewise (they skip where no GPU is)
# PADDLE_RUN_GPU_REQUIRED=1 (GPU CI): a skip of a GPU script or a GPU unit
# test case counts as a failure, so a GPU run cannot pass by skipping.
# Usage: sh test/run.sh BUILD_DIR [FILTER]
set -u
BUILD=${1:-build}
FILTER=${2:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$ROOT" && cd "$BUILD" && pwd)
export PR="$BUILD/paddle-run" BUILD ROOT
export PYTHON=${PYTHON:-/usr/bin/python3}
# sanitizer builds on a machine with a GPU: the CUDA driver maps memory where
# ASan keeps its shadow gap, and keeps some allocations until exit
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}protect_shadow_gap=0"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$ROOT/test/lsan.supp"
passed=0 failed=0 skipped=0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# the decoded-data cache (lib/base/fileutil.h) of the runs here: in the temp dir, not the user's home
export PADDLE_RUN_CACHE="${PADDLE_RUN_CACHE:-$TMP/cache}"
failures=""

note_fail() { failed=$((failed + 1)); failures="$failures
  $1"; }

matches() { [ -z "$FILTER" ] || case "$1" in *"$FILTER"*) return 0 ;; *) return 1 ;; esac; }

# ---- unit tests (cmocka) ----
for t in "$BUILD"/test/test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  matches "$name" || continue
  out="$TMP/$name.log"
  "$t" >"$out" 2>&1
  rc=$?
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
  s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
  p=${p:-0} f=${f:-0} s=${s:-0}
  passed=$((passed + p)); skipped=$((skipped + s))
  if [ "$s" -ne 0 ] && [ "${PADDLE_RUN_GPU_REQUIRED:-0}" = 1 ] && case "$name" in *gpu*) true ;; *) false ;; esac; then
    skipped=$((skipped - s)); f=$((f + s)); [ "$rc" -ne 0 ] || rc=1
    echo "---- PADDLE_RUN_GPU_REQUIRED=1: $name skipped $s case(s)"
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # crashed before its summary
  if [ "$f" -ne 0 ]; then
    failed=$((failed + f - 1)); note_fail "unit $name"
    echo "---- FAIL unit $name"; grep -E 'FAILED|ERROR|Failure|error|expected|Sanitizer' "$out" | head -n 40
  fi
  echo "unit  $name: $p passed, $f failed, $s skipped"
done

# ---- CLI golden tests ----
for c in "$ROOT"/test/cli/*.sh; do
  [ -f "$c" ] || continue
  name=$(basename "$c" .sh)
  matches "$name" || continue
  want="${c%.sh}.out"
  work="$TMP/cli-$name"; mkdir -p "$work"
  got=$(cd "$work" && sh "$c" 2>&1; echo "exit: $?")
  got=$(printf '%s\n' "$got" | sed "s#$ROOT#ROOT#g; s#$work#WORK#g")
  if [ "${UPDATE:-0}" = 1 ]; then printf '%s\n' "$got" >"$want"; fi
  if [ -f "$want" ] && [ "$got" = "$(cat "$want")" ]; then
    passed=$((passed + 1))
  else
    note_fail "cli $name"
    echo "---- FAIL cli $name (expected < got >)"
    printf '%s\n' "$got" >"$TMP/got"
    diff "$want" "$TMP/got" | head -n 40
  fi
done

# ---- script and GPU tests ----
for s in "$ROOT"/test/scripts/*.sh "$ROOT"/test/scripts/*.py "$ROOT"/test/gpu/*.sh; do
  [ -f "$s" ] || continue
  name=$(basename "$s")
  matches "$name" || continue
  out="$TMP/script-$name.log"
  work="$TMP/s-$name"; mkdir -p "$work"
  case "$s" in
  *.py) (cd "$work" && "$PYTHON" "$s") >"$out" 2>&1 ;;
  *) (cd "$work" && sh "$s") >"$out" 2>&1 ;;
  esac
  rc=$?
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1)); echo "script $name: passed"
  elif [ $rc -eq 77 ] && [ "${PADDLE_RUN_GPU_REQUIRED:-0}" = 1 ] && case "$s" in */test/gpu/*) true ;; *) false ;; esac; then
    note_fail "script $name"
    echo "---- FAIL script $name: skipped under PADDLE_RUN_GPU_REQUIRED=1: $(tail -n 1 "$out")"
  elif [ $rc -eq 77 ]; then
    skipped=$((skipped + 1)); echo "script $name: $(tail -n 1 "$out")"
  else
    note_fail "script $name"
    echo "---- FAIL script $name (exit $rc)"; tail -n 30 "$out"
  fi
done

if [ "$failed" -ne 0 ]; then echo "failures:$failures"; fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
